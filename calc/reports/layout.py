"""The fastest layouts of a model on N GPUs: `calc.layout("llama2-70b", gpu="a100", gpus=1024,
global_batch=1024)` ranks every valid layout that fits in memory (its framework's recipe and
rules, with the margin a GPU keeps) by predicted step time, and says why the runners-up and the
fastest layouts that do not fit lost. Any searched field can be pinned or given as a set
(`tp=8`, `pp=[4, 8]`, `recompute=["none", "selective"]`); `tokens` prices each ranked layout's
GPU-hours, days and cost. An empty search raises CalcError saying why and the nearest change
that would give layouts."""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from calc.counting import GIB, TRAIN_PER_FORWARD
from calc.document import Document, frame
from calc.errors import CalcError
from calc.evaluate import count_flops
from calc.plan.cost import run_time
from calc.plan.nearest import no_layout, pinned
from calc.plan.options import ConfigEcho, RunConfig, options_of, run_config, with_file
from calc.plan.search import SEARCHED, Candidate, Search, SearchSetup, pins, search_layouts
from calc.presets import Preset, resolve
from calc.spec import ModelSpec
from calc.spec.costing import Costing
from calc.spec.layout import CURRENT_PRACTICE, Layout
from calc.spec.model import Frozen
from calc.timing.offload import PARTS as OFFLOAD_PARTS
from calc.timing.schedule import PARTS

TOP = 10
REJECTED = 5
# What a search is told; it searches over every other layout field (SEARCHED), each of which
# may be pinned or given as a set.
# The optimizer in the backward rules out ZeRO 1-2 and accumulated micro-batches, which the
# search proposes: not a search option.
UNSEARCHED_STATES = ("optimizer_in_backward",)
SEARCH_FIXED = ("global_batch", "seq_len", "dtype", "framework", "dropout", "flash_attention",
                "allow_cross_node_tp")
SEARCH_SPACE = ("Searched: tp within a node dividing the heads, pp up to the layers, vpp up to 8 "
                "(e+l: the embedding and the loss split as two more layers, where the layers "
                "alone do not divide), cp in powers of two up to 8, ep dividing experts and dp, "
                "micro-batches in powers of two dividing B/dp, recompute none/selective/full, "
                "ZeRO stages the framework runs (0-1 with pp > 1, but for torchtitan's FSDP), "
                "sequence parallelism with tp > 1; a layout the framework refuses is not "
                "priced (calc.spec.validity); flash attention (on unless told otherwise), "
                "dtype, stack and dropout as given.")


class RankedLayout(Frozen):
    layout: Layout
    offload: str = Field("none", description="what lives off the GPU (calc.timing.offload)")
    step_time_s: float
    mfu: float
    tokens_per_s_per_gpu: float
    memory_per_gpu_bytes: float = Field(description="calc.memory's total: allocated + margin")
    memory_margin_bytes: float = Field(description="of which the margin kept free")
    breakdown: dict[str, float]
    why: str = Field(description="against the best: the parts that cost it most, or memory")
    gpu_hours: float | None = Field(None, description="the tokens asked for, at this layout")
    days: float | None = Field(None, description="gpu_hours / (gpus × 24)")
    cost: float | None = Field(None, description="gpu_hours × price, when a price is given")


