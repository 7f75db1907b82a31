"""FLOPs per token: matrix products only, a multiply-add counted as 2 FLOPs.

The convention is the one torch's FlopCounterMode counts (calc.counting.FLOPS, under every table):
a token multiplied through a d_in × d_out weight costs 2·d_in·d_out; the embedding lookup,
norms, softmax, activations, biases and RoPE cost nothing. The LM head is counted even when tied
(its product is still done); only the k routed experts a token uses are counted.

Attention's own products, QKᵀ and A·V, cost 2·d_qk and 2·d_v per head per key a query sees
(4·L·T·H·Q per token at full context: Chowdhery et al. 2022, PaLM, Appendix B's 12·L·H·Q·T
for training, ÷ 3). Under the causal
convention query i (1-based) sees i keys, under the full convention all T; a sliding window of w
caps both at w. GQA/MQA share keys but every query head still scores them, so h (not h_kv) heads
count. Relative positions (Transformer-XL) add a second score product per pair,
(q + v)·W_R r_{i−j}, 2·d_qk per head; the projection W_R r of the distances depends on positions
only, one product per batch whatever its size (Dai et al. compute it once), so it counts 0 per
token, like the embedding lookup. Backward = 2 × forward; training = 3 × forward (Kaplan et al.
2020 §2.1).
"""

from __future__ import annotations

import sympy

from calc.formulas import params
from calc.symbols import (
    E_s,
    L,
    L_loc,
    L_moe,
    T,
    V,
    d,
    d_e,
    d_ff,
    d_qk,
    d_s,
    d_v,
    h,
    i_causal,
    i_rel,
    i_shared_gate,
    k,
    w,
)

FMA = 2  # FLOPs per multiply-add
# Backward and training per forward: calc.conventions.BACKWARD_PER_FORWARD, TRAIN_PER_FORWARD.

# ---- weights a token multiplies through, per layer (no biases, no norms) ------------------
MATMUL_PER_LAYER = params.ATTENTION_WEIGHTS
MATMUL_DENSE_FFN = params.ffn_weights(d_ff)
MATMUL_MOE: dict[str, sympy.Expr] = {
    "moe/router": params.ROUTER_WEIGHTS,
    "moe/experts": k * params.ffn_weights(d_e),  # only the top-k routed experts
    "moe/shared": E_s * params.ffn_weights(d_s) + i_shared_gate * d,
}
MATMUL_LM_HEAD = d * V  # computed even when W_U is tied to the embedding


def _keys_per_sequence(visible: sympy.Expr) -> sympy.Expr:
    """Twice the (query, key) pairs of one sequence of T tokens when a query sees at most
    `visible` keys (T for global layers, min(T, w) for local ones).

    Full: every query sees `visible` keys, 2·T·m pairs doubled. Causal: query i sees min(i, m):
    Σ = m(m+1)/2 + (T − m)·m, doubled to keep integer coefficients (the counts are exact).
    """
    m = visible
    full = 2 * T * m
    causal = m * (m + 1) + 2 * (T - m) * m
    return i_causal * causal + (1 - i_causal) * full


# QKᵀ and A·V for one whole sequence, all layers: h heads × (2·d_qk + 2·d_v) per pair, i.e.
# h·(d_qk + d_v) per doubled pair, + h·d_qk for relative position scores. Divided by T it is
# the per-token cost.
PAIR = h * (d_qk + d_v + i_rel * d_qk)
ATTENTION_SCORES_PER_SEQUENCE = PAIR * (
    (L - L_loc) * _keys_per_sequence(T) + L_loc * _keys_per_sequence(sympy.Min(T, w))
)
# A generated token at context T (itself included) sees T keys, or min(T, w) in local layers.
INFERENCE_ATTENTION_PER_TOKEN = FMA * PAIR * (
    (L - L_loc) * T + L_loc * sympy.Min(T, w)
)

# Forward FLOPs per token by component (the attention scores per sequence, see above).
FORWARD_PER_TOKEN: dict[str, sympy.Expr] = {
    **{key: FMA * L * expr for key, expr in MATMUL_PER_LAYER.items()},
    "mlp": FMA * (L - L_moe) * MATMUL_DENSE_FFN,
    **{key: FMA * L_moe * expr for key, expr in MATMUL_MOE.items()},
    "lm_head": FMA * MATMUL_LM_HEAD,
}
WEIGHT_FLOPS_PER_TOKEN = sympy.Add(*FORWARD_PER_TOKEN.values())

FLOPS: dict[str, sympy.Expr] = {
    "weights_per_token": WEIGHT_FLOPS_PER_TOKEN,
    "attention_per_sequence": ATTENTION_SCORES_PER_SEQUENCE,
    "inference_attention_per_token": INFERENCE_ATTENTION_PER_TOKEN,
}
