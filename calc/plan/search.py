"""Every layout of a model on N GPUs for a global batch, priced and checked against memory.

The per-model terms (operators, memory symbols) are computed once; each layout is then cheap
arithmetic: the step-time engine (calc.timing.schedule) and the compiled memory formulas
(calc._compiled: states, activations and the framework's buffers, plus the margin of
calc.plan.memory). Candidates are proposed from divisors and checked by the same validators a
user's layout meets (calc.spec.layout) and the rules its framework enforces
(calc.spec.validity), so no rule is written twice.

Axes: tp (a divisor of the heads and widths it splits, within one node unless
allow_cross_node_tp), pp (up to the layers), vpp (interleaving that divides the layers), cp
(powers of two up to 8, for sequences that split; 1 for models with other mixers than
attention), ep (divisors of the experts and of dp), the micro-batch (powers of two dividing
B/dp), recomputation, ZeRO stage and sequence parallelism (with tp > 1), and when asked the
offload of the optimizer (ZeRO ≥ 1) and of the parameters (ZeRO 3). Any axis can be pinned or
given as a set (`allowed`). Flash attention is assumed available, dropout as given.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from calc import _compiled
from calc.calibration.throughput import RunModel
from calc.counting import GIB
from calc.errors import CalcError
from calc.evaluate import layout_values, memory_values
from calc.plan.memory import margin, memory_options
from calc.plan.offload import host_side, placement
from calc.plan.options import RunConfig, fp8_layout
from calc.plan.system import system_of
from calc.presets import get_gpu, sequence_length
from calc.spec import GPU, ModelSpec, System
from calc.spec.layout import RECOMPUTE_ORDER, Layout, check, make_layout, tensor_parallel_units
from calc.spec.validity import Model, refusal
from calc.timing.compute import Device
from calc.timing.constants import FrameworkConstants, TimingConstants, load_constants
from calc.timing.network import Network, network_for
from calc.timing.offload import HostSide, offload_traffic, with_offload
from calc.timing.operators import ModelTerms, model_terms
from calc.timing.schedule import StepTime, device_for, step_time, updated_params

MAX_CP = 8
MAX_VPP = 8
RECOMPUTE = RECOMPUTE_ORDER
# The layout fields the search varies; each may be pinned or given as a set (`allowed`).
SEARCHED = ("tp", "pp", "dp", "cp", "ep", "vpp", "split_embedding_loss", "micro_batch",
            "recompute", "zero", "sequence_parallel")
# Stacks that shard with ZeRO 2/3 (FSDP) under a pipeline: torchtitan does, keeping each stage
# gathered (torchtitan/models/llama3/infra/parallelize.py:288, 8a2686c4a4); elsewhere ZeRO 2/3
# with a pipeline is not proposed (DeepSpeed refuses it, calc.spec.validity).
PIPELINED_SHARDING = ("torchtitan",)


@dataclass(frozen=True)
class Candidate:
    layout: Layout
    time: StepTime
    memory_bytes: float  # allocated + margin, the total the verdict uses
    fits: bool
    offload: tuple[str, str] = ("none", "none")  # (optimizer, parameters): none, cpu or nvme
    host_bytes_per_node: float = 0.0  # offloaded states in one node's host memory
    margin_bytes: float = 0.0  # of memory_bytes, kept free (CUDA context, NCCL, fragmentation)


@dataclass(frozen=True)
class OffloadChoice:
    """Offload the search also tries (calc.timing.offload), and the host that bounds it."""

    optimizer: str  # cpu | nvme | none
    params: str
    host: HostSide
    host_memory: float | None  # bytes per node; None: not checked
    overlap: bool  # gradient copies hidden behind the backward (the framework's overlap)

    def placements(self, layout: Layout) -> list[tuple[str, str]]:
        """(optimizer, parameters) placements valid for `layout`'s ZeRO stage, none first."""
        found = [("none", "none")]
        if layout.zero >= 1 and self.optimizer != "none":
            found.append((self.optimizer, "none"))
        if layout.zero == 3 and self.params != "none":
            found.append((self.optimizer, self.params))
        return found


@dataclass(frozen=True)
class Search:
    ranked: list[Candidate]  # layouts that fit, fastest first
    rejected: list[Candidate]  # layouts that do not fit, fastest first
    evaluated: int  # layouts priced
    seconds: float  # wall time of the search


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def _powers_of_two(limit: int) -> list[int]:
    values, k = [], 1
    while k <= limit:
        values.append(k)
        k *= 2
    return values


