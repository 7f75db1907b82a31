"""Memory of the most loaded GPU, as numbers: model states by precision recipe and ZeRO stage,
activations after Korthikanti et al. 2022, fine-tuning, GEMM precision and offload folded in
(calc.formulas.memory and its neighbours, through calc.evaluate.memory_values), the framework's
transient buffers, the margin a GPU keeps beside the run (`margin`: CUDA context, NCCL,
fragmentation), the verdict against the GPU's memory and, when it does not fit, the smallest
change of each kind that does. The recipe is the framework's own unless one is given
(calc.spec.memory.STACKS), and a layout the framework refuses is refused
(calc.spec.validity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError

from calc import _compiled
from calc.counting import GIB, Bytes, whole
from calc.errors import CalcError, one_line
from calc.evaluate import largest_parameter, memory_values
from calc.plan.finetune import FineTuneBlock, check_quant_kernels, finetune_block, finetune_of
from calc.plan.offload import OffloadBlock, offload_block
from calc.plan.options import RunConfig
from calc.presets import get_gpu, get_system, sequence_length, system_for_gpu
from calc.spec import GPU, ModelSpec, TrainingMemory
from calc.spec.finetune import FineTune
from calc.spec.gemm_precision import check_path
from calc.spec.layout import Layout, check_shared_pipeline, check_splits
from calc.spec.memory import EMA_BYTES, RECIPES, RESERVE, RecipeInfo
from calc.spec.model import Frozen
from calc.spec.offload import Offload
from calc.spec.validity import recomputations, refuse


def gpus_per_node(gpu: str | None, system: str | None = None) -> int | None:
    """GPUs in one node of `system` (default: `gpu`'s reference system); None without either
    (or for a GPU the catalogue gives no system: the node rule is then not checked)."""
    if system is not None:
        return get_system(system).gpus_per_node
    if gpu is None:
        return None
    try:
        return system_for_gpu(gpu).gpus_per_node
    except CalcError:
        return None


def memory_options(spec: ModelSpec, gpu: str | None, given: dict[str, Any],
                   system: str | None = None) -> TrainingMemory:
    """The validated options of the memory model (the layout's and the model states' fields,
    as calc.plan.options names them) with their defaults resolved: the framework's recipe and
    the model's context; CalcError naming the field, or the framework's rule the layout breaks
    (calc.spec.validity, the node rule on `system`'s or `gpu`'s nodes), otherwise."""
    try:
        parsed = TrainingMemory(gpu=gpu, **given)
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    refuse(spec, parsed, gpus_per_node(gpu, system))
    check_splits(spec, parsed.tp, parsed.cp, ffn=False)
    check_shared_pipeline(spec, parsed.pp)
    if parsed.pp > spec.n_layers:
        raise CalcError(f"pp={parsed.pp} exceeds n_layers={spec.n_layers} of {spec.name} "
                        f"(each pipeline stage needs a layer)")
    if parsed.ep > 1:
        experts = spec.moe.n_experts if spec.moe else 0
        if experts % parsed.ep or not experts:
            raise CalcError(f"ep={parsed.ep} must divide moe.n_experts={experts} of {spec.name}")
    if parsed.optimizer_in_backward and largest_parameter(spec) is None:
        raise CalcError(f"optimizer_in_backward: {spec.name}'s largest parameter depends on "
                        f"how a stack stores its experts, MLA or other mixers (not modelled); "
                        f"calc models it for dense attention models")
    seq_len = sequence_length(spec, parsed.seq_len)
    if seq_len % parsed.cp:
        raise CalcError(f"cp={parsed.cp} must divide seq_len={seq_len} (each GPU holds s/cp "
                        f"tokens of a sequence)")
    return parsed.model_copy(update={"recipe": parsed.recipe_name, "seq_len": seq_len})


@dataclass(frozen=True)
class MarginNumbers:
    """What a GPU keeps beside the run's allocations: the CUDA context, one NCCL communicator
    per parallel group of more than one rank and the allocator's fragmentation (RESERVE), or
    the margin given."""

    parts: dict[str, float]  # cuda_context, nccl, fragmentation; or given
    groups: tuple[str, ...]  # the parallel groups counted with a communicator

    @property
    def total(self) -> float:
        return sum(self.parts.values())

    @property
    def given(self) -> bool:
        return "given" in self.parts


def communicator_groups(layout: Layout) -> tuple[str, ...]:
    """The parallel groups of `layout` with more than one rank: each holds an NCCL
    communicator."""
    degrees = {"tp": layout.tp, "cp": layout.cp, "dp": layout.dp, "pp": layout.pp,
               "ep": layout.ep}
    return tuple(group for group, degree in degrees.items() if degree > 1)


def margin(layout: Layout, allocated: float, given_gib: float | None = None) -> MarginNumbers:
    """The margin of a GPU running `layout` whose run allocates `allocated` bytes: `given_gib`
    when given, else RESERVE's CUDA context, an NCCL communicator per group (an expert-parallel
    group's after its all-to-all) and fragmentation in proportion to `allocated`."""
    if given_gib is not None:
        return MarginNumbers({"given": math.ceil(given_gib * GIB)}, ())
    groups = communicator_groups(layout)
    nccl = sum(RESERVE["nccl_all_to_all" if group == "ep" else "nccl_communicator"].value
               for group in groups)
    return MarginNumbers({"cuda_context": RESERVE["cuda_context"].value, "nccl": nccl,
                          "fragmentation": math.ceil(RESERVE["fragmentation"].value
                                                     * allocated)}, groups)


def fits_under(allocated: float, reserve: MarginNumbers, capacity: float) -> bool:
    """Whether `allocated` bytes and the margin fit in `capacity`."""
    return allocated + reserve.total <= capacity


@dataclass(frozen=True)
class MemoryNumbers:
    """The memory of one set of options, fine-tuning, precision and offload folded in."""

    s: dict[str, Any]  # the formulas' symbols
    states: dict[str, Any]  # weights, frozen, gradients, optimizer, ema
    ema_host: float  # an EMA kept in host memory (ema 'host'): its bytes for this GPU's share
    activations: dict[str, Any]  # layers, embedding, output (and adapters)
    buffers: dict[str, Any]  # the framework's transient buffers (calc.formulas.memory)
    per_layer: float
    per_mixer: dict[str, float]  # 'mamba', 'deltanet', 'lightning', 'conv' -> one mixer, one mb
    activations_host: float  # checkpoints activation offload keeps in pinned host memory
    copies: float  # FP8/FP4 weight casts
    moved: OffloadBlock | None
    paged: float  # optimizer states a paged optimizer may move to the host
    allocated: float  # what the run allocates on the GPU, paged states included
    margin: MarginNumbers  # what the GPU keeps beside it
    gpu: float
    room: float  # micro-batches the memory holds (paged states evicted, margin kept)

    @property
    def total(self) -> float:
        return self.allocated + self.margin.total

    @property
    def on_gpu(self) -> float:
        return self.total - self.paged

    @property
    def fits(self) -> bool:
        return self.on_gpu <= self.gpu


def check_optimizer_in_backward(opts: TrainingMemory, ft: FineTune, off: Offload) -> None:
    """CalcError where the optimizer in the backward meets what calc does not model with it:
    adapters on a frozen base (torchtune's LoRA recipes do not offer it) and an offloaded
    optimizer (whose gradients stream to the host in buckets)."""
    if not opts.optimizer_in_backward:
        return
    if ft.frozen_base:
        raise CalcError(f"optimizer_in_backward with finetune={ft.method!r} is not modelled "
                        f"(torchtune offers it in its full fine-tuning recipes only); use "
                        f"finetune='full'")
    if off.optimizer != "none":
        raise CalcError(f"optimizer_in_backward with offload_optimizer={off.optimizer!r}: the "
                        f"offloaded optimizer steps on the host after the backward; choose one")


def evaluate(spec: ModelSpec, opts: TrainingMemory, device: GPU | None, ft: FineTune,
             targets: tuple[str, ...], off: Offload, system: str | None = None
             ) -> MemoryNumbers:
    """The memory of `spec` trained with resolved `opts` on `device` (None: no verdict)."""
    check_optimizer_in_backward(opts, ft, off)
    s = memory_values(spec, opts, device.memory_gib if device else 0, ft, targets)
    activations = _compiled.memory_activations(s)
    totals = _compiled.memory(s)
    if ft.frozen_base:  # adapters train, the base is frozen (calc.formulas.finetune)
        states = _compiled.finetune_states(s)
        tuned = _compiled.finetune_memory(s)
        activations = {**activations, "adapters": tuned["adapter_activations"]}
        total = tuned["total"]
    else:
        states = {**_compiled.memory_states(s), "frozen": 0}
        total = totals["total"]
    states.setdefault("ema", 0)  # adapters on a frozen base: no EMA counted
    ema_host = (_compiled.memory_states({**s, "q_ema": EMA_BYTES})["ema"]
                if opts.ema == "host" and not ft.frozen_base else 0)
    copies = _compiled.precision_memory(s)["weight_copies"]
    moved = offload_block(off, opts.zero, device, system, s) if off.active else None
    change = copies + (moved.gpu_live_bytes - moved.gpu_freed_bytes if moved else 0)
    paged = states["optimizer"] if ft.paged else 0
    # whole bytes: a gathered layer is the mean layer, a fraction of a byte off
    buffers = {key: math.ceil(value) for key, value in _compiled.memory_buffers(s).items()}
    allocated = total + change + sum(buffers.values())
    reserve = margin(opts, allocated - paged, opts.memory_margin)
    # micro-batches that fit: activations and the logits' gradient grow with b, the rest not;
    # fragmentation grows with what is allocated, the rest of the margin not
    per_micro_batch = (sum(activations.values()) + buffers["logits_gradient"]) / opts.micro_batch
    fixed = allocated - paged - per_micro_batch * opts.micro_batch
    share = 0.0 if reserve.given else RESERVE["fragmentation"].value
    usable = (totals["gpu"] - reserve.total + share * (allocated - paged)) / (1 + share)
    per_mixer = {key.removeprefix("activations_per_"): value for key, value in totals.items()
                 if key.startswith("activations_per_") and key != "activations_per_layer"}
    return MemoryNumbers(s, states, ema_host, activations, buffers,
                         totals["activations_per_layer"],
                         per_mixer, totals["activations_host"], copies, moved, paged,
                         allocated, reserve, totals["gpu"],
                         (usable - fixed) / per_micro_batch)


class Fix(Frozen):
    """A change of the options that makes the run fit: the smallest of its kind (FIXES)."""

    changes: dict[str, int | str] = Field(description="TrainingMemory fields and new values")
    total_bytes: Bytes
    max_micro_batch: int


def _bytes_per_trained(recipe: RecipeInfo, s: dict) -> dict[str, int | float]:
    """Model-state bytes per trained parameter by piece: the recipe's, or fp32 adapters' own
    (i_fa, calc.formulas.finetune.STATES): 4-byte weights and gradients, no fp32 copies."""
    if s["i_fa"]:
        return {"weights": 4, "gradients": 4, "gradient_copy": 0, "master": 0,
                "optimizer_states": s["q_o"]}
    return {"weights": recipe.weights, "gradients": recipe.gradients,
            "gradient_copy": recipe.gradient_copy, "master": recipe.master,
            "optimizer_states": s["q_o"]}


class MemoryBlock(Frozen):
    options: TrainingMemory = Field(description="the options, recipe and seq_len resolved")
    params: int = Field(description="all parameters of the model")
    params_per_gpu: float = Field(description="parameters on the most loaded GPU (after t, p)")
    bytes_per_param: dict[str, int | float] = Field(
        description="model-state bytes per (trained) parameter by piece, before ZeRO sharding")
    weights_bytes: Bytes = Field(description="weights that train (all, or the adapters)")
    frozen_bytes: Bytes = Field(0, description="the frozen base (LoRA, QLoRA)")
    weight_copies_bytes: Bytes = Field(0, description="FP8/FP4 casts of the projection weights")
    gradients_bytes: Bytes = Field(description="gradients, and their fp32 copy if any")
    optimizer_bytes: Bytes = Field(description="optimizer states and fp32 master weights "
                                               "(ZeRO's K)")
    ema_bytes: Bytes = Field(0, description="an fp32 EMA of the parameters kept on the GPU "
                                            "(ema 'device'), sharded as the master weights")
    ema_host_bytes: Bytes = Field(0, description="the same EMA kept in host memory (ema "
                                                 "'host'): not on the GPU")
    head_on_gpu: bool = Field(False, description="the most loaded GPU holds the output head "
                                                 "and any MTP modules (one stage, DualPipe)")
    weight_layers: int = Field(0, description="layers whose parameters it holds: the first "
                                              "stage's, and the last stage's under DualPipe")
    mtp_modules: int = Field(0, description="the model's multi-token-prediction modules")
    activations_bytes: Bytes = Field(description="stored for the backward pass, first stage")
    activations: dict[str, Bytes] = Field(description="layers, embedding, output layer")
    activations_per_layer_bytes: Bytes | None = Field(
        description="one attention layer with a dense FFN, one micro-batch (None without "
                    "attention layers)")
    activations_per_mixer_bytes: dict[str, Bytes] = Field(
        default_factory=dict, description="one Mamba, gated DeltaNet or short-convolution "
                                          "mixer (the kinds the model has), one micro-batch")
    activations_host_bytes: Bytes = Field(
        0, description="checkpointed layer inputs activation offload keeps in pinned host "
                       "memory: not on the GPU")
    buffers_bytes: Bytes = Field(0, description="the framework's transient buffers")
    buffers: dict[str, Bytes] = Field(
        default_factory=dict, description="gradient bucket, gathered weights and their "
                                          "gradient (ZeRO-3/FSDP), the logits' gradient")
    allocated_bytes: Bytes = Field(description="what the run allocates: model states, "
                                               "activations, buffers, weight copies")
    margin_bytes: Bytes = Field(description="kept free beside the run: CUDA context, NCCL, "
                                            "fragmentation, or the margin given")
    margin: dict[str, Bytes] = Field(default_factory=dict, description="the margin by part")
    margin_groups: list[str] = Field(
        default_factory=list, description="parallel groups counted with an NCCL communicator")
    total_bytes: Bytes = Field(description="allocated_bytes + margin_bytes")
    paged_bytes: Bytes = Field(0, description="optimizer states a paged optimizer may move "
                                              "to the host; not counted against the GPU")
    finetune: FineTuneBlock = Field(description="what trains: trainable and frozen parameters")
    offload: OffloadBlock | None = Field(None, description="ZeRO-Offload/Infinity: what left "
                                                           "the GPU and where it went")
    gpu: str | None
    gpu_title: str | None = None
    gpu_bytes: int | None = Field(description="memory_gib × 2^30")
    fits: bool | None
    headroom_bytes: Bytes | None = Field(description="gpu_bytes − total_bytes (< 0: short)")
    max_micro_batch: int | None = Field(description="largest micro-batch that fits; 0 when "
                                                    "not even one does")
    states_bytes: Bytes = Field(description="weights (frozen ones too) + gradients + "
                                            "optimizer states, on the GPU")
    layers: int = Field(description="the model's layers L")
    stage_layers: int = Field(description="layers on the most loaded GPU: ⌈L/p⌉")
    kv_heads: int = Field(description="the model's key/value heads (MLA: its query heads)")
    short: Literal["model states", "activations"] | None = Field(
        None, description="what does not fit: the model states alone (with the margin), or "
                          "the activations of one micro-batch beside them; None when it fits "
                          "or without a GPU")
    fixes: list[Fix] = Field(
        default_factory=list,
        description="when it does not fit: for each kind of change (FIXES: recompute, tp, pp, "
                    "cp, ZeRO, ZeRO-3 over more dp ranks) the smallest that fits")


def memory_block(spec: ModelSpec, opts: TrainingMemory, device: GPU | None, ft: FineTune,
                 off: Offload, system: str | None = None, fixes: bool = True) -> MemoryBlock:
    """The memory of `spec` trained with resolved `opts` (memory_options) as `ft` with `off`
    on `device`; with `fixes`, a run that does not fit lists what would make it fit. A stack
    that builds the head apart from the embedding (StackMemory.untied_head: LitGPT) holds a
    tied model's head as a second matrix."""
    if opts.stack.untied_head and spec.tie_embeddings:
        spec = spec.updated(tie_embeddings=False)
    if device is not None:
        check_path(device, opts.precision)  # the GPU runs these GEMMs (no peak needed)
        check_quant_kernels(ft, device)
    ft_block, adapters = finetune_block(spec, ft, opts.activation_dtype)
    e = evaluate(spec, opts, device, ft, adapters.targets, off, system)
    recipe = RECIPES[opts.recipe_name]
    # offload, copies, paging folded in; the buffers and the margin apart
    states_total = e.allocated - e.paged - sum(e.activations.values()) - sum(e.buffers.values())
    fits = e.fits if device else None
    short = None if fits is not False else (
        "model states" if states_total + e.margin.total > e.gpu else "activations")
    found = (smallest_fixes(spec, opts, device, ft, adapters.targets, off, system)
             if fixes and device and not fits else [])
    return MemoryBlock(
        options=opts, params=e.s["N"],
        params_per_gpu=_compiled.memory_states(e.s)["params_per_gpu"],
        bytes_per_param=_bytes_per_trained(recipe, e.s),
        weights_bytes=whole(e.states["weights"]), frozen_bytes=whole(e.states["frozen"]),
        weight_copies_bytes=whole(e.copies), gradients_bytes=whole(e.states["gradients"]),
        optimizer_bytes=whole(e.states["optimizer"]), ema_bytes=whole(e.states["ema"]),
        ema_host_bytes=whole(e.ema_host), head_on_gpu=bool(e.s["i_head"]),
        weight_layers=e.s["L_w"], mtp_modules=e.s["M"],
        activations_bytes=whole(sum(e.activations.values())),
        activations={key: whole(value) for key, value in e.activations.items()},
        activations_per_layer_bytes=whole(e.per_layer) if spec.n_attention_layers else None,
        activations_per_mixer_bytes={kind: whole(value) for kind, value in e.per_mixer.items()
                                     if spec.layer_counts[kind]},
        activations_host_bytes=whole(e.activations_host),
        buffers_bytes=whole(sum(e.buffers.values())),
        buffers={key: whole(value) for key, value in e.buffers.items()},
        allocated_bytes=whole(e.allocated), margin_bytes=whole(e.margin.total),
        margin={key: whole(value) for key, value in e.margin.parts.items()},
        margin_groups=list(e.margin.groups),
        total_bytes=whole(e.total), paged_bytes=whole(e.paged), finetune=ft_block,
        offload=e.moved,
        gpu=device.name if device else None, gpu_title=device.title if device else None,
        gpu_bytes=whole(e.gpu) if device else None,
        fits=fits, headroom_bytes=whole(e.gpu - e.on_gpu) if device else None,
        max_micro_batch=max(0, math.floor(e.room)) if device else None,
        states_bytes=whole(states_total), short=short, layers=spec.n_layers,
        stage_layers=e.s["L_s"], kv_heads=spec.n_kv_heads, fixes=found)


# What a run that does not fit could change, in the order tried; each group's candidates from
# the least change to the most (degrees by powers of two, as layouts are chosen). The last group
# shards the model states over more data-parallel ranks, which only ZeRO-3 does fully.
_POWERS = tuple(2**i for i in range(1, 17))
FIXES: dict[str, tuple[dict[str, int | str], ...]] = {
    "recompute": ({"recompute": "selective"}, {"recompute": "full"}),
    "tp": tuple({"tp": n} for n in _POWERS[:6]),
    "pp": tuple({"pp": n} for n in _POWERS[:7]),
    "cp": tuple({"cp": n} for n in _POWERS[:6]),
    "zero": tuple({"zero": n} for n in (1, 2, 3)),
    "zero-3 dp": tuple({"zero": 3, "dp": n} for n in _POWERS),
}
_RECOMPUTE = ("none", "selective", "full")


def _beyond(current: dict[str, Any], changes: dict[str, int | str]) -> bool:
    """Whether `changes` go further than `current` in every option they name."""
    def rank(key: str, value: int | str) -> int:
        return _RECOMPUTE.index(value) if key == "recompute" else int(value)
    return all(rank(k, v) >= rank(k, current[k]) for k, v in changes.items()) and any(
        v != current[k] for k, v in changes.items())


def smallest_fixes(spec: ModelSpec, opts: TrainingMemory, device: GPU, ft: FineTune,
                   targets: tuple[str, ...], off: Offload,
                   system: str | None = None) -> list[Fix]:
    """For each group of FIXES, the smallest change in it that makes the run fit."""
    found = []
    current = opts.model_dump(exclude={"gpu", "global_batch"})
    for candidates in FIXES.values():
        for changes in (c for c in candidates if _beyond(current, c)):
            try:
                changed = memory_options(spec, device.name, {**current, **changes}, system)
                e = evaluate(spec, changed, device, ft, targets, off, system)
            except CalcError:  # e.g. a tp that does not divide the heads, or no host memory
                continue
            if e.fits:
                found.append(Fix(changes=changes, total_bytes=whole(e.total),
                                 max_micro_batch=math.floor(e.room)))
                break
    return found


def least_recompute(spec: ModelSpec, gpu: str | None, given: RunConfig,
                    system: str | None = None) -> MemoryBlock:
    """The memory of the run `given` (its layout, model-state, offload and fine-tuning
    options); with recompute 'auto', at the least recomputation its framework runs that fits
    on `gpu` (full when none does)."""
    options = given.given("layout", "states")
    auto = options.get("recompute") == "auto"
    if auto and gpu is None:
        raise CalcError("recompute='auto' needs a GPU (--gpu) whose memory it fits")
    device = get_gpu(gpu) if gpu else None
    choices = (recomputations(options.get("framework"), options.get("activation_offload"))
               if auto else (options.get("recompute", "none"),))
    for recompute in choices:
        opts = memory_options(spec, gpu, {**options, "recompute": recompute}, system)
        block = memory_block(spec, opts, device, finetune_of(given),
                             Offload(**given.given("offload")), system)
        if block.fits is not False:
            break
    return block
