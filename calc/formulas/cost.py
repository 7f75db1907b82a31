"""What a training run costs: money at a price per GPU-hour, energy, and emissions.

Energy = GPU-hours × board power (TDP) × PUE, the formula LLaMA reports its footprint with
(Touvron et al. 2023, §6 "Carbon footprint", after Wu et al. 2022): it counts the GPUs at their
rated power and the data centre's overhead through the PUE; CPUs, network and storage only as far
as the PUE covers them. Emissions = energy × the grid's carbon intensity.
"""

from __future__ import annotations

import sympy

from calc.symbols import PUE, H, I_grid, W_gpu, c_h

WH_PER_KWH = 1000
G_PER_KG = 1000

ENERGY_KWH = H * W_gpu * PUE / WH_PER_KWH
COST: dict[str, sympy.Expr] = {
    "cost": H * c_h,
    "energy_kwh": ENERGY_KWH,
    "co2e_kg": ENERGY_KWH * I_grid / G_PER_KG,
}
