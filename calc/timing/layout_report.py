"""The fastest layouts of a model on N GPUs: `calc.layout("llama2-70b", gpu="a100", gpus=1024,
global_batch=1024)` ranks every valid layout that fits in memory by predicted step time, and
says why the runners-up and the fastest layouts that do not fit lost."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from calc.errors import CalcError, one_line
from calc.plan.memory import symbol_values_for
from calc.presets import Preset, get_gpu, get_system, system_for_gpu
from calc.report import Document, resolve, sequence_length
from calc.spec import ModelSpec, TrainingMemory
from calc.spec.layout import Layout, make_layout
from calc.spec.model import Frozen
from calc.timing.constants import load_constants
from calc.timing.network import network_for
from calc.timing.operators import model_terms
from calc.timing.schedule import PARTS, device_for
from calc.timing.search import Candidate, search

TOP = 10
REJECTED = 5
MEMORY_DTYPE = {"fp8": "bf16"}


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
            gpus: int, peak: float, tokens: int) -> RankedLayout:
    step = candidate.time.step
    return RankedLayout(layout=candidate.layout, step_time_s=step,
                        mfu=flops / (step * gpus * peak),
                        tokens_per_s_per_gpu=tokens / step / gpus,
                        memory_per_gpu_bytes=candidate.memory_bytes,
                        breakdown=candidate.time.breakdown,
                        why=_why(candidate, best, capacity))


def layout(model: str | ModelSpec | Preset, *, gpu: str, gpus: int, global_batch: int,
           seq_len: int | None = None, system: str | None = None, dtype: str = "bf16",
           framework: str = "megatron", dropout: bool = True) -> LayoutReport:
    """Rank every valid layout of `model` on `gpus` GPUs for `global_batch` sequences."""
    from calc.evaluate import count_flops

    preset = resolve(model)
    spec = preset.spec
    t = sequence_length(spec, seq_len)
    fixed = {"dtype": dtype, "framework": framework, "dropout": dropout}
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
    terms = model_terms(spec, t)
    found = search(spec, terms, device_spec, device, network, framework_constants, base, gpus,
                   global_batch, fixed)
    capacity = device_spec.memory_gib * 2**30
    flops = 3 * count_flops(spec, t).forward * global_batch * t
    peak = device_spec.peak_flops(dtype)
    best = found.ranked[0] if found.ranked else None
    args: dict[str, Any] = {"capacity": capacity, "flops": flops, "gpus": gpus, "peak": peak,
                            "tokens": global_batch * t}
    faster, seen = [], set()
    for candidate in found.rejected:  # one of each step time: ZeRO variants repeat themselves
        if best is not None and candidate.time.step >= best.time.step:
            break
        if round(candidate.time.step, 9) not in seen:
            seen.add(round(candidate.time.step, 9))
            faster.append(candidate)
    return LayoutReport(
        model=preset.name, title=preset.title, source=preset.source, gpu=device_spec.name,
        system=platform.name, gpus=gpus, global_batch=global_batch, seq_len=t,
        gpu_memory_bytes=int(capacity), evaluated=found.evaluated, fitting=len(found.ranked),
        search_seconds=found.seconds,
        best=[_ranked(c, best, **args) for c in found.ranked[:TOP]],
        rejected=[_ranked(c, best, **args) for c in faster[:REJECTED]],
        conventions=[
            f"{found.evaluated:,} valid layouts priced in {found.seconds:.2f} s; "
            f"{len(found.ranked):,} fit in {device_spec.memory_gib:g} GiB (calc.memory).",
            "Searched: tp within a node dividing the heads, pp up to the layers, vpp dividing "
            "the layers, cp in powers of two up to 8, ep dividing experts and dp, "
            "micro-batches in powers of two dividing B/dp, recompute none/selective/full, ZeRO 0-3 (0-1 with "
            "pp > 1), sequence parallelism with tp > 1; flash attention on.",
            "Ranked by the step-time model of `calc step` (docs/step-time.md): the same "
            "constants for every layout, so the order is only as good as that model.",
        ],
    )
