"""Training cost: total FLOPs, GPU-hours and days (calc.counting.gpu_hours_sentence prints it).

GPU-hours = training FLOPs / (dense peak of the GPU at the dtype × MFU) / 3600: the definition of
MFU solved for time. MFU is model FLOPs utilisation as PaLM defines it (Chowdhery et al. 2022,
Appendix B): model FLOPs achieved over peak, recomputation excluded.
"""

from __future__ import annotations

import sympy

from calc.counting import HOURS_PER_DAY, SECONDS_PER_HOUR
from calc.symbols import D, F, K, R, u

TRAINING_FLOPS = F * D  # F: training FLOPs per token (3 × forward), D: tokens
GPU_HOURS = TRAINING_FLOPS / (R * u * SECONDS_PER_HOUR)
DAYS = GPU_HOURS / (K * HOURS_PER_DAY)  # wall-clock days on K GPUs at that MFU

TRAINING: dict[str, sympy.Expr] = {
    "flops": TRAINING_FLOPS,
    "gpu_hours": GPU_HOURS,
    "days": DAYS,
}
