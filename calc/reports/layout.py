"""The fastest layouts of a model on N GPUs: `calc.layout("llama2-70b", gpu="a100", gpus=1024,
global_batch=1024)` ranks every valid layout that fits in memory by predicted step time, and
says why the runners-up and the fastest layouts that do not fit lost."""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from calc.counting import GIB, TRAIN_PER_FORWARD
from calc.document import Document
from calc.errors import CalcError
from calc.evaluate import count_flops
from calc.plan.options import ConfigEcho, RunConfig, options_of, run_config, with_file
from calc.plan.search import Candidate, search_layouts
from calc.presets import Preset, resolve
from calc.spec import ModelSpec
from calc.spec.layout import CURRENT_PRACTICE, Layout
from calc.spec.model import Frozen
from calc.timing.offload import PARTS as OFFLOAD_PARTS
from calc.timing.schedule import PARTS

TOP = 10
REJECTED = 5
# What a search is told; it searches over every other layout field.
SEARCH_FIXED = ("global_batch", "seq_len", "dtype", "framework", "dropout")
SEARCHED = ("Searched: tp within a node dividing the heads, pp up to the layers, vpp up to 8 "
            "(e+l: the embedding and the loss split as two more layers, where the layers alone "
            "do not divide), "
            "cp in powers of two up to 8, ep dividing experts and dp, micro-batches in powers "
            "of two dividing B/dp, recompute none/selective/full, ZeRO 0-3 (0-1 with pp > 1), "
            "sequence parallelism with tp > 1; flash attention (on unless told otherwise), dtype, "
            "stack and dropout as given.")


class RankedLayout(Frozen):
    layout: Layout
    offload: str = Field("none", description="what lives off the GPU (calc.timing.offload)")
    step_time_s: float
    mfu: float
    tokens_per_s_per_gpu: float
    memory_per_gpu_bytes: float
    breakdown: dict[str, float]
    why: str = Field(description="against the best: the parts that cost it most, or memory")


class LayoutReport(Document):
    model: str
    title: str
    source: str
    gpu: str
    system: str
    gpus: int
    global_batch: int
    seq_len: int
    gpu_memory_bytes: int
    evaluated: int = Field(description="valid layouts priced")
    fitting: int = Field(description="of those, layouts that fit in memory")
    search_seconds: float
    best: list[RankedLayout] = Field(description="the fastest layouts that fit, best first")
    rejected: list[RankedLayout] = Field(description="faster layouts that do not fit")
    conventions: list[str]
    config: ConfigEcho | None = Field(None, description="the trainer config read (--from)")


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
        return (f"memory: {candidate.memory_bytes / GIB:,.1f} GiB > "
                f"{capacity / GIB:,.0f} GiB")
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


def _ranked(candidate: Candidate, best: Candidate | None, capacity: float, flops: float,
            gpus: int, peak: float, tokens: int, ties: int = 0) -> RankedLayout:
    step = candidate.time.step
    why = _why(candidate, best, capacity)
    return RankedLayout(layout=candidate.layout, offload=_placement(candidate),
                        step_time_s=step,
                        mfu=flops / (step * gpus * peak),
                        tokens_per_s_per_gpu=tokens / step / gpus,
                        memory_per_gpu_bytes=candidate.memory_bytes,
                        breakdown=candidate.time.breakdown,
                        why=why + (f" ({ties} more tie)" if ties else ""))


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
           run: RunConfig | None = None, **options: Any) -> LayoutReport:
    """Rank every valid layout of `model` on `gpus` GPUs for the run's `global_batch` sequences
    (`seq_len`, `dtype` default bf16, `framework` default megatron, `dropout` as current
    practice: off; options of calc.plan.options, or a RunConfig `run`). The offload options
    (offload_optimizer, offload_params: 'cpu' or 'nvme'; host_memory_gib, gpus_per_node,
    nvme_read_gb_s, nvme_write_gb_s) also price each layout offloaded where its ZeRO stage
    allows (calc.step's offload). `from_file` takes the model, batch, sequence, dtype, stack,
    dropout and offload from a trainer config (as calc.step does), the arguments given here over
    it; its parallel degrees are searched over, not fixed."""
    given = run_config(run, **options)
    allowed = (*SEARCH_FIXED, *options_of("offload"))
    unknown = sorted(set(given.given()) - set(allowed))
    if unknown:
        raise CalcError(f"layout: option(s) {', '.join(unknown)} are searched over, not given "
                        f"(given: {', '.join(allowed)})")
    echo, notes = None, []
    if from_file is not None:
        read = with_file(from_file, model, given, gpus, step=True)
        model, given, echo = read.model, read.run, read.echo
        notes = [f"From {from_file}: the model, batch, sequence length, dtype, stack, dropout "
                 f"and offload; its parallel degrees, micro-batch, recomputation and ZeRO stage "
                 f"are searched over, not fixed (`calc step --from` prices its own layout).",
                 *read.notes]
    if model is None:
        raise CalcError(f"model: {from_file} names no model calc knows; give a preset name, "
                        f"spec file or config.json as MODEL")
    fixed = {key: value for key, value in given.given("layout").items() if key in SEARCH_FIXED}
    offload = given.given("offload")
    if "global_batch" not in fixed:
        raise CalcError("global_batch: the search needs the sequences per step (--global-batch)")
    global_batch = int(fixed["global_batch"])
    dtype = fixed.get("dtype", "bf16")
    preset = resolve(model)
    setup, found = search_layouts(preset.spec, gpu=gpu, gpus=gpus, global_batch=global_batch,
                                  seq_len=fixed.get("seq_len"), system=system, dtype=dtype,
                                  framework=fixed.get("framework", "megatron"),
                                  dropout=fixed.get("dropout", CURRENT_PRACTICE["dropout"]),
                                  offload=offload)
    t = setup.seq_len
    flops = TRAIN_PER_FORWARD * count_flops(setup.spec, t).forward * global_batch * t
    best = found.ranked[0] if found.ranked else None
    args: dict[str, Any] = {"capacity": setup.capacity, "flops": flops, "gpus": gpus,
                            "peak": setup.gpu.peak_flops(dtype), "tokens": global_batch * t}

    def ranked(pairs: list[tuple[Candidate, int]]) -> list[RankedLayout]:
        return [_ranked(c, best, ties=ties, **args) for c, ties in pairs]

    return LayoutReport(
        model=preset.name, title=preset.title, source=preset.source, gpu=setup.gpu.name,
        system=setup.system.name, gpus=gpus, global_batch=global_batch, seq_len=t,
        gpu_memory_bytes=int(setup.capacity), evaluated=found.evaluated,
        fitting=len(found.ranked), search_seconds=found.seconds,
        best=ranked(_distinct(found.ranked, TOP)),
        rejected=ranked(_distinct(found.rejected, REJECTED,
                                  best.time.step if best else None)),
        conventions=[
            f"{found.evaluated:,} valid layouts priced (bench/layout.py times it); "
            f"{len(found.ranked):,} fit in {setup.gpu.memory_gib:g} GiB (calc.memory). "
            f"Layouts of equal predicted time are shown once, with how many tie.",
            SEARCHED,
            "Ranked by the step-time model of `calc step` (docs/step-time.md): the same "
            "constants for every layout, so the order is only as good as that model.",
            *([_offload_sentence(offload)] if _offload_asked(offload) else []),
            *notes,
        ],
        config=echo,
    )


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