Allowed = dict[str, tuple[Any, ...]]


def _ok(allowed: Allowed, field: str, value: Any) -> bool:
    """Whether `value` of `field` is among the values `allowed` (any, when not pinned)."""
    return field not in allowed or value in allowed[field]


def pins(options: dict[str, Any]) -> tuple[Allowed, dict[str, Any]]:
    """The searched fields among `options`, each as the tuple of values allowed (a value, or
    a list or set of them, each checked against its field), and the other options."""
    allowed: Allowed = {}
    rest = {}
    for option, value in options.items():
        if option not in SEARCHED or value is None:
            rest[option] = value
            continue
        values = tuple(value) if isinstance(value, list | tuple | set | frozenset) else (value,)
        if option == "recompute" and "auto" in values:  # the search tries every one
            continue
        for one in values:
            RunConfig.from_options(**{option: one})  # CalcError naming the field and value
        allowed[option] = tuple(dict.fromkeys(values))
    return allowed, rest


def proposals(spec: ModelSpec, gpus: int, global_batch: int, seq_len: int,
              gpus_per_node: int, fixed: dict[str, Any],
              allowed: Allowed | None = None) -> Iterator[dict[str, Any]]:
    """Layout fields to try, within `allowed` (the validators decide which are valid)."""
    allowed = allowed or {}
    layers = spec.n_layers
    experts = spec.moe.n_experts if spec.moe else 1
    units = [value for _, value, _ in tensor_parallel_units(spec)]
    max_cp = MAX_CP if set(spec.mixer_kinds) == {"attention"} else 1  # ring attention only
    across = fixed.get("allow_cross_node_tp", False)
    for tp in (t for t in _divisors(gpus)
               if (across or t <= gpus_per_node) and all(value % t == 0 for value in units)
               and _ok(allowed, "tp", t)):
        splits = [c for c in _powers_of_two(max_cp)
                  if (c == 1 or ((gpus // tp) % c == 0 and seq_len % (2 * c) == 0))
                  and _ok(allowed, "cp", c)]
        for cp in splits:
            for pp in (p for p in _divisors(gpus // (tp * cp))
                       if p <= layers and _ok(allowed, "pp", p)):
                dp = gpus // (tp * pp * cp)
                if global_batch % dp or not _ok(allowed, "dp", dp):
                    continue
                per_rank = global_batch // dp
                eps = ([e for e in _divisors(dp) if experts % e == 0] if spec.moe
                       else [1])
                for vpp, split in _pipeline_splits(layers, pp):
                    if not (_ok(allowed, "vpp", vpp)
                            and _ok(allowed, "split_embedding_loss", split)):
                        continue
                    for ep in (e for e in eps if _ok(allowed, "ep", e)):
                        for micro_batch in (b for b in _powers_of_two(per_rank)
                                            if per_rank % b == 0
                                            and _ok(allowed, "micro_batch", b)):
                            yield {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep,
                                   "vpp": vpp, "split_embedding_loss": split,
                                   "micro_batch": micro_batch,
                                   "global_batch": global_batch, "seq_len": seq_len,
                                   "flash_attention": True, **fixed}


def _pipeline_splits(layers: int, pp: int) -> list[tuple[int, bool]]:
    """(vpp, split_embedding_loss) pairs to try (`_even`), up to MAX_VPP chunks per GPU."""
    if pp == 1:
        return [(1, False)]
    return [(vpp, split) for vpp in range(1, MAX_VPP + 1) for split in (False, True)
            if _even(layers, pp, vpp, split)]


def _even(layers: int, pp: int, vpp: int, split: bool) -> bool:
    """One stage per GPU whatever the split; interleaving where the chunks divide the layers,
    or the layers with the embedding and the loss counted as two more where the layers alone
    do not divide (Llama 3's 126 layers in 16 × 8 chunks)."""
    chunks = pp * vpp
    if split:
        return layers % chunks != 0 and (layers + 2) % chunks == 0
    return vpp == 1 or layers % chunks == 0


def outside(spec: ModelSpec, layout: Layout, gpus_per_node: int) -> str | None:
    """Why `proposals` never proposes `layout` (None when it does)."""
    experts = spec.moe.n_experts if spec.moe else 1
    per_rank = layout.global_batch // layout.dp
    reasons = {
        f"tp {layout.tp} > {gpus_per_node} GPUs per node": layout.tp > gpus_per_node,
        f"cp {layout.cp} is not a power of two up to {MAX_CP}":
            layout.cp not in _powers_of_two(MAX_CP),
        f"vpp {layout.vpp} > {MAX_VPP}": layout.vpp > MAX_VPP,
        f"pp × vpp = {layout.pp * layout.vpp} does not divide the {spec.n_layers} layers"
        + (" + embedding + loss" if layout.split_embedding_loss else ""):
            not _even(spec.n_layers, layout.pp, layout.vpp, layout.split_embedding_loss),
        f"micro-batch {layout.micro_batch} is not a power of two":
            layout.micro_batch not in _powers_of_two(per_rank),
        f"ep {layout.ep} does not divide the {experts} experts": experts % layout.ep != 0,
        f"ZeRO {layout.zero} with a pipeline": layout.zero >= 2 and layout.pp > 1,
    }
    found = [reason for reason, applies in reasons.items() if applies]
    return "; ".join(found) or None


def variants(base: Layout, allowed: Allowed | None = None) -> Iterator[Layout]:
    """`base` with each recomputation, ZeRO stage and sequence-parallel choice within
    `allowed`. These fields are valid in any combination except ZeRO 2/3 with a pipeline,
    which is proposed only for the stacks that run it (PIPELINED_SHARDING); the framework's
    rules (calc.spec.validity) then decide; model_copy skips re-validating what `base`
    passed."""
    allowed = allowed or {}
    sharded = base.pp == 1 or base.framework in PIPELINED_SHARDING
    for recompute in (r for r in RECOMPUTE if _ok(allowed, "recompute", r)):
        for zero in (z for z in ((0, 1, 2, 3) if sharded else (0, 1))
                     if _ok(allowed, "zero", z)):
            for sp in (s for s in ((False, True) if base.tp > 1 else (False,))
                       if _ok(allowed, "sequence_parallel", s)):
                yield base.model_copy(update={"recompute": recompute, "zero": zero,
                                              "sequence_parallel": sp})


def memory_allocated(spec: ModelSpec, base: dict[str, Any], layout: Layout,
                     cache: dict) -> float:
    """What a run of `layout` allocates on its most loaded GPU: calc.formulas.memory's model
    states, activations and the framework's buffers, each part cached by the fields it
    reads."""
    states_key = ("states", layout.tp, layout.pp, layout.split_embedding_loss, layout.dp,
                  layout.cp, layout.ep, layout.zero, layout.pipeline_schedule)
    activations_key = ("activations", layout.tp, layout.pp, layout.split_embedding_loss,
                       layout.cp, layout.vpp, layout.pipeline_schedule,
                       layout.micro_batch, layout.recompute, layout.recompute_norm_up,
                       layout.sequence_parallel, layout.flash_attention, layout.dropout)
    buffers_key = ("buffers", layout.tp, layout.pp, layout.split_embedding_loss, layout.cp,
                   layout.ep, layout.zero, layout.micro_batch, layout.framework,
                   layout.pipeline_schedule)
    if any(key not in cache for key in (states_key, activations_key, buffers_key)):
        s = {**base, **layout_values(spec, layout)}
        states = _compiled.memory_states(s)
        cache[states_key] = (states["weights"] + states["gradients"] + states["optimizer"]
                             + states["ema"])
        cache[activations_key] = sum(_compiled.memory_activations(s).values())
        cache[buffers_key] = sum(_compiled.memory_buffers(s).values())
    return cache[states_key] + cache[activations_key] + cache[buffers_key]


def memory_total(spec: ModelSpec, base: dict[str, Any], layout: Layout, cache: dict,
                 margin_gib: float | None = None) -> float:
    """calc.memory's total for `layout`: what it allocates (memory_allocated) and the margin
    (calc.plan.memory.margin; `margin_gib` when given)."""
    allocated = memory_allocated(spec, base, layout, cache)
    return allocated + margin(layout, allocated, margin_gib).total


def offloaded(spec: ModelSpec, base: dict[str, Any], layout: Layout, time: StepTime,
              total: float, where: tuple[str, str], choice: OffloadChoice,
              terms: ModelTerms) -> tuple[StepTime, float, float]:
    """(step time, GPU memory, host memory per node) of `layout` with the optimizer and the
    parameters placed `where`: calc.plan.offload's bytes, priced by calc.timing.offload."""
    optimizer, params = where
    placed = placement({**base, **layout_values(spec, layout)}, optimizer, params)
    priced = with_offload(time, layout, offload_traffic(placed.values, optimizer, params),
                          choice.host, updated_params(terms, layout), choice.overlap)
    return priced, total + placed.gpu_change, placed.host * choice.host.gpus_per_node


def _order(candidate: Candidate) -> tuple:
    """Fastest first; among equal times the simpler layout (lower ZeRO stage, less
    recomputation, fewer model-parallel ranks)."""
    o = candidate.layout
    return (round(candidate.time.step, 9), o.zero, candidate.offload != ("none", "none"),
            RECOMPUTE.index(o.recompute), o.tp * o.pp * o.cp * o.ep, o.vpp,
            not o.sequence_parallel)


def search(spec: ModelSpec, terms: ModelTerms, gpu: GPU, device: Device, network: Network,
           framework: FrameworkConstants, base_symbols: dict[str, Any], gpus: int,
           global_batch: int, fixed: dict[str, Any], price_rejected: bool = True,
           offload: OffloadChoice | None = None, allowed: Allowed | None = None,
           margin_gib: float | None = None) -> Search:
    """Price every valid layout within `allowed`; `fixed` pins fields for all (dtype,
    framework, dropout). A layout its framework refuses (calc.spec.validity) is not priced.
    Without `price_rejected`, layouts that do not fit are counted but not timed. With
    `offload`, each layout whose ZeRO stage allows it is also priced offloaded. Memory is
    calc.memory's total: allocated + margin (`margin_gib` when given)."""
    start = time.perf_counter()
    ranked, rejected, evaluated = [], [], 0
    cache: dict = {}
    capacity = gpu.memory_gib * GIB
    model = Model.of(spec)
    for fields in proposals(spec, gpus, global_batch, terms.seq_len, network.gpus_per_node,
                            fixed, allowed):
        try:
            base, _ = check(spec, Layout(**fields))
        except (ValidationError, CalcError):
            continue
        for layout in variants(base, allowed):
            if refusal(model, layout, network.gpus_per_node) is not None:
                continue
            allocated = memory_allocated(spec, base_symbols, layout, cache)
            for where in offload.placements(layout) if offload else [("none", "none")]:
                evaluated += 1
                on_gpu, host = allocated, 0.0
                if where != ("none", "none"):
                    assert offload is not None
                    priced, on_gpu, host = offloaded(
                        spec, base_symbols, layout, step_time(terms, layout, device, network,
                                                              framework, cache),
                        allocated, where, offload, terms)
                kept = margin(layout, on_gpu, margin_gib).total
                memory = on_gpu + kept
                fits = memory <= capacity and (offload is None or offload.host_memory is None
                                               or host <= offload.host_memory)
                if not fits and not price_rejected:
                    continue
                if where == ("none", "none"):
                    priced = step_time(terms, layout, device, network, framework, cache)
                candidate = Candidate(layout, priced, memory, fits, where, host, kept)
                (ranked if fits else rejected).append(candidate)
    ranked.sort(key=_order)
    rejected.sort(key=_order)
    return Search(ranked, rejected, evaluated, time.perf_counter() - start)


@dataclass(frozen=True)
class SearchSetup:
    """One model on one system, ready to price layouts (the per-model terms made once)."""

    spec: ModelSpec
    gpu: GPU
    system: System
    seq_len: int
    fixed: dict[str, Any]
    base_symbols: dict[str, Any]
    gpus_per_node: int
    recipe: str  # the model states' recipe (the framework's own unless given)
    margin_gib: float | None  # the margin given, or None: calc.plan.memory.margin's default

    @property
    def capacity(self) -> float:
        return self.gpu.memory_gib * GIB


def search_layouts(spec: ModelSpec, *, gpu: str, gpus: int, global_batch: int,
                   seq_len: int | None = None, system: str | None = None, dtype: str = "bf16",
                   framework: str = "megatron", dropout: bool = False,
                   flash_attention: bool = True, price_rejected: bool = True,
                   offload: dict[str, Any] | None = None, allowed: Allowed | None = None,
                   states: dict[str, Any] | None = None,
                   allow_cross_node_tp: bool = False) -> tuple[SearchSetup, Search]:
    """Every valid layout of `spec` within `allowed` priced (calc.timing.search), with what
    priced them; `offload` (calc.layout's offload keyword arguments) adds the offloaded
    variants; `states` (recipe, optimizer, precision, memory_margin) set how the model states
    are kept and the margin, default the framework's own (calc.spec.memory.STACKS)."""
    t = sequence_length(spec, seq_len)
    states = states or {}
    fixed = {**fp8_layout({"dtype": dtype}, states.get("precision")), "framework": framework,
             "dropout": dropout, "flash_attention": flash_attention,
             "allow_cross_node_tp": allow_cross_node_tp}
    make_layout(None, global_batch=global_batch, seq_len=t, **fixed)  # checks those fields
    constants = load_constants()
    device_spec = get_gpu(gpu)
    platform = system_of(device_spec, system, gpus)
    framework_constants = constants.framework(framework)
    device = device_for(device_spec, fixed["dtype"], constants, framework_constants,
                        fixed.get("fp8_recipe"))
    network = network_for(platform, constants.network)
    options = memory_options(spec, device_spec.name, {"seq_len": t, "dropout": dropout,
                                                      "dtype": fixed["dtype"],
                                                      "framework": framework, **states})
    base = memory_values(spec, options, device_spec.memory_gib)
    choice = _offload_choice(offload or {}, device_spec, platform, gpus, constants,
                             framework_constants.overlap_grad_reduce)
    found = search(spec, model_terms(spec, t), device_spec, device, network,
                   framework_constants, base, gpus, global_batch, fixed, price_rejected,
                   choice, allowed, options.memory_margin)
    return SearchSetup(spec, device_spec, platform, t, fixed, base, network.gpus_per_node,
                       options.recipe_name, options.memory_margin), found


def against_authors(model: RunModel, predicted: float) -> tuple[float | None, Layout | None, str]:
    """The search's best layout for a published run's model, GPUs and batch against the
    authors' layout, predicted at `predicted` seconds a step (the same attention kernel, dtype,
    stack and dropout: only the parallel layout and the memory choices are searched): its step,
    its layout, and a verdict saying which wins and why."""
    run, layout = model.run, model.layout
    setup, found = search_layouts(model.spec, gpu=run.gpu, gpus=run.gpus,
                                  global_batch=run.global_batch, seq_len=run.seq_len,
                                  system=run.system, dtype=layout.dtype,
                                  framework=layout.framework, dropout=layout.dropout,
                                  flash_attention=layout.flash_attention, price_rejected=False)
    best = found.ranked[0] if found.ranked else None
    if best is not None and best.time.step <= predicted * (1 + 1e-9):
        return best.time.step, best.layout, (
            f"search at least as fast ({predicted / best.time.step:.2f}× the authors' "
            f"predicted speed)")
    reasons = []
    theirs = memory_total(model.spec, setup.base_symbols, layout, {})
    if theirs > setup.capacity:
        reasons.append(f"calc.memory puts the authors' layout at {theirs / GIB:,.0f} GiB > "
                       f"{setup.capacity / GIB:,.0f} GiB")
    why = outside(model.spec, layout, setup.gpus_per_node)
    if why:
        reasons.append(f"theirs is outside the searched space ({why})")
    head = "theirs wins" if best is not None else "no searched layout fits calc.memory"
    return (best.time.step if best else None, best.layout if best else None,
            f"{head}: {'; '.join(reasons) or 'no reason found'}")


def _offload_choice(given: dict[str, Any], gpu: GPU, system: System, gpus: int,
                    constants: TimingConstants, overlap: bool) -> OffloadChoice | None:
    """What offload the search tries (None: none asked), with the node it runs on."""
    optimizer = given.get("offload_optimizer") or "none"
    params = given.get("offload_params") or "none"
    if (optimizer, params) == ("none", "none"):
        return None
    per_node = given.get("gpus_per_node") or min(gpus, system.gpus_per_node)
    host, _ = host_side(optimizer, params, gpu, system, constants.offload, per_node,
                        given.get("nvme_read_gb_s"), given.get("nvme_write_gb_s"))
    memory = given.get("host_memory_gib") or system.host_memory_gib
    return OffloadChoice(optimizer, params, host, memory * GIB if memory else None, overlap)
