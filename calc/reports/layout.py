"""The fastest layouts of a model on N GPUs: `calc.layout("llama2-70b", gpu="a100", gpus=1024,
global_batch=1024)` ranks every valid layout that fits in memory by predicted step time, and
says why the runners-up and the fastest layouts that do not fit lost."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import Field, ValidationError

from calc.counting import TRAIN_PER_FORWARD
from calc.document import Document
from calc.errors import CalcError, one_line
from calc.evaluate import count_flops
from calc.presets import (
    Preset,
    get_gpu,
    get_system,
    resolve,
    sequence_length,
    system_for_gpu,
)
from calc.reports.memory import symbol_values_for
from calc.spec import GPU, ModelSpec, System, TrainingMemory
from calc.spec.layout import Layout, make_layout
from calc.spec.model import Frozen
from calc.timing.constants import load_constants
from calc.timing.network import network_for
from calc.timing.operators import model_terms
from calc.timing.schedule import PARTS, device_for
from calc.timing.search import Candidate, Search, search

TOP = 10
REJECTED = 5
MEMORY_DTYPE = {"fp8": "bf16"}
SEARCHED = ("Searched: tp within a node dividing the heads, pp up to the layers, vpp up to 8 "
            "(e+l: the embedding and the loss split as two more layers, where the layers alone "
            "do not divide), "
            "cp in powers of two up to 8, ep dividing experts and dp, micro-batches in powers "
            "of two dividing B/dp, recompute none/selective/full, ZeRO 0-3 (0-1 with pp > 1), "
            "sequence parallelism with tp > 1; flash attention (on unless told otherwise), dtype, "
            "stack and dropout as given.")


class RankedLayout(Frozen):
    layout: Layout
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


def _why(candidate: Candidate, best: Candidate | None, capacity: float) -> str:
    if not candidate.fits:
        return (f"memory: {candidate.memory_bytes / 2**30:,.1f} GiB > "
                f"{capacity / 2**30:,.0f} GiB")
    if best is None or candidate is best:
        return "fastest"
    extra = {part: candidate.time.breakdown[part] - best.time.breakdown[part] for part in PARTS}
    worst = sorted((value, part) for part, value in extra.items() if value > 1e-9)[-2:]
    if not worst:
        return "as fast as the best"
    return "; ".join(f"+{value:.3g} s {part.replace('_', ' ')}" for value, part in
                     reversed(worst))


def _ranked(candidate: Candidate, best: Candidate | None, capacity: float, flops: float,
            gpus: int, peak: float, tokens: int, ties: int = 0) -> RankedLayout:
    step = candidate.time.step
    why = _why(candidate, best, capacity)
    return RankedLayout(layout=candidate.layout, step_time_s=step,
                        mfu=flops / (step * gpus * peak),
                        tokens_per_s_per_gpu=tokens / step / gpus,
                        memory_per_gpu_bytes=candidate.memory_bytes,
                        breakdown=candidate.time.breakdown,
                        why=why + (f" ({ties} more tie)" if ties else ""))


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

    @property
    def capacity(self) -> float:
        return self.gpu.memory_gib * 2**30


def search_layouts(spec: ModelSpec, *, gpu: str, gpus: int, global_batch: int,
                   seq_len: int | None = None, system: str | None = None, dtype: str = "bf16",
                   framework: str = "megatron", dropout: bool = False,
                   flash_attention: bool = True,
                   price_rejected: bool = True) -> tuple[SearchSetup, Search]:
    """Every valid layout of `spec` priced (calc.timing.search), with what priced them."""
    t = sequence_length(spec, seq_len)
    fixed = {"dtype": dtype, "framework": framework, "dropout": dropout,
             "flash_attention": flash_attention}
    make_layout(None, global_batch=global_batch, seq_len=t, **fixed)  # checks those fields
    constants = load_constants()
    device_spec = get_gpu(gpu)
    platform = get_system(system) if system else system_for_gpu(device_spec.name)
    framework_constants = constants.framework(framework)
    device = device_for(device_spec, dtype, constants, framework_constants)
    network = network_for(platform, constants.network)
    try:
        options = TrainingMemory(gpu=device_spec.name, seq_len=t, dropout=dropout,
                                 dtype=MEMORY_DTYPE.get(dtype, dtype))
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    base = symbol_values_for(spec, options, device_spec)
    found = search(spec, model_terms(spec, t), device_spec, device, network,
                   framework_constants, base, gpus, global_batch, fixed, price_rejected)
    return SearchSetup(spec, device_spec, platform, t, fixed, base, network.gpus_per_node), found


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


def layout(model: str | ModelSpec | Preset, *, gpu: str, gpus: int, global_batch: int,
           seq_len: int | None = None, system: str | None = None, dtype: str = "bf16",
           framework: str = "megatron", dropout: bool = False) -> LayoutReport:
    """Rank every valid layout of `model` on `gpus` GPUs for `global_batch` sequences."""
    preset = resolve(model)
    setup, found = search_layouts(preset.spec, gpu=gpu, gpus=gpus, global_batch=global_batch,
                                  seq_len=seq_len, system=system, dtype=dtype,
                                  framework=framework, dropout=dropout)
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
        ],
    )
