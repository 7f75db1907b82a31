"""One training step of a layout, as numbers: its time (calc.timing) with the offload parts
added, the memory of its most loaded GPU (calc.plan.memory) and the throughput, FLOP rates and
utilisation they give (calc's exact FLOPs); with recompute 'auto', the least recomputation
that fits."""

from __future__ import annotations

from dataclasses import dataclass

from calc.calibration.fit import fitted_constants
from calc.counting import GIB, TERA, TRAIN_PER_FORWARD
from calc.errors import CalcError
from calc.evaluate import count_adapters, count_flops, finetune_train_flops
from calc.plan.finetune import finetune_of
from calc.plan.memory import MemoryBlock, memory_block, memory_options
from calc.plan.offload import StepOffload, offloaded_step
from calc.plan.options import RunConfig, fp8_layout
from calc.plan.system import catalogued, system_of
from calc.presets import get_gpu
from calc.spec import GPU, ModelSpec, System
from calc.spec.finetune import FineTune
from calc.spec.layout import Layout, check, make_layout
from calc.spec.offload import Offload
from calc.spec.validity import recomputations, refuse
from calc.timing.communication import links
from calc.timing.constants import load_constants
from calc.timing.finetune import finetune_terms
from calc.timing.network import network_for
from calc.timing.offload import PART_LINK
from calc.timing.operators import model_terms
from calc.timing.pricing import price
from calc.timing.schedule import StepTime, updated_params


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


def predict(spec: ModelSpec, layout: Layout, gpu: str, system: str | None = None,
            finetune: FineTune | None = None, gpus_per_node: int | None = None) -> Prediction:
    """Step time of `layout` (checked against `spec` and refused where its framework refuses
    it, calc.spec.validity) on `gpu` in `system` (default: the GPU's reference system, or a
    box of `gpus_per_node` cards derived from its datasheet links, calc.plan.system),
    LoRA/QLoRA on a frozen base when `finetune` says so."""
    constants = load_constants()
    device = get_gpu(gpu)
    platform = system_of(device, system, layout.gpus, gpus_per_node)
    refuse(spec, layout, platform.gpus_per_node)
    layout, notes = check(spec, layout)
    generation, _ = constants.generation(device.name, device.generation)
    ft = finetune_terms(spec, finetune, layout.dtype) if finetune is not None else None
    time = price(spec, layout, device, platform, constants, ft)
    return Prediction(layout=layout, notes=notes, time=time, gpu=device, system=platform,
                      generation=generation, fitted=fitted_constants(generation),
                      links=links(layout, network_for(platform, constants.network)))


def train_flops_per_token(spec: ModelSpec, seq_len: int, finetune: FineTune) -> float:
    """calc's exact training FLOPs per token: 3 × forward, or on a frozen base the frozen
    products' input gradients only (calc.formulas.finetune)."""
    if not finetune.frozen_base:
        return TRAIN_PER_FORWARD * count_flops(spec, seq_len).forward
    adapters = count_adapters(spec, finetune)
    return finetune_train_flops(spec, seq_len, "causal", finetune, adapters.targets)[1]


@dataclass(frozen=True)
class StepNumbers:
    """A predicted step and what follows from it."""

    prediction: Prediction
    time: StepTime  # the prediction's, with the offload parts when the run offloads
    links: dict[str, str]
    memory: MemoryBlock  # the most loaded GPU (no fixes searched)
    offload: StepOffload | None
    tokens_per_step: int
    finetuned: bool  # LoRA/QLoRA on a frozen base
    model_flops: float  # calc's exact training FLOPs of a step
    hardware_flops: float  # model FLOPs + recomputation

    @property
    def layout(self) -> Layout:
        return self.prediction.layout

    @property
    def capacity(self) -> float:
        """FLOPs the GPUs could do in one step at their dense peak."""
        return self.time.step * self.layout.gpus * self.prediction.peak_flops

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_step / self.time.step / self.layout.gpus

    @property
    def tflops_per_gpu(self) -> float:
        return self.model_flops / self.time.step / self.layout.gpus / TERA

    @property
    def mfu(self) -> float:
        return self.model_flops / self.capacity

    @property
    def hfu(self) -> float:
        return self.hardware_flops / self.capacity

    @property
    def bubble_fraction(self) -> float:
        """The schedule's bubble over the ideal time m · t_mb ((p − 1)/(v·m) for 1F1B)."""
        ideal = self.layout.micro_batches * self.time.micro_batch
        return self.time.breakdown["pipeline_bubble"] / ideal if ideal else 0.0

    @property
    def fits(self) -> bool:
        """The most loaded GPU's memory fits, and so do the offloaded states in the node's host
        memory."""
        return bool(self.memory.fits) and (self.offload is None or self.offload.host_fits)


