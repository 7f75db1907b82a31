"""Closed-form sympy expressions, one per named component, each citing its source.

Modules: `params` (parameter counts), `flops` (FLOPs per token), `rules` (published shortcuts),
`training` (FLOPs, GPU-hours, days), `memory` (training memory per GPU), `inference` (KV cache,
prefill and decode time), `scaling` (compute-optimal N and D). `codegen` compiles them into
calc/_compiled.py, which is what calc evaluates; calc.reports.formulas shows them (text, LaTeX).

GROUPS lists every compiled function: its name and the expressions it returns.
"""

from __future__ import annotations

import sympy

from calc.formulas import flops, inference, memory, params, rules, scaling, training

GROUPS: dict[str, dict[str, sympy.Expr]] = {
    "params_per_layer": params.PER_LAYER,
    "params_dense_ffn": params.DENSE_FFN,
    "params_moe_ffn": params.MOE_FFN,
    "params_components": params.COMPONENTS,
    "params_summary": params.SUMMARY,
    "flops_forward_components": flops.FORWARD_PER_TOKEN,
    "flops": flops.FLOPS,
    "rules_train_per_token": rules.TRAIN_PER_TOKEN,
    "training": training.TRAINING,
    "memory_states": memory.MODEL_STATES,
    "memory_activations": memory.ACTIVATIONS,
    "memory": memory.MEMORY,
    "inference": inference.INFERENCE,
    "scaling_budget": scaling.BUDGET,
    "scaling_rule": scaling.RULE,
    "scaling_fit": scaling.FIT,
    "scaling_loss": scaling.LOSS,
    "scaling_layers": scaling.SHAPE_LAYERS,
    "scaling_width": scaling.SHAPE_WIDTH,
    "scaling_shape_params": scaling.SHAPE_PARAMS,
}

# The groups each planning command shows with --formula.
COMMAND_GROUPS: dict[str, tuple[str, ...]] = {
    "memory": ("memory_states", "memory_activations", "memory"),
    "infer": ("inference",),
    "optimal": ("scaling_budget", "scaling_rule", "scaling_fit", "scaling_loss",
                "scaling_layers", "scaling_width", "scaling_shape_params"),
}
