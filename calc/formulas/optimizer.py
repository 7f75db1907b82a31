"""Optimizer states whose size depends on the shapes, not only on the parameter count.

Adafactor (Shazeer & Stern 2018 §3) keeps for an n × m matrix a row and a column statistic, n + m
values instead of n·m, and a full second moment for vectors; Hugging Face's Adafactor keeps no
first moment by default (beta1=None). Muon (Jordan et al. 2024; Liu et al. 2025, "Muon is
Scalable for LLM Training", §2) orthogonalises the update of each hidden-layer matrix and keeps
one momentum for it; embeddings, the LM head and the vectors take AdamW. Here "hidden matrices"
are the weight matrices inside the layers (calc.formulas.finetune.QUANTISED: projections,
routers, experts, the other mixers' projections), "2-D" adds the embedding tables and an
untied LM head. Adapters (LoRA) are matrices too: A is n_in × r, B is r × n_out, so Adafactor
keeps n_in + n_out + 2r for a pair.
"""

from __future__ import annotations

import sympy

from calc.formulas import mixers, params
from calc.formulas.finetune import ADAPTER_PAIRS, ADAPTERS_TOTAL, QUANTISED
from calc.symbols import (
    E_0,
    E,
    E_s,
    H_ml,
    H_v,
    L_dn,
    L_gr,
    L_la,
    L_ml,
    L_moe,
    L_rw,
    L_sc,
    L_ssm,
    N,
    N_s,
    P,
    R_dt,
    V,
    V_o,
    d,
    d_e,
    d_ff,
    d_gr,
    d_in,
    d_mk,
    d_mv,
    d_qk,
    d_rope,
    d_rw,
    d_s,
    d_v,
    g_o,
    h,
    h_kv,
    i_glu,
    i_kev,
    i_lg,
    i_mla,
    i_og,
    i_qlora,
    i_rel,
    i_shared_gate,
    i_tied,
    r_a,
    r_kv,
    r_o,
    r_q,
)

MHA = 1 - i_mla


def _ffn_sides(width: sympy.Expr) -> sympy.Expr:
    """Rows + columns of an FFN's matrices: up (and gate) d × width, down width × d."""
    return (2 + i_glu) * (d + width)


# Rows + columns of W_K and W_V (none of W_V where the keys are the values; none of either on
# the kv-shared layers).
KV_SIDES = MHA * ((d + h_kv * d_qk) + (1 - i_kev) * (d + h_kv * d_v))
# Rows + columns of every matrix in one layer (calc.formulas.params's shapes).
# W_Q through a latent (MLA's or DeepSeek-V4's): d × r_q and r_q × h·d_qk; a grouped W_O
# (DeepSeek-V4's o_a_proj, one g_o·r_o × h·d_v/g_o matrix, and o_b_proj g_o·r_o × d).
LAYER_SIDES = (
    i_qlora * ((d + r_q) + ((1 + i_lg) * r_q + h * d_qk)) + (1 - i_qlora) * (d + h * d_qk)
    + KV_SIDES
    + i_mla * ((d + r_kv + d_rope) + (r_kv + h * (d_qk - d_rope + d_v)))
    + (1 - i_og) * (h * d_v + d) + i_og * ((g_o * r_o + h * d_v / g_o) + (g_o * r_o + d))
    + i_rel * (d + h * d_qk))
# The other mixers' projections (calc.formulas.mixers); their conv kernels, A, D and Δ biases are
# vectors here (a full second moment).
MIXER_SIDES = (L_ssm * ((d + mixers.IN_WIDTH) + mixers.M1 * ((d_in + R_dt + 2 * N_s)
                                                            + (R_dt + d_in)) + (d_in + d))
               + L_dn * ((d + 2 * mixers.DN_KEYS + 2 * mixers.DN_VALUES) + (d + 2 * H_v)
                         + (mixers.DN_VALUES + d))
               + L_la * ((d + 3 * mixers.LA_WIDTH) + (d + mixers.LA_WIDTH)
                         + (mixers.LA_WIDTH + d))
               + L_rw * (3 * (d + d_rw) + (d_rw + d) + (d + d))
               # Griffin: linear_y, linear_x, linear_out, and the two block-diagonal gates, each
               # a 3-D tensor (blocks × w_gr × w_gr) that Adafactor factors over its last two
               # dimensions (transformers' Adafactor._get_options: any tensor of 2 or more
               # dimensions), a row and a column statistic per block: 2·d_gr each
               + L_gr * (2 * (d + d_gr) + (d_gr + d) + 2 * 2 * d_gr)
               # mLSTM: q, k, v, ogate_preact, igate_preact, fgate_preact, out_proj
               + L_ml * (2 * (d + H_ml * d_mk) + 2 * (d + H_ml * d_mv) + 2 * (d + H_ml)
                         + (H_ml * d_mv + d))
               + L_sc * ((d + 3 * d) + (d + d)))
SIDES = (params.over_attention_layers(LAYER_SIDES) - params.over_kv_shared_layers(KV_SIDES)
         + params.over_dense_layers(_ffn_sides(d_ff))
         + L_moe * ((d + E + E_0) + E * _ffn_sides(d_e) + E_s * _ffn_sides(d_s)
                    + i_shared_gate * (d + 1))
         + MIXER_SIDES + (V + d) + sympy.Min(P, 1) * (P + d) + (1 - i_tied) * (V_o + d))
# (Griffin's gates are tensors of nn.Parameter, not nn.Linear: bitsandbytes leaves them out of
# QUANTISED, Adafactor factors them as above)
TWO_D = (QUANTISED + V * d + P * d + (1 - i_tied) * V_o * d
         + L_gr * mixers.GRIFFIN_WEIGHTS["griffin/gates"])

FP32 = 4  # bytes of one optimizer-state value
ADAMW = 2 * FP32  # m and v

# Optimizer-state bytes of the trained parameters: the whole model, or the adapters only.
OPTIMIZER_STATES: dict[str, sympy.Expr] = {
    "adafactor": FP32 * (SIDES + (N - TWO_D)),
    "muon": FP32 * QUANTISED + ADAMW * (N - QUANTISED),
    "adafactor_adapters": FP32 * (ADAPTERS_TOTAL / sympy.Max(r_a, 1) + 2 * r_a * ADAPTER_PAIRS),
    "muon_adapters": FP32 * ADAPTERS_TOTAL,
}
