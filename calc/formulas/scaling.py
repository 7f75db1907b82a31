"""Compute-optimal sizing: a FLOP budget → parameters N and tokens D (Hoffmann et al. 2022).

Both routes spend the budget as C = 6·N·D (Kaplan et al. 2020 §2.1; Hoffmann et al. 2022 §3,
"C ≈ 6ND"):
- the rule of thumb D = ρ·N, ρ tokens per parameter (calc.counting.TOKENS_PER_PARAMETER, from
  Hoffmann et al. 2022 Table 3; Chinchilla itself: 70B on 1.4T), hence N = √(C / 6ρ);
- approach 3's fitted loss L(N, D) = E + A/N^α + B/D^β (§3.3, Eq. 2 and Eq. 4): minimised under
  C = 6ND it gives N_opt = G·(C/6)^(β/(α+β)), D_opt = G⁻¹·(C/6)^(α/(α+β)),
  G = (αA / βB)^(1/(α+β)). The constants are in calc.reports.optimal with their source.

A budget in GPU-days inverts calc.formulas.training: C = K·t·86400·R·u (K GPUs, t days, dense
peak R, MFU u). A shape for N follows Kaplan et al. 2020 Eq. 2.1, N ≈ 12·L·d² (non-embedding,
d_attn = d, d_ff = 4d; SwiGLU at d_ff = 8d/3 gives the same 12d²), at an aspect ratio r = d/L.
"""

from __future__ import annotations

import sympy

from calc.symbols import A_fit, B_fit, C, D, E_irr, K, L, N, R, alpha, beta, d, r, rho, t_days, u

FLOPS_PER_PARAMETER_TOKEN = 6  # C = 6·N·D: forward 2N, backward 4N per token
SECONDS_PER_DAY = 86_400
PARAMS_PER_LAYER_D2 = 12  # Kaplan Eq. 2.1: 4d² attention + 8d² MLP per layer

BUDGET: dict[str, sympy.Expr] = {
    "flops": K * t_days * SECONDS_PER_DAY * R * u,
}

RULE_PARAMS = sympy.sqrt(C / (FLOPS_PER_PARAMETER_TOKEN * rho))
RULE: dict[str, sympy.Expr] = {
    "params": RULE_PARAMS,
    "tokens": rho * RULE_PARAMS,
}

_G = (alpha * A_fit / (beta * B_fit)) ** (1 / (alpha + beta))
_PER_STEP = C / FLOPS_PER_PARAMETER_TOKEN
_FIT_PARAMS = _G * _PER_STEP ** (beta / (alpha + beta))
_FIT_TOKENS = _PER_STEP ** (alpha / (alpha + beta)) / _G
FIT: dict[str, sympy.Expr] = {
    "params": _FIT_PARAMS,
    "tokens": _FIT_TOKENS,
    "tokens_per_parameter": _FIT_TOKENS / _FIT_PARAMS,
}

LOSS: dict[str, sympy.Expr] = {
    "loss": E_irr + A_fit / N**alpha + B_fit / D**beta,
}

# A shape for N: layers at aspect ratio r (d = r·L); then, L rounded to a whole number, the width
# that gives N; then the 12·L·d² of the rounded shape.
SHAPE_LAYERS: dict[str, sympy.Expr] = {
    "layers": (N / (PARAMS_PER_LAYER_D2 * r**2)) ** sympy.Rational(1, 3),
}
SHAPE_WIDTH: dict[str, sympy.Expr] = {
    "width": sympy.sqrt(N / (PARAMS_PER_LAYER_D2 * L)),
}
SHAPE_PARAMS: dict[str, sympy.Expr] = {
    "params": PARAMS_PER_LAYER_D2 * L * d**2,
}
