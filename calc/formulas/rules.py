"""Published rules for training FLOPs per token, shown beside calc's exact count.

Each rule is written as its source writes it, with that source's own assumptions (stated in
calc.counting.RULES, with labels and sources); calc only substitutes the model's sizes.
For a mixture of experts every rule gets the active parameters and the active FFN width (top-k
routed + shared experts), the way MoE papers apply them.
"""

from __future__ import annotations

import sympy

from calc.formulas import params
from calc.symbols import (
    E_s,
    L_dense,
    L_dw,
    L_moe,
    T,
    V,
    V_o,
    d,
    d_e,
    d_ff,
    d_qk,
    d_s,
    h,
    h_kv,
    i_glu,
    k,
)

# Query projection width h·d_qk: Kaplan's d_attn, PaLM's H·Q, Chinchilla's kq_size·num_heads.
Q_WIDTH = h * d_qk
# Sum over layers of the hidden width a token's FFN passes through (dense d_ff; MoE: top-k
# routed plus shared experts; the L_dw double-wide dense FFNs 2·d_ff).
FFN_WIDTH_ALL_LAYERS = (L_dense + L_dw) * d_ff + L_moe * (k * d_e + E_s * d_s)

N_ACTIVE = params.ACTIVE
N_ACTIVE_NON_EMBEDDING = params.ACTIVE - params.EMBEDDING - params.ONCE["lm_head"]
N_WITHOUT_POSITIONS = params.ACTIVE - params.ONCE["embedding/position"]


# Each rule's training FLOPs per token, keyed as calc.conventions.RULES (labels, sources). A
# rule's attention terms are counted in the attention layers (L_att: every layer of a
# Transformer), each with its own heads (attention.kind_shapes: the L'_att layers' h', d'_qk);
# the other mixers of a hybrid enter only through N.
ALL_ATTENTION = params.over_attention_layers
TRAIN_PER_TOKEN: dict[str, sympy.Expr] = {
    # N = all active parameters (Kaplan et al. 2020 §2.1: C ≈ 6N per training token).
    "6N": 6 * N_ACTIVE,
    # Kaplan Table 1 / Eq. 2.2: C_forward = 2N + 2·n_layer·n_ctx·d_attn, N non-embedding.
    "kaplan": 3 * (2 * N_ACTIVE_NON_EMBEDDING + 2 * ALL_ATTENTION(T * Q_WIDTH)),
    # PaLM Appendix B: 6N + 12·L·H·Q·T (full T×T attention in all three passes).
    "palm": 6 * N_WITHOUT_POSITIONS + 12 * ALL_ATTENTION(Q_WIDTH * T),
    # Megatron-LM: 3 passes × 2 FLOPs per MAC × (Q,K,V,O projections + causal scores over T/2
    # keys + FFN, gated or not, top-k experts) + the logits (the head's V_o rows).
    "megatron": 6 * (ALL_ATTENTION(d * Q_WIDTH * 2 * (1 + h_kv / h) + T * Q_WIDTH)
                     + (2 + i_glu) * d * FFN_WIDTH_ALL_LAYERS + d * V_o),
    # Chinchilla Appendix F, per sequence ÷ T: embeddings 2TVd; per layer K,Q,V 2·3·T·d·q,
    # QKᵀ 2T²q, softmax 3hT², A·V 2T²q, output 2Tqd; FFN 2·T·2·d·ff; logits 2TdV; × 3. The
    # embeddings' V is the table's rows, the logits' the head's (V_o).
    "chinchilla": 3 * (2 * V * d + ALL_ATTENTION(2 * 3 * d * Q_WIDTH + 2 * T * Q_WIDTH
                                                 + 3 * h * T + 2 * T * Q_WIDTH + 2 * Q_WIDTH * d)
                       + 2 * 2 * d * FFN_WIDTH_ALL_LAYERS + 2 * d * V_o),
}
