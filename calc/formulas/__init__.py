"""Closed-form sympy expressions, one per named component, each citing its source.

Modules: `params` (parameter counts), `mixers` (Mamba, gated DeltaNet, lightning-attention and
short-convolution layers: parameters, weights, convolution and scan FLOPs), `flops` (FLOPs per
token), `rules`
(published shortcuts), `training` (FLOPs, GPU-hours, days), `cost` (money, energy, CO2e),
`memory` (training memory per GPU), `finetune` (LoRA and QLoRA: adapters, a frozen base, step
FLOPs), `optimizer` (optimizer states that depend on the shapes), `offload`
(ZeRO-Offload/Infinity), `precision` (FP8/FP4 GEMMs), `inference` (KV cache, prefill and decode
time), `scaling` (compute-optimal N and D). `codegen` compiles them into calc/_compiled.py,
which is what calc evaluates; calc.reports.formulas shows them (text, LaTeX).

GROUPS lists every compiled function: its name and the expressions it returns (each
module built when one of its groups is first read).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

import sympy

# Each group: the module and the dict of it that holds the group's expressions.
_WHERE: dict[str, str] = {
    "params_per_layer": "params:PER_LAYER",
    "params_dense_ffn": "params:DENSE_FFN",
    "params_moe_ffn": "params:MOE_FFN",
    "params_mamba": "mixers:MAMBA",
    "params_deltanet": "mixers:DELTANET",
    "params_lightning": "mixers:LIGHTNING",
    "params_rwkv": "mixers:RWKV",
    "params_griffin": "mixers:GRIFFIN",
    "params_mlstm": "mixers:MLSTM",
    "params_short_conv": "mixers:SHORT_CONV",
    "params_cross_attention": "params:CROSS_ATTENTION",
    "params_indexer": "params:INDEXER",
    "params_components": "params:COMPONENTS",
    "params_summary": "params:SUMMARY",
    "flops_forward_components": "flops:FORWARD_PER_TOKEN",
    "flops": "flops:FLOPS",
    "rules_train_per_token": "rules:TRAIN_PER_TOKEN",
    "training": "training:TRAINING",
    "cost": "cost:COST",
    "memory_states": "memory:MODEL_STATES",
    "memory_activations": "memory:ACTIVATIONS",
    "memory_buffers": "memory:BUFFERS",
    "memory": "memory:MEMORY",
    "finetune_counts": "finetune:COUNTS",
    "finetune_states": "finetune:STATES",
    "finetune_memory": "finetune:MEMORY",
    "finetune_flops": "finetune:FLOPS",
    "optimizer_states": "optimizer:OPTIMIZER_STATES",
    "offload": "offload:OFFLOAD",
    "precision": "precision:PRECISION",
    "precision_memory": "precision:MEMORY",
    "precision_time": "precision:TIME",
    "inference": "inference:INFERENCE",
    "scaling_budget": "scaling:BUDGET",
    "scaling_rule": "scaling:RULE",
    "scaling_fit": "scaling:FIT",
    "scaling_loss": "scaling:LOSS",
    "scaling_layers": "scaling:SHAPE_LAYERS",
    "scaling_width": "scaling:SHAPE_WIDTH",
    "scaling_shape_params": "scaling:SHAPE_PARAMS",
}


class _Groups(Mapping[str, dict[str, sympy.Expr]]):
    """GROUPS: a group's module is imported, and its expressions built, when the group is first
    read. Building them all takes a fifth of a second, half of it finetune.FLOPS's cancel;
    `memory --formula` reads the groups of four modules (and builds what they import, a third
    of the work), `MODEL --formula` none (bench/formulas.py)."""

    def __getitem__(self, name: str) -> dict[str, sympy.Expr]:
        module, _, attribute = _WHERE[name].partition(":")
        return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)


GROUPS: Mapping[str, dict[str, sympy.Expr]] = _Groups()

# The groups each planning command shows with --formula.
COMMAND_GROUPS: dict[str, tuple[str, ...]] = {
    "memory": ("memory_states", "memory_activations", "memory", "finetune_states",
               "finetune_memory", "precision_memory", "offload"),
    "infer": ("inference",),
    "optimal": ("scaling_budget", "scaling_rule", "scaling_fit", "scaling_loss",
                "scaling_layers", "scaling_width", "scaling_shape_params"),
}
