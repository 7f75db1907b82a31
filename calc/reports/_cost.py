"""The cost, energy and emissions of a priced training run (calc.formulas.cost), as the main
report and compare show them when asked."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from calc.counting import DEFAULT_PUE, DEFAULT_PUE_NOTE
from calc.errors import CalcError, one_line
from calc.evaluate import run_cost
from calc.spec import GPU
from calc.spec.model import Frozen


class Costing(Frozen):
    """What a run's cost and footprint are asked for: a price, a PUE, a grid intensity."""

    price: float | None = Field(None, gt=0, description="price of one GPU-hour")
    pue: float | None = Field(None, ge=1, le=10, description="power usage effectiveness")
    grid_intensity: float | None = Field(None, ge=0, le=10_000, description="g CO2e per kWh")
    energy: bool = Field(False, description="show energy even without pue or grid_intensity")

    @property
    def wants_energy(self) -> bool:
        return self.energy or self.pue is not None or self.grid_intensity is not None


def costing(price: float | None, pue: float | None, grid_intensity: float | None,
            energy: bool) -> Costing | None:
    """The validated request, or None when nothing was asked."""
    try:
        asked = Costing(price=price, pue=pue, grid_intensity=grid_intensity, energy=energy)
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    return asked if asked.price is not None or asked.wants_energy else None


def priced(asked: Costing | None, gpu: GPU | None, gpu_hours: float | None) -> dict[str, Any]:
    """The cost, energy and emissions fields of a TrainingReport (empty when not asked)."""
    if asked is None or gpu is None or gpu_hours is None:
        return {}
    if asked.wants_energy and gpu.tdp_w is None:
        raise CalcError(f"energy: {gpu.name} has no tdp_w in the GPU catalogue, so its energy "
                        f"is unknown; leave out pue/grid_intensity/energy")
    pue = DEFAULT_PUE if asked.pue is None else asked.pue
    money = run_cost(gpu_hours, asked.price, gpu.tdp_w if asked.wants_energy else None, pue,
                     asked.grid_intensity)
    return {"price": asked.price, **money, "grid_intensity": asked.grid_intensity,
            "pue": pue if asked.wants_energy else None,
            "pue_source": (DEFAULT_PUE_NOTE if asked.pue is None else "given")
            if asked.wants_energy else None}
