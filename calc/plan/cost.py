"""The cost, energy and emissions of a priced run (calc.formulas.cost), when asked for, and the
GPU-hours and days a token budget takes at a predicted rate."""

from __future__ import annotations

from dataclasses import dataclass

from calc.counting import DEFAULT_PUE, DEFAULT_PUE_NOTE, HOURS_PER_DAY, SECONDS_PER_HOUR
from calc.errors import CalcError
from calc.evaluate import run_cost
from calc.spec import GPU
from calc.spec.costing import Costing


@dataclass(frozen=True)
class Cost:
    """What `gpu_hours` cost, in the price's currency, and what they draw and emit."""

    price: float | None
    cost: float | None
    energy_kwh: float | None
    co2e_kg: float | None
    grid_intensity: float | None
    pue: float | None  # the PUE the energy assumes (None: no energy asked)
    pue_source: str | None  # "given", or the default's source


def cost(asked: Costing, gpu: GPU, gpu_hours: float) -> Cost | None:
    """The cost of `gpu_hours` on `gpu` as `asked` (None when nothing was asked); CalcError
    when energy is asked of a GPU without a TDP."""
    if not asked.asked:
        return None
    if asked.wants_energy and gpu.tdp_w is None:
        raise CalcError(f"energy: {gpu.name} has no tdp_w in the GPU catalogue, so its energy "
                        f"is unknown; leave out pue/grid_intensity/energy")
    pue = DEFAULT_PUE if asked.pue is None else asked.pue
    money = run_cost(gpu_hours, asked.price, gpu.tdp_w if asked.wants_energy else None, pue,
                     asked.grid_intensity)
    energy = asked.wants_energy
    return Cost(price=asked.price, cost=money["cost"], energy_kwh=money["energy_kwh"],
                co2e_kg=money["co2e_kg"], grid_intensity=asked.grid_intensity,
                pue=pue if energy else None,
                pue_source=(DEFAULT_PUE_NOTE if asked.pue is None else "given")
                if energy else None)


@dataclass(frozen=True)
class RunTime:
    """What a token budget takes at a predicted rate: GPU-hours (every hour a step, and divided
    by the goodput asked), days on the run's GPUs, and their cost when asked."""

    tokens: float
    gpu_hours_ideal: float
    goodput: float
    gpu_hours: float
    days: float
    cost: Cost | None


def run_time(tokens: float, tokens_per_s_per_gpu: float, gpus: int, gpu: GPU,
             asked: Costing | None = None) -> RunTime:
    """GPU-hours and days of `tokens` at `tokens_per_s_per_gpu` on `gpus` GPUs, over the
    goodput asked (the share of wall-clock time that trains; default 1), and their cost as
    `asked` (calc.formulas.cost)."""
    ideal = tokens / tokens_per_s_per_gpu / SECONDS_PER_HOUR
    goodput = asked.goodput if asked is not None else 1.0
    gpu_hours = ideal / goodput
    return RunTime(tokens, ideal, goodput, gpu_hours, gpu_hours / gpus / HOURS_PER_DAY,
                   cost(asked, gpu, gpu_hours) if asked is not None else None)


def training_tokens(tokens: float | None, dataset_tokens: float | None,
                    epochs: float | None) -> float | None:
    """The tokens GPU-hours are priced for: `tokens`, or `dataset_tokens` × `epochs`."""
    if epochs is not None and dataset_tokens is None:
        raise CalcError(f"epochs={epochs:g}: give dataset_tokens, the tokens of one epoch")
    if epochs is not None and not epochs > 0:
        raise CalcError(f"epochs={epochs!r}: expected a positive number of passes")
    if dataset_tokens is None:
        return tokens
    if tokens is not None:
        raise CalcError("tokens and dataset_tokens: give one (dataset_tokens × epochs is the "
                        "tokens)")
    if not dataset_tokens > 0:
        raise CalcError(f"dataset_tokens={dataset_tokens!r}: expected a positive token count")
    return dataset_tokens * (1 if epochs is None else epochs)
