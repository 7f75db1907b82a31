"""Low-precision GEMMs (calc.spec.gemm_precision): what runs in FP8/FP4, their weight copies, and
the peak a training step sees.

The layers' projections run all their GEMMs in the low-precision format: forward, input gradient
and (for trained weights) weight gradient, WEIGHTS_PASSES of calc.formulas.finetune. The LM head,
the routers, attention's QKᵀ and A·V, the other mixers' scans and convolutions and the LoRA
adapters stay at the training dtype. A step of
F FLOPs, F_8 of them at peak R_8 and the rest at R, takes F_8/R_8 + (F − F_8)/R seconds at full
utilisation: the effective peak is F over that (a harmonic mean weighted by FLOPs).
"""

from __future__ import annotations

import sympy

from calc.formulas import finetune, flops, params
from calc.symbols import F_8, R_8, F, L_moe, R, V_o, d, i_z3, n_dp, q_8

# the LM head (V_o rows) and the routers stay in the 16-bit dtype
PROJECTIONS_PER_TOKEN = (flops.WEIGHT_FLOPS_PER_TOKEN - flops.FMA * V_o * d
                         - flops.FMA * L_moe * params.ROUTER_WEIGHTS
                         - flops.SCANS_PER_TOKEN - flops.CONVS_PER_TOKEN)

PRECISION: dict[str, sympy.Expr] = {
    # forward FLOPs per token of the projections that run in the low-precision format
    "low_precision_forward": PROJECTIONS_PER_TOKEN,
    "low_precision_train": finetune.WEIGHTS_PASSES * PROJECTIONS_PER_TOKEN,
}
MEMORY: dict[str, sympy.Expr] = {
    # the cached casts of each projection weight, on the most loaded GPU
    "weight_copies": q_8 * finetune.QUANTISED_PER_GPU / n_dp**i_z3,
}
TIME: dict[str, sympy.Expr] = {
    "effective_peak": F / (F_8 / R_8 + (F - F_8) / R),
}
