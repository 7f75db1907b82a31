"""Training step time of a layout: `calc.step("llama2-7b", gpu="a100", gpus=8, micro_batch=4)`.

Step time and its breakdown (calc.timing), tokens/s and TFLOP/s per GPU, MFU (calc's exact model
FLOPs) and HFU (recomputation added), GPU-hours and days for a token budget, and whether the
layout fits in memory (calc.memory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from calc.counting import TRAIN_PER_FORWARD
from calc.document import Document
from calc.errors import CalcError
from calc.evaluate import count_flops
from calc.presets import Preset, get_gpu, get_system, resolve, system_for_gpu
from calc.reports._memory_options import ConfigEcho
from calc.reports._step_offload import StepOffload, offload_sentence, offloaded_step
from calc.reports._step_options import LAYOUT, OFFLOAD, step_config
from calc.reports.memory import memory
from calc.spec import GPU, ModelSpec, System
from calc.spec.layout import Layout, check, make_layout
from calc.timing.communication import links
from calc.timing.constants import load_constants
from calc.timing.fit import fitted_constants
from calc.timing.network import network_for
from calc.timing.offload import PART_LINK
from calc.timing.operators import model_terms
from calc.timing.pricing import price
from calc.timing.schedule import StepTime, updated_params

SECONDS_PER_HOUR = 3600
MEMORY_DTYPE = {"fp8": "bf16"}  # fp8 recipes keep 16-bit activations and weights (memory)


class StepReport(Document):
    model: str
    title: str
    source: str
    gpu: str
    gpu_title: str
    system: str
    system_title: str
    gpus: int
    layout: Layout = Field(description="the layout, seq_len resolved")
    peak_flops: float = Field(description="dense peak FLOP/s of one GPU at the layout's dtype")
    generation: str = Field(description="GPU generation whose constants price the products")
    fitted: list[str] = Field(description="that generation's constants fitted on published "
                                          "runs (calc.timing.fit); the others are priors")
    micro_batches: int = Field(description="m = global_batch / (dp × micro_batch)")
    tokens_per_step: int
    step_time_s: float
    breakdown: dict[str, float] = Field(description="seconds by part; sums to step_time_s")
    micro_batch_time_s: float = Field(description="one micro-batch through the slowest stage")
    bubble_fraction: float = Field(description="(p − 1)/(v·m): bubble / ideal time")
    tokens_per_s_per_gpu: float
    model_flops_per_step: float = Field(description="calc's exact training FLOPs of a step")
    hardware_flops_per_step: float = Field(description="model FLOPs + recomputation")
    tflops_per_gpu: float = Field(description="model TFLOP/s per GPU")
    mfu: float = Field(description="model FLOPs / (step time × GPUs × peak)")
    hfu: float = Field(description="hardware FLOPs / (step time × GPUs × peak)")
    links: dict[str, str] = Field(description="parallel group → the link it crosses")
    fits: bool = Field(description="the most loaded GPU's memory fits, and so do the "
                                   "offloaded states in the node's host memory")
    memory_per_gpu_bytes: float = Field(description="calc.memory's total, most loaded GPU")
    gpu_memory_bytes: int
    offload: StepOffload | None = Field(None, description="ZeRO-Offload/Infinity: the host "
                                                          "resources that priced it")
    config: ConfigEcho | None = Field(None, description="the trainer config read (--from)")
    tokens: float | None = None
    gpu_hours: float | None = Field(None, description="tokens / (tokens/s per GPU) / 3600")
    days: float | None = Field(None, description="gpu_hours / (gpus × 24)")
    notes: list[str] = Field(description="valid but unusual choices of the layout")
    conventions: list[str]


@dataclass(frozen=True)
class Prediction:
    """One layout of one model priced on one system."""

    layout: Layout  # seq_len resolved
    notes: list[str]
    time: StepTime
    gpu: GPU
    system: System
    generation: str
    fitted: list[str]  # the generation's constants the fit chose
    links: dict[str, str]  # parallel group -> the link it crosses

    @property
    def peak_flops(self) -> float:
        return self.gpu.peak_flops(self.layout.dtype)


def predict(spec: ModelSpec, layout: Layout, gpu: str, system: str | None = None) -> Prediction:
    """Step time of `layout` (checked against `spec`) on `gpu` in `system` (default: the GPU's
    reference system)."""
    layout, notes = check(spec, layout)
    constants = load_constants()
    device = get_gpu(gpu)
    platform = get_system(system) if system else system_for_gpu(device.name)
    generation, _ = constants.generation(device.name)
    time = price(spec, layout, device, platform, constants)
    return Prediction(layout=layout, notes=notes, time=time, gpu=device, system=platform,
                      generation=generation, fitted=fitted_constants(generation),
                      links=links(layout, network_for(platform, constants.network)))


def step(model: str | ModelSpec | Preset | None = None, *, gpu: str,
         system: str | None = None, gpus: int | None = None, tokens: float | None = None,
         from_file: str | None = None, **options: Any) -> StepReport:
    """Predicted training step of `model` on `gpus` GPUs laid out by `options`: the fields of
    calc.spec.layout.Layout (tp, pp, dp, cp, ep, vpp, micro_batch, global_batch, seq_len,
    recompute, zero, sequence_parallel, flash_attention, dropout, dtype, framework) and offload.

    `offload_optimizer` / `offload_params` ('cpu' or 'nvme') move the optimizer step and the
    ZeRO-3 partitions to the host (calc.timing.offload), checked against the node's host memory
    (`host_memory_gib`, default the system's) shared by `gpus_per_node` GPUs (default the run's
    GPUs on one node); NVMe at the system's rates or `nvme_read_gb_s` / `nvme_write_gb_s`.
    `from_file` reads a trainer config (calc.trainers: DeepSpeed, Megatron-LM, torchtitan,
    axolotl, transformers) for the model (when `model` is None) and the layout; the options
    given here override it, and the report echoes what was read, ignored and overridden.
    dp defaults to gpus / (tp·pp·cp). Bad input raises CalcError naming the field and value.
    """
    unknown = sorted(set(options) - set(LAYOUT) - set(OFFLOAD))
    if unknown:
        raise CalcError(f"step: unknown option(s) {', '.join(unknown)} (layout: "
                        f"{', '.join(LAYOUT)}; offload: {', '.join(OFFLOAD)})")
    extra: dict[str, Any] = {}
    echo, file_notes = None, []
    if from_file is not None:
        config = step_config(from_file, model, gpus, options)
        model, echo, file_notes, extra = config.model, config.echo, config.notes, config.memory
        options = {**config.layout, **config.offload}
    if model is None:
        raise CalcError(f"model: {from_file} names no model calc knows; give a preset name, "
                        f"spec file or config.json as MODEL")
    offload = {k: options.pop(k) for k in OFFLOAD if k in options}
    preset = resolve(model)
    spec = preset.spec
    try:
        chosen = make_layout(gpus, **options)
    except CalcError as error:
        if from_file is None:
            raise
        raise CalcError(f"--from {from_file}: {error} (the file's layout with the flags "
                        f"given)") from None
    prediction = predict(spec, chosen, gpu, system)
    lay, time = prediction.layout, prediction.time
    device, platform = prediction.gpu, prediction.system
    assert lay.seq_len is not None
    offloaded: dict[str, Any] = {}
    if {offload.get("offload_optimizer"), offload.get("offload_params")} - {None, "none"}:
        offloaded = {"offload_optimizer": offload.get("offload_optimizer"),
                     "offload_params": offload.get("offload_params"),
                     "system": platform.name, "host_memory_gib": offload.get("host_memory_gib"),
                     "gpus_per_node": offload.get("gpus_per_node")
                     or min(lay.gpus, platform.gpus_per_node)}
    mem = memory(preset, gpu=device.name, seq_len=lay.seq_len, micro_batch=lay.micro_batch,
                 dtype=MEMORY_DTYPE.get(lay.dtype, lay.dtype), zero=lay.zero, dp=lay.dp,
                 tp=lay.tp, pp=lay.pp, cp=lay.cp, ep=lay.ep, vpp=lay.vpp,
                 split_embedding_loss=lay.split_embedding_loss, recompute=lay.recompute,
                 sequence_parallel=lay.sequence_parallel,
                 flash_attention=lay.flash_attention, dropout=lay.dropout,
                 **offloaded, **extra).memory
    block, links_ = None, prediction.links
    if mem.offload is not None:
        constants = load_constants()
        time, block = offloaded_step(
            time, lay, mem.offload, device, platform, constants.offload,
            updated_params(model_terms(spec, lay.seq_len), lay),
            constants.framework(lay.framework).overlap_grad_reduce,
            offload.get("nvme_read_gb_s"), offload.get("nvme_write_gb_s"))
        links_ = {**links_, **PART_LINK}
    tokens_per_step = lay.global_batch * lay.seq_len
    forward = count_flops(spec, lay.seq_len).forward
    model_flops = TRAIN_PER_FORWARD * forward * tokens_per_step
    hardware_flops = model_flops + time.compute.recompute_flops * tokens_per_step
    capacity = time.step * lay.gpus * prediction.peak_flops
    per_gpu = tokens_per_step / time.step / lay.gpus
    gpu_hours = tokens / per_gpu / SECONDS_PER_HOUR if tokens else None
    offload_note = [offload_sentence(block)] if block else []
    return StepReport(
        model=preset.name, title=preset.title, source=preset.source, gpu=device.name,
        gpu_title=device.title, system=platform.name, system_title=platform.title,
        gpus=lay.gpus, layout=lay, peak_flops=prediction.peak_flops,
        generation=prediction.generation, fitted=prediction.fitted,
        micro_batches=lay.micro_batches, tokens_per_step=tokens_per_step,
        step_time_s=time.step, breakdown=time.breakdown, micro_batch_time_s=time.micro_batch,
        bubble_fraction=(lay.pp - 1) / (lay.vpp * lay.micro_batches),
        tokens_per_s_per_gpu=per_gpu, model_flops_per_step=model_flops,
        hardware_flops_per_step=hardware_flops,
        tflops_per_gpu=model_flops / time.step / lay.gpus / 1e12,
        mfu=model_flops / capacity, hfu=hardware_flops / capacity,
        links=links_, fits=bool(mem.fits) and (block is None or block.host_fits),
        memory_per_gpu_bytes=mem.total_bytes, gpu_memory_bytes=int(mem.gpu_bytes or 0),
        offload=block, config=echo,
        tokens=tokens, gpu_hours=gpu_hours,
        days=gpu_hours / lay.gpus / 24 if gpu_hours else None,
        notes=[*file_notes, *prediction.notes],
        conventions=[*conventions(lay, prediction, time), *offload_note],
    )


def conventions(layout: Layout, prediction: Prediction, time: StepTime) -> list[str]:
    """The sentences printed under the step tables."""
    constants = load_constants()
    calibration = (f"{', '.join(prediction.fitted)} fitted on {len(constants.fit.rows)} "
                   f"published runs (docs/throughput.md), the rest priors"
                   if prediction.fitted else
                   "priors only, NOT fitted on any published run of this generation")
    recompute = {"none": "no recomputation",
                 "selective": "selective recomputation adds the attention core's forward",
                 "full": "full recomputation adds every layer's forward"}[layout.recompute]
    work = time.compute
    scans = work.scan + work.scan_backward
    return [
        *([f"Scans and convolutions of the non-attention mixers: {scans:.4g} s of each "
           f"micro-batch's {work.forward + work.backward:.4g} s of compute, each the slower of "
           f"its FLOPs (calc's convention; fp32 CUDA-core peak, or flash_fraction of the "
           f"16-bit peak for the chunked SSD and gated-delta kernels) and the bytes its fused "
           f"kernel reads and writes; backward 3 × forward for the scans (states recomputed) "
           f"(calc/timing/mixers.py)."] if scans else []),
        f"MFU = calc's exact training FLOPs of the step ({TRAIN_PER_FORWARD} × forward: causal "
        f"attention, top-k experts, the LM head) / (step time × GPUs × dense {layout.dtype} "
        f"peak). HFU adds the recomputed FLOPs ({recompute}); flash attention's own backward "
        f"recomputation is counted in neither.",
        "Step time = m × t_mb + (p − 1)/v × t_mb (1F1B, Narayanan et al. 2021) + exposed data-"
        "parallel communication + optimizer step; t_mb = one micro-batch's forward and "
        "backward through the slowest stage with its exposed TP, CP, EP, pipeline and ZeRO-3 "
        "communication. Terms, sources and what is left out: docs/step-time.md.",
        f"Efficiency constants of the {prediction.generation} generation: {calibration}; no "
        f"per-run factor (presets/timing.toml).",
        "Not modelled: stragglers, failures and restarts, data loading, evaluation, "
        "checkpointing, kernel launch gaps, network congestion between jobs, load imbalance "
        "of MoE routers. A published run's GPU-hours include those; this step time does not.",
    ]