class LayoutReport(Document):
    model: str
    title: str
    source: str
    gpu: str
    system: str
    gpus: int
    global_batch: int
    seq_len: int
    framework: str
    recipe: str = Field(description="the model states' recipe (the framework's own unless "
                                    "given)")
    margin_gib: float | None = Field(description="the margin given; None: calc.memory's "
                                                 "default per layout")
    gpu_memory_bytes: int
    pinned: dict[str, list[Any]] = Field(description="searched fields pinned or given as sets")
    evaluated: int = Field(description="valid layouts priced")
    fitting: int = Field(description="of those, layouts that fit in memory")
    search_seconds: float
    tokens: float | None = None
    price: float | None = None
    best: list[RankedLayout] = Field(description="the fastest layouts that fit, best first")
    rejected: list[RankedLayout] = Field(description="faster layouts that do not fit")
    conventions: list[str]
    config: ConfigEcho | None = Field(None, description="the trainer config read (--from)")

    def to_dataframe(self) -> Any:
        """One row per ranked layout (best first): its degrees and choices, step time, MFU,
        memory, its breakdown by part (`breakdown.<part>`) and, with tokens, GPU-hours, days
        and cost. Needs pandas."""
        rows = [_row(rank, ranked) for rank, ranked in enumerate(self.best, 1)]
        keys = list(dict.fromkeys(key for row in rows for key in row))
        return frame({key: [row.get(key) for row in rows] for key in keys},
                     index=[row["rank"] for row in rows])


def _row(rank: int, ranked: RankedLayout) -> dict[str, Any]:
    o = ranked.layout
    return {"rank": rank, **{field: getattr(o, field) for field in SEARCHED},
            "offload": ranked.offload, "step_time_s": ranked.step_time_s, "mfu": ranked.mfu,
            "tokens_per_s_per_gpu": ranked.tokens_per_s_per_gpu,
            "memory_per_gpu_bytes": ranked.memory_per_gpu_bytes,
            "memory_margin_bytes": ranked.memory_margin_bytes,
            **{f"breakdown.{part}": seconds for part, seconds in ranked.breakdown.items()},
            "gpu_hours": ranked.gpu_hours, "days": ranked.days, "cost": ranked.cost,
            "why": ranked.why}


def _placement(candidate: Candidate) -> str:
    optimizer, params = candidate.offload
    if (optimizer, params) == ("none", "none"):
        return "none"
    return ", ".join(f"{what} → {where}" for what, where in
                     (("optimizer", optimizer), ("parameters", params)) if where != "none")


def _why(candidate: Candidate, best: Candidate | None, capacity: float) -> str:
    if not candidate.fits:
        if candidate.memory_bytes <= capacity:
            return (f"host memory: {candidate.host_bytes_per_node / GIB:,.0f} GiB of "
                    f"offloaded states per node")
        return (f"memory: {candidate.memory_bytes / GIB:,.1f} GiB (margin "
                f"{candidate.margin_bytes / GIB:,.1f}) > {capacity / GIB:,.0f} GiB")
    if best is None or candidate is best:
        return "fastest"
    parts = [*PARTS, *(p for p in OFFLOAD_PARTS if p in candidate.time.breakdown
                       or p in best.time.breakdown)]
    extra = {part: candidate.time.breakdown.get(part, 0.0) - best.time.breakdown.get(part, 0.0)
             for part in parts}
    worst = sorted((value, part) for part, value in extra.items() if value > 1e-9)[-2:]
    if not worst:
        return "as fast as the best"
    return "; ".join(f"+{value:.3g} s {part.replace('_', ' ')}" for value, part in
                     reversed(worst))


def _distinct(candidates: list[Candidate], limit: int,
              slower_than: float | None = None) -> list[tuple[Candidate, int]]:
    """The first `limit` candidates of distinct step time, each with how many tie with it."""
    shown: list[tuple[Candidate, int]] = []
    for candidate in candidates:
        if slower_than is not None and candidate.time.step >= slower_than:
            break
        if shown and math.isclose(candidate.time.step, shown[-1][0].time.step, rel_tol=1e-9):
            shown[-1] = (shown[-1][0], shown[-1][1] + 1)
        elif len(shown) == limit:
            break
        else:
            shown.append((candidate, 0))
    return shown