def step_numbers(spec: ModelSpec, layout: Layout, gpu: str, system: str | None,
                 run: RunConfig) -> StepNumbers:
    """The step of `layout` (checked against `spec`) on `gpu` in `system`, its memory with the
    run's model states, fine-tuning and offload."""
    offload = Offload(**run.given("offload"))
    finetune = finetune_of(run)
    prediction = predict(spec, layout, gpu, system, finetune, offload.gpus_per_node)
    lay, time, links_ = prediction.layout, prediction.time, prediction.links
    device, platform = prediction.gpu, prediction.system
    assert lay.seq_len is not None
    if offload.active and offload.gpus_per_node is None:  # the run's GPUs on one node
        offload = offload.model_copy(
            update={"gpus_per_node": min(lay.gpus, platform.gpus_per_node)})
    options = {**lay.model_dump(), **run.given("states")}
    memory = memory_block(spec, memory_options(spec, device.name, options,
                                               catalogued(platform)),
                          device, finetune, offload, catalogued(platform), fixes=False)
    block = None
    if memory.offload is not None:
        constants = load_constants()
        time, block = offloaded_step(
            time, lay, memory.offload, device, platform, constants.offload,
            updated_params(model_terms(spec, lay.seq_len), lay),
            constants.framework(lay.framework).overlap_grad_reduce,
            offload.nvme_read_gb_s, offload.nvme_write_gb_s)
        links_ = {**links_, **PART_LINK}
    tokens = lay.global_batch * lay.seq_len
    model_flops = train_flops_per_token(spec, lay.seq_len, finetune) * tokens
    return StepNumbers(prediction, time, links_, memory, block, tokens, finetune.frozen_base,
                       model_flops,
                       model_flops + time.compute.recompute_flops * tokens)


def finetune_parts(time: StepTime, micro_batches: int) -> dict[str, float]:
    """Seconds per step of the adapters' products and QLoRA's dequantisation (zero parts left
    out)."""
    work = time.compute
    parts = {"adapters": micro_batches * (work.adapters + work.adapters_backward),
             "dequantisation": micro_batches * (work.dequant + work.dequant_backward)}
    return {name: seconds for name, seconds in parts.items() if seconds}


def priced_step(spec: ModelSpec, given: RunConfig, gpus: int | None, gpu: str,
                system: str | None, from_file: str | None) -> tuple[StepNumbers, list[str]]:
    """The step of the run's layout; with recompute 'auto' the least recomputation that fits
    (full when none does), and a note saying which."""
    layout = fp8_layout(given.given("layout"), given.get("precision"))
    auto = layout.get("recompute") == "auto"
    choices = (recomputations(layout.get("framework"), layout.get("activation_offload"))
               if auto else (layout.get("recompute", "none"),))
    tried: list[str] = []
    for recompute in choices:
        try:
            chosen = make_layout(gpus, **{**layout, "recompute": recompute})
        except CalcError as error:
            if from_file is None:
                raise
            raise CalcError(f"--from {from_file}: {error} (the file's layout with the flags "
                            f"given)") from None
        numbers = step_numbers(spec, chosen, gpu, system, given)
        if not auto or numbers.fits or recompute == choices[-1]:
            break
        tried.append(f"{recompute} needs {numbers.memory.total_bytes / GIB:,.1f} GiB")
    if not auto:
        return numbers, []
    verdict = "the least that fits" if numbers.fits else "and even that does not fit"
    return numbers, [f"recompute auto: {recompute}, {verdict}"
                     + (f" ({'; '.join(tried)} of {numbers.memory.gpu_bytes / GIB:,.0f} GiB)"
                        if tried else "") + "."]
