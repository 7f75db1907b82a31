"""Training step time of a layout: `calc.step("llama2-7b", gpu="a100", gpus=8, micro_batch=4)`.

Step time and its breakdown, tokens/s and TFLOP/s per GPU, MFU (calc's exact model FLOPs) and
HFU (recomputation added), GPU-hours and days for a token budget, and whether the layout fits in
memory: the numbers of calc.plan.step, labelled.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from calc.counting import TRAIN_PER_FORWARD, goodput_sentence
from calc.document import Document
from calc.errors import CalcError
from calc.plan.cost import run_time, training_tokens
from calc.plan.finetune import FineTuneBlock, finetune_defaults
from calc.plan.offload import StepOffload
from calc.plan.options import ConfigEcho, RunConfig, run_config, with_file
from calc.plan.step import Prediction, finetune_parts, priced_step
from calc.plan.system import derived
from calc.presets import Preset, resolve
from calc.spec import ModelSpec
from calc.spec.costing import Costing
from calc.spec.layout import Layout
from calc.timing.constants import TimingConstants, load_constants
from calc.timing.operators import ACTIVATION_BYTES
from calc.timing.schedule import DEFAULT_FP8_RECIPE, StepTime, tp_gather_bytes

# The options a step is priced with (calc.plan.options): its layout, how its model states are
# kept (they change `fits`, not the time), where they are offloaded, the fine-tuning
# (LoRA/QLoRA on a frozen base) and what a token budget costs.
SECTIONS = ("layout", "states", "offload", "finetune", "costing")


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
                                          "runs (calc.calibration.fit); the others are priors")
    micro_batches: int = Field(description="m = global_batch / (dp × micro_batch)")
    tokens_per_step: int
    step_time_s: float
    breakdown: dict[str, float] = Field(description="seconds by part; sums to step_time_s")
    micro_batch_time_s: float = Field(description="one micro-batch through the slowest stage")
    bubble_fraction: float = Field(description="bubble / ideal time m·t_mb: (p − 1)/(v·m) for "
                                               "1F1B")
    tokens_per_s_per_gpu: float
    model_flops_per_step: float = Field(description="calc's exact training FLOPs of a step")
    hardware_flops_per_step: float = Field(description="model FLOPs + recomputation")
    tflops_per_gpu: float = Field(description="model TFLOP/s per GPU")
    mfu: float = Field(description="model FLOPs / (step time × GPUs × peak)")
    hfu: float = Field(description="hardware FLOPs / (step time × GPUs × peak)")
    links: dict[str, str] = Field(description="parallel group → the link it crosses")
    fits: bool = Field(description="the most loaded GPU's memory fits, and so do the "
                                   "offloaded states in the node's host memory")
    memory_per_gpu_bytes: float = Field(description="calc.memory's total, most loaded GPU: "
                                                    "allocated + margin")
    memory_margin_bytes: float = Field(description="of which the margin kept free (CUDA "
                                                   "context, NCCL, fragmentation)")
    gpu_memory_bytes: int
    recipe: str = Field(description="the model states' precision recipe (the framework's own "
                                    "unless given)")
    offload: StepOffload | None = Field(None, description="ZeRO-Offload/Infinity: the host "
                                                          "resources that priced it")
    config: ConfigEcho | None = Field(None, description="the trainer config read (--from)")
    finetune: FineTuneBlock | None = Field(None, description="LoRA/QLoRA: what trains")
    finetune_parts: dict[str, float] = Field(
        default_factory=dict,
        description="LoRA/QLoRA seconds per step inside compute and recompute: the adapters' "
                    "products (forward and backward) and QLoRA's dequantisation")
    dataset_tokens: float | None = Field(None, description="tokens of one epoch")
    epochs: float | None = Field(None, description="passes over the dataset")
    tokens: float | None = Field(None, description="training tokens: --tokens, or "
                                                   "dataset_tokens × epochs")
    goodput: float = Field(1.0, description="share of wall-clock time that trains (given)")
    gpu_hours_ideal: float | None = Field(None, description="tokens / (tokens/s per GPU) / "
                                                            "3600: every hour a step")
    gpu_hours: float | None = Field(None, description="gpu_hours_ideal / goodput")
    days: float | None = Field(None, description="gpu_hours / (gpus × 24)")
    price: float | None = Field(None, description="price per GPU-hour, when given")
    cost: float | None = Field(None, description="gpu_hours × price")
    energy_kwh: float | None = Field(None, description="GPU TDP × GPU-hours × PUE, when asked")
    co2e_kg: float | None = Field(None, description="energy × grid intensity, when given")
    pue: float | None = Field(None, description="the PUE the energy assumes")
    mfu_bf16_peak: float | None = Field(
        None, description="with fp8 products: model FLOPs / (step time × GPUs × the dense "
                          "bf16 peak), the figure papers report beside the fp8-peak MFU")
    notes: list[str] = Field(description="valid but unusual choices of the layout")
    conventions: list[str]


def step(model: str | ModelSpec | Preset | None = None, *, gpu: str,
         system: str | None = None, gpus: int | None = None, tokens: float | None = None,
         from_file: str | None = None, run: RunConfig | None = None,
         dataset_tokens: float | None = None, epochs: float | None = None,
         **options: Any) -> StepReport:
    """Predicted training step of `model` on `gpus` GPUs laid out by the run's options (a
    calc.plan.options.RunConfig `run`, or its options as keywords over it): the layout's (tp,
    pp, dp, cp, ep, vpp, micro_batch, global_batch, seq_len, recompute, zero,
    sequence_parallel, flash_attention, dropout, dtype, framework), the model states' (recipe,
    optimizer, precision: they change whether it fits) and the offload's.

    `offload_optimizer` / `offload_params` ('cpu' or 'nvme') move the optimizer step and the
    ZeRO-3 partitions to the host (calc.timing.offload), checked against the node's host memory
    (`host_memory_gib`, default the system's) shared by `gpus_per_node` GPUs (default the run's
    GPUs on one node); NVMe at the system's rates or `nvme_read_gb_s` / `nvme_write_gb_s`.
    `from_file` reads a trainer config (calc.trainers: DeepSpeed, Megatron-LM, torchtitan,
    axolotl, transformers) for the model (when `model` is None) and the layout; the options
    given here override it, and the report echoes what was read, ignored and overridden.
    dp defaults to gpus / (tp·pp·cp). `finetune` 'lora' or 'qlora' (`lora_rank`,
    `lora_targets`) prices a frozen base with adapters (calc.timing.finetune); GPU-hours for
    `tokens`, or `dataset_tokens` × `epochs`. A GPU without a reference system runs in a box
    derived from its datasheet links (`gpus_per_node` cards, default the run's; calc.plan.system).
    Bad input raises CalcError naming the field and value.
    """
    tokens = training_tokens(tokens, dataset_tokens, epochs)
    given = run_config(run, **options)
    unused = sorted(set(given.given()) - set(given.given(*SECTIONS)))
    if unused:
        raise CalcError(f"step: {', '.join(unused)} are not priced by the step model (it "
                        f"takes the layout, model-state, offload, fine-tuning and costing options)")
    echo, file_notes = None, []
    if from_file is not None:
        read = with_file(from_file, model, given, gpus, step=True)
        model, given, echo, file_notes = read.model, read.run, read.echo, read.notes
        gpus = gpus or read.gpus
    if model is None:
        raise CalcError(f"model: {from_file} names no model calc knows; give a preset name, "
                        f"spec file or config.json as MODEL")
    preset = resolve(model)
    given, defaults = finetune_defaults(given, preset.spec)
    numbers, auto_note = priced_step(preset.spec, given, gpus, gpu, system, from_file)
    prediction, lay, time = numbers.prediction, numbers.layout, numbers.time
    device, platform = prediction.gpu, prediction.system
    budget = (run_time(tokens, numbers.tokens_per_s_per_gpu, lay.gpus, device,
                       Costing(**given.given("costing"))) if tokens else None)
    money = budget.cost if budget else None
    bf16 = (numbers.model_flops / (time.step * lay.gpus * device.peak_flops("bf16"))
            if lay.dtype == "fp8" else None)
    return StepReport(
        model=preset.name, title=preset.title, source=preset.source, gpu=device.name,
        gpu_title=device.title, system=platform.name, system_title=platform.title,
        gpus=lay.gpus, layout=lay, peak_flops=prediction.peak_flops,
        generation=prediction.generation, fitted=prediction.fitted,
        micro_batches=lay.micro_batches, tokens_per_step=numbers.tokens_per_step,
        step_time_s=time.step, breakdown=time.breakdown, micro_batch_time_s=time.micro_batch,
        bubble_fraction=numbers.bubble_fraction,
        tokens_per_s_per_gpu=numbers.tokens_per_s_per_gpu,
        model_flops_per_step=numbers.model_flops,
        hardware_flops_per_step=numbers.hardware_flops,
        tflops_per_gpu=numbers.tflops_per_gpu, mfu=numbers.mfu, hfu=numbers.hfu,
        links=numbers.links, fits=numbers.fits,
        memory_per_gpu_bytes=numbers.memory.total_bytes,
        memory_margin_bytes=numbers.memory.margin_bytes,
        gpu_memory_bytes=int(numbers.memory.gpu_bytes or 0),
        recipe=numbers.memory.options.recipe_name, offload=numbers.offload,
        config=echo, finetune=numbers.memory.finetune if numbers.finetuned else None,
        finetune_parts=finetune_parts(time, lay.micro_batches),
        dataset_tokens=dataset_tokens, epochs=epochs if dataset_tokens else None,
        tokens=tokens, goodput=budget.goodput if budget else 1.0,
        gpu_hours_ideal=budget.gpu_hours_ideal if budget else None,
        gpu_hours=budget.gpu_hours if budget else None, mfu_bf16_peak=bf16,
        days=budget.days if budget else None,
        price=money.price if money else None, cost=money.cost if money else None,
        energy_kwh=money.energy_kwh if money else None,
        co2e_kg=money.co2e_kg if money else None, pue=money.pue if money else None,
        notes=[*file_notes, *defaults, *auto_note, *prediction.notes],
        conventions=[*conventions(lay, prediction, time),
                     *(step_finetune_sentences(numbers.memory.finetune, prediction)
                       if numbers.finetuned else []),
                     *([goodput_sentence(budget.goodput)] if tokens else []),
                     *([offload_sentence(numbers.offload)] if numbers.offload else [])],
    )


def offload_sentence(block: StepOffload) -> str:
    """What the offload parts of the step model, printed under the step tables."""
    nvme = (f"; NVMe at {block.nvme_read_gb_s:g} GB/s read, {block.nvme_write_gb_s:g} GB/s "
            f"write per node ({block.nvme_source})" if block.nvme_read_gb_s else "")
    return (
        f"Offload (optimizer → {block.optimizer}, parameters → {block.params}; ZeRO-Offload, "
        f"Ren et al. 2021; ZeRO-Infinity, Rajbhandari et al. 2021): gradients down and "
        f"weights up over each GPU's PCIe link ({block.pcie_gb_s:g} GB/s per direction), the "
        f"gradients hidden behind the last backward, the weights behind the CPU step; "
        f"CPU-Adam at {block.cpu_adam_params_per_s:.3g} parameters/s per node, shared by the "
        f"node's {block.gpus_per_node} GPU(s), not overlapped (no delayed parameter update): "
        f"Ren et al.'s measurement on a DGX-2's CPUs (presets/timing.toml [offload]){nvme}; "
        f"offloaded parameters fetched for every forward and backward, prefetched behind "
        f"compute. Terms and what is left out: docs/step-time.md.")


def step_finetune_sentences(block: FineTuneBlock, prediction: Prediction) -> list[str]:
    """What the fine-tune's step model assumes, printed under the step tables."""
    quant = (f" QLoRA: each {block.frozen_dtype} weight ({block.bytes_per_frozen_weight:.4g} B "
             f"with its constants) dequantised to 16 bits before every forward, backward and "
             f"recomputed forward (bitsandbytes Linear4bit / MatMul4Bit), read and written at "
             f"the HBM rate." if block.method == "qlora" else "")
    system = prediction.system
    box = f" System: {system.title}: {system.notes}." if derived(system) else ""
    return [
        f"Fine-tuning ({block.method}, r = {block.rank}, {block.trainable:,} trainable "
        f"parameters): the frozen products' backward computes input gradients only "
        f"(1 × forward, the LM head's too); each adapter runs as PEFT's eager LoRA layer "
        f"(x·A, ·B, × scaling, + result: the input read again, the output width written and "
        f"read 6 times), backward 2 × forward; gradients reduced and the optimizer step over "
        f"the adapters only.{quant} Not modelled: torch.compile or fused LoRA kernels "
        f"(Unsloth), padding of unpacked batches (calc.timing.finetune).{box}"]


def stack_terms(layout: Layout, prediction: Prediction,
                constants: TimingConstants) -> list[str]:
    """Sentences for the constants of this GPU and stack that price it apart from its
    generation's: a power limit, an attention kernel priced from another, fp8 all-gathers."""
    framework = constants.framework(layout.framework)
    found = []
    limit = constants.power_limits.get(prediction.gpu.name)
    if limit:
        found.append(f"Power limit: {prediction.gpu.name}'s products and attention run at "
                     f"{limit.tensor_rate:g} of the full-power part's rate (presets/timing.toml "
                     f"power_limits).")
    kernel = constants.attention_kernels.get(framework.attention_kernel)
    if kernel and layout.flash_attention:
        found.append(f"Attention kernel: {layout.framework} runs {framework.attention_kernel}, "
                     f"priced at {kernel.relative_speed:g} × {kernel.measured_as}'s speed "
                     f"(presets/timing.toml attention_kernels).")
    if tp_gather_bytes(layout, framework) < ACTIVATION_BYTES and layout.tp > 1 \
            and layout.sequence_parallel:
        found.append(f"Tensor parallelism: {layout.framework} casts to fp8 before the "
                     f"sequence-parallel all-gathers ({layout.fp8_recipe or DEFAULT_FP8_RECIPE}"
                     f" recipe); the reduce-scatters stay 16-bit.")
    return found


def conventions(layout: Layout, prediction: Prediction, time: StepTime) -> list[str]:
    """The sentences printed under the step tables."""
    constants = load_constants()
    calibration = (f"{', '.join(prediction.fitted)} fitted ({constants.fit.method}; judged "
                   f"leaving each publisher out in turn: docs/throughput.md), the rest priors"
                   if prediction.fitted else
                   "priors only, NOT fitted on any published run of this generation")
    recompute = {"none": "no recomputation",
                 "selective": "selective recomputation adds the attention core's forward",
                 "full": "full recomputation adds every layer's forward"}[layout.recompute]
    if layout.recompute_norm_up and layout.recompute != "full":
        recompute += ("; the norms and MLA's up-projections again in the backward (DeepSeek-V3 "
                      "report §3.2.3; the norms at HBM speed, no FLOPs)")
    work = time.compute
    scans = work.scan + work.scan_backward
    flops = (f"{TRAIN_PER_FORWARD} × forward" if work.weight_gradients else
             "frozen products 2 × forward, attention and adapters 3 ×")
    return [
        *([f"Scans and convolutions of the non-attention mixers: {scans:.4g} s of each "
           f"micro-batch's {work.forward + work.backward:.4g} s of compute, each the slower of "
           f"its FLOPs (calc's convention; fp32 CUDA-core peak, or flash_fraction of the "
           f"16-bit peak for the chunked SSD, gated-delta, lightning and mLSTM kernels; RWKV's "
           f"WKV and "
           f"Griffin's RG-LRU at the fp32 peak) and the bytes "
           f"its fused kernel reads and writes; backward 3 × forward for the scans (states "
           f"recomputed) (calc/timing/mixers.py)."] if scans else []),
        f"MFU = calc's exact training FLOPs of the step ({flops}: causal "
        f"attention, top-k experts, the LM head) / (step time × GPUs × dense {layout.dtype} "
        f"peak). HFU adds the recomputed FLOPs ({recompute}); flash attention's own backward "
        f"recomputation is counted in neither.",
        "Step time = m × t_mb + the schedule's bubble ((p − 1)/v × t_mb for 1F1B, Narayanan et "
        "al. 2021; Zero Bubble's and DualPipe's from the split backward) + exposed data-"
        "parallel communication + optimizer step; t_mb = one micro-batch's forward and "
        "backward through the slowest stage with its exposed TP, CP, EP, pipeline and ZeRO-3 "
        "communication. Terms, sources and what is left out: docs/step-time.md.",
        f"Efficiency constants of the {prediction.generation} generation: {calibration}; no "
        f"per-run factor (presets/timing.toml).",
        *stack_terms(layout, prediction, constants),
        "Not modelled: stragglers, failures and restarts, data loading, evaluation, "
        "checkpointing, kernel launch gaps, network congestion between jobs, load imbalance "
        "of MoE routers. A published run's GPU-hours include those; this step time does not.",
    ]