def layout(model: str | ModelSpec | Preset | None = None, *, gpu: str, gpus: int,
           system: str | None = None, from_file: str | None = None,
           run: RunConfig | None = None, tokens: float | None = None, top: int = TOP,
           **options: Any) -> LayoutReport:
    """Rank every valid layout of `model` on `gpus` GPUs for the run's `global_batch` sequences
    (`seq_len`, `dtype` default bf16, `framework` default megatron, `dropout` as current
    practice: off; options of calc.plan.options, or a RunConfig `run`). Each searched field
    (SEARCHED: tp, pp, dp, cp, ep, vpp, split_embedding_loss, micro_batch, recompute, zero,
    sequence_parallel) may be pinned (`tp=8`) or given as a set (`pp=[4, 8]`). The model
    states (recipe, optimizer, precision) are the framework's own unless given; `memory_margin`
    (GiB) sets the margin. The offload options (offload_optimizer, offload_params: 'cpu' or
    'nvme'; host_memory_gib, gpus_per_node, nvme_read_gb_s, nvme_write_gb_s) also price each
    layout offloaded where its ZeRO stage allows (calc.step's offload). `tokens` gives each of
    the `top` ranked layouts its GPU-hours and days, and with `price` (costing options) its
    cost. `from_file` takes the model, batch, sequence, dtype, stack, dropout and offload from
    a trainer config (as calc.step does), the arguments given here over it; its parallel
    degrees are searched over, not fixed. No layout: CalcError saying why and the nearest
    change that gives some."""
    return searched(model, gpu=gpu, gpus=gpus, system=system, from_file=from_file, run=run,
                    tokens=tokens, top=top, **options)[0]


def searched(model: str | ModelSpec | Preset | None = None, *, gpu: str, gpus: int,
             system: str | None = None, from_file: str | None = None,
             run: RunConfig | None = None, tokens: float | None = None, top: int = TOP,
             **options: Any) -> tuple[LayoutReport, Search]:
    """calc.layout's report and the search behind it: every layout priced (what
    `calc plot layout` draws)."""
    if top < 1:
        raise CalcError(f"top={top}: expected at least 1 layout to show")
    allowed, options = pins(options)
    given = run_config(run, **options)
    states = (option for option in options_of("states") if option not in UNSEARCHED_STATES)
    allowed_options = (*SEARCH_FIXED, *states, *options_of("offload"), *options_of("costing"))
    unknown = sorted(set(given.given()) - set(allowed_options))
    if unknown:
        raise CalcError(f"layout: option(s) {', '.join(unknown)} are not taken by the search "
                        f"(given: {', '.join(allowed_options)}, and the searched "
                        f"{', '.join(SEARCHED)} as pins or sets)")
    echo, notes = None, []
    if from_file is not None:
        read = with_file(from_file, model, given, gpus, step=True)  # gpus: the caller's
        model, given, echo = read.model, read.run, read.echo
        notes = [f"From {from_file}: the model, batch, sequence length, dtype, stack, dropout "
                 f"and offload; its parallel degrees, micro-batch, recomputation and ZeRO stage "
                 f"are searched over, not fixed (`calc step --from` prices its own layout).",
                 *read.notes]
    if model is None:
        raise CalcError(f"model: {from_file} names no model calc knows; give a preset name, "
                        f"spec file or config.json as MODEL")
    fixed = {key: value for key, value in given.given("layout").items() if key in SEARCH_FIXED}
    if "global_batch" not in fixed:
        raise CalcError("global_batch: the search needs the sequences per step (--global-batch)")
    global_batch = int(fixed["global_batch"])
    dtype = fixed.get("dtype", "bf16")
    preset = resolve(model)
    offload = given.given("offload")
    setup, found = search_layouts(
        preset.spec, gpu=gpu, gpus=gpus, global_batch=global_batch, seq_len=fixed.get("seq_len"),
        system=system, dtype=dtype, framework=fixed.get("framework", "megatron"),
        dropout=fixed.get("dropout", CURRENT_PRACTICE["dropout"]),
        flash_attention=fixed.get("flash_attention", True), offload=offload, allowed=allowed,
        states=given.given("states"),
        allow_cross_node_tp=fixed.get("allow_cross_node_tp", False))
    if not found.ranked:
        raise CalcError(no_layout(preset.name, setup, found, gpus, global_batch, allowed))
    t = setup.seq_len
    flops = TRAIN_PER_FORWARD * count_flops(setup.spec, t).forward * global_batch * t
    best = found.ranked[0]
    asked = Costing(**given.given("costing"))

    def ranked(pairs: list[tuple[Candidate, int]]) -> list[RankedLayout]:
        return [_ranked(c, best, setup, flops, gpus, global_batch * t, tokens, asked, ties)
                for c, ties in pairs]

    framework = setup.fixed["framework"]
    report = LayoutReport(
        model=preset.name, title=preset.title, source=preset.source, gpu=setup.gpu.name,
        system=setup.system.name, gpus=gpus, global_batch=global_batch, seq_len=t,
        framework=framework, recipe=setup.recipe, margin_gib=setup.margin_gib,
        gpu_memory_bytes=int(setup.capacity),
        pinned={key: list(values) for key, values in allowed.items()},
        evaluated=found.evaluated, fitting=len(found.ranked), search_seconds=found.seconds,
        tokens=tokens, price=asked.price,
        best=ranked(_distinct(found.ranked, top)),
        rejected=ranked(_distinct(found.rejected, REJECTED, best.time.step)),
        conventions=[
            f"{found.evaluated:,} valid layouts priced (bench/layout.py times it); "
            f"{len(found.ranked):,} fit in {setup.gpu.memory_gib:g} GiB with the margin "
            f"(calc.memory). Layouts of equal predicted time are shown once, with how many "
            f"tie.",
            f"Memory as {framework} keeps it: recipe {setup.recipe!r}, its buffers, and a "
            + (f"margin of {setup.margin_gib:g} GiB (--memory-margin)"
               if setup.margin_gib is not None else
               "margin per layout for the CUDA context, one NCCL communicator per parallel "
               "group and fragmentation (calc.spec.memory.RESERVE; --memory-margin sets it)")
            + "; a layout within the margin does not fit.",
            SEARCH_SPACE,
            *([f"Pinned: {pinned(allowed)}."] if allowed else []),
            "Ranked by the step-time model of `calc step` (docs/step-time.md): the same "
            "constants for every layout, so the order is only as good as that model.",
            *([_offload_sentence(offload)] if _offload_asked(offload) else []),
            *notes,
        ],
        config=echo,
    )
    return report, found


