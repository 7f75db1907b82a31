"""What a run's cost and footprint are asked for: a price per GPU-hour, a PUE, a grid carbon
intensity (calc.formulas.cost prices them)."""

from __future__ import annotations

from pydantic import Field

from calc.numbers import annotated
from calc.spec.model import Frozen

Price, PUE, GridIntensity = annotated("price"), annotated("pue"), annotated("grid_intensity")


class Costing(Frozen):
    """A price, a PUE and a grid intensity; energy is shown when any of the last two is given,
    or when asked."""

    price: Price | None = Field(None, description="price of one GPU-hour (any currency; calc "
                                                  "has no built-in prices)")
    pue: PUE | None = Field(None, description="power usage effectiveness of the data centre "
                                              "(implies energy)")
    grid_intensity: GridIntensity | None = Field(
        None, description="grid carbon intensity, g CO2e per kWh (implies energy)")
    energy: bool = Field(False, description="energy from the GPU's TDP × GPU-hours × PUE")
    goodput: float = Field(
        1.0, gt=0, le=1, description="share of the wall-clock time that trains (failures, "
                                     "restarts, checkpoints and evaluation take the rest): "
                                     "GPU-hours are the step time's divided by it; default 1, "
                                     "the ideal")

    @property
    def wants_energy(self) -> bool:
        return self.energy or self.pue is not None or self.grid_intensity is not None

    @property
    def asked(self) -> bool:
        """A price or the energy was asked for."""
        return self.price is not None or self.wants_energy


NOTHING_ASKED = Costing.model_construct()  # no price, PUE or energy, goodput 1: built once
