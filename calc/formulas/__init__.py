"""Closed-form sympy expressions, one per named component, each citing its source.

Modules: `params` (parameter counts), `flops` (FLOPs per token), `rules` (published shortcuts),
`training` (FLOPs, GPU-hours, days). `codegen` compiles them into calc/_compiled.py, which is
what calc evaluates; `display` renders them as text and LaTeX.

GROUPS lists every compiled function: its name and the expressions it returns.
"""

from __future__ import annotations

import sympy

from calc.formulas import flops, params, rules, training

GROUPS: dict[str, dict[str, sympy.Expr]] = {
    "params_per_layer": params.PER_LAYER,
    "params_dense_ffn": params.DENSE_FFN,
    "params_moe_ffn": params.MOE_FFN,
    "params_once": params.ONCE,
    "params_components": params.COMPONENTS,
    "params_summary": params.SUMMARY,
    "flops_forward_components": flops.FORWARD_PER_TOKEN,
    "flops": flops.FLOPS,
    "rules_train_per_token": rules.TRAIN_PER_TOKEN,
    "training": training.TRAINING,
}
