"""The cost, energy and emissions of a priced run (calc.formulas.cost), when asked for."""

from __future__ import annotations

from dataclasses import dataclass

from calc.counting import DEFAULT_PUE, DEFAULT_PUE_NOTE
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