def _ranked(candidate: Candidate, best: Candidate, setup: SearchSetup, flops: float,
            gpus: int, tokens_per_step: int, tokens: float | None, asked: Costing,
            ties: int) -> RankedLayout:
    step = candidate.time.step
    rate = tokens_per_step / step / gpus
    budget = (run_time(tokens, rate, gpus, setup.gpu, asked) if tokens and candidate.fits
              else None)
    money = budget.cost if budget else None
    why = _why(candidate, best, setup.capacity)
    return RankedLayout(layout=candidate.layout, offload=_placement(candidate),
                        step_time_s=step,
                        mfu=flops / (step * gpus * setup.gpu.peak_flops(setup.fixed["dtype"])),
                        tokens_per_s_per_gpu=rate,
                        memory_per_gpu_bytes=candidate.memory_bytes,
                        memory_margin_bytes=candidate.margin_bytes,
                        breakdown=candidate.time.breakdown,
                        why=why + (f" ({ties} more tie)" if ties else ""),
                        gpu_hours=budget.gpu_hours if budget else None,
                        days=budget.days if budget else None,
                        cost=money.cost if money else None)


def _offload_asked(offload: dict[str, Any]) -> bool:
    return bool({offload.get("offload_optimizer"), offload.get("offload_params")}
                - {None, "none"})


def _offload_sentence(offload: dict[str, Any]) -> str:
    optimizer = offload.get("offload_optimizer") or "none"
    params = offload.get("offload_params") or "none"
    return (f"Offload also tried: the optimizer → {optimizer} on every layout with ZeRO ≥ 1"
            + (f", the parameters → {params} with ZeRO 3" if params != "none" else "")
            + "; priced as `calc step --offload-optimizer/--offload-params` prices it, each "
              "layout against the node's host memory.")
