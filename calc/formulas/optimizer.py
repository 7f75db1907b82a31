"""Optimizer states whose size depends on the shapes, not only on the parameter count.

Adafactor (Shazeer & Stern 2018 §3) keeps for an n × m matrix a row and a column statistic, n + m
values instead of n·m, and a full second moment for vectors; Hugging Face's Adafactor keeps no
first moment by default (beta1=None). Muon (Jordan et al. 2024; Liu et al. 2025, "Muon is
Scalable for LLM Training", §2) orthogonalises the update of each hidden-layer matrix and keeps
one momentum for it; embeddings, the LM head and the vectors take AdamW. Here "hidden matrices"
are the weight matrices inside the layers (calc.formulas.finetune.QUANTISED: projections,
routers, experts), "2-D" adds the embedding tables and an untied LM head. Adapters (LoRA) are
matrices too: A is n_in × r, B is r × n_out, so Adafactor keeps n_in + n_out + 2r for a pair.
"""

from __future__ import annotations

import sympy

from calc.formulas.finetune import (
    ADAPTER_TARGETS_PER_LAYER,
    ADAPTERS_TOTAL,
    FFN_ADAPTERS_PER_LAYER,
    QUANTISED,
)
from calc.symbols import (
    E,
    E_s,
    L,
    L_moe,
    N,
    P,
    V,
    d,
    d_e,
    d_ff,
    d_qk,
    d_rope,
    d_s,
    d_v,
    h,
    h_kv,
    i_glu,
    i_mla,
    i_qlora,
    i_rel,
    i_shared_gate,
    i_tied,
    r_a,
    r_kv,
    r_q,
)

MHA = 1 - i_mla


def _ffn_sides(width: sympy.Expr) -> sympy.Expr:
    """Rows + columns of an FFN's matrices: up (and gate) d × width, down width × d."""
    return (2 + i_glu) * (d + width)


# Rows + columns of every matrix in one layer (calc.formulas.params's shapes).
LAYER_SIDES = (
    MHA * ((d + h * d_qk) + (d + h_kv * d_qk) + (d + h_kv * d_v))
    + i_mla * (i_qlora * ((d + r_q) + (r_q + h * d_qk)) + (1 - i_qlora) * (d + h * d_qk)
               + (d + r_kv + d_rope) + (r_kv + h * (d_qk - d_rope + d_v)))
    + (h * d_v + d) + i_rel * (d + h * d_qk))
SIDES = (L * LAYER_SIDES + (L - L_moe) * _ffn_sides(d_ff)
         + L_moe * ((d + E) + E * _ffn_sides(d_e) + E_s * _ffn_sides(d_s)
                    + i_shared_gate * (d + 1))
         + (V + d) + sympy.Min(P, 1) * (P + d) + (1 - i_tied) * (V + d))
TWO_D = QUANTISED + V * d + P * d + (1 - i_tied) * V * d
ADAPTER_COUNT = (L * ADAPTER_TARGETS_PER_LAYER
                 + FFN_ADAPTERS_PER_LAYER * ((L - L_moe) + L_moe * (E + E_s)))

FP32 = 4  # bytes of one optimizer-state value
ADAMW = 2 * FP32  # m and v

# Optimizer-state bytes of the trained parameters: the whole model, or the adapters only.
OPTIMIZER_STATES: dict[str, sympy.Expr] = {
    "adafactor": FP32 * (SIDES + (N - TWO_D)),
    "muon": FP32 * QUANTISED + ADAMW * (N - QUANTISED),
    "adafactor_adapters": FP32 * (ADAPTERS_TOTAL / sympy.Max(r_a, 1) + 2 * r_a * ADAPTER_COUNT),
    "muon_adapters": FP32 * ADAPTERS_TOTAL,
}
