"""Training cost: total FLOPs, GPU-hours and days (DESIGN.md, "Counting conventions").

GPU-hours = training FLOPs / (dense peak of the GPU at the dtype × MFU) / 3600 — the source
chapter's worked example (1.3, "训练成本": 8.1e22 / (312e12 × 0.4) ≈ 6.5e8 GPU-seconds ≈ 180,000
GPU-hours for Llama 2 7B). MFU is model FLOPs utilisation as PaLM defines it (Chowdhery et al.
2022, Appendix B): model FLOPs achieved over peak, recomputation excluded.
"""

from __future__ import annotations

import sympy

from calc.symbols import D, F, K, R, u

SECONDS_PER_HOUR = 3600
HOURS_PER_DAY = 24

TRAINING_FLOPS = F * D  # F: training FLOPs per token (3 × forward), D: tokens
GPU_HOURS = TRAINING_FLOPS / (R * u * SECONDS_PER_HOUR)
DAYS = GPU_HOURS / (K * HOURS_PER_DAY)  # wall-clock days on K GPUs at that MFU

TRAINING: dict[str, sympy.Expr] = {
    "flops": TRAINING_FLOPS,
    "gpu_hours": GPU_HOURS,
    "days": DAYS,
}
