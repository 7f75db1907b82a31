"""FLOPs per token: matrix products only, a multiply-add counted as 2 FLOPs.

The convention is the one torch's FlopCounterMode counts (calc.counting.FLOPS, under every table):
a token multiplied through a d_in × d_out weight costs 2·d_in·d_out; the embedding lookup,
norms, softmax, activations, biases and RoPE cost nothing. The LM head is counted even when tied
(its product is still done); only the k routed experts a token uses are counted.

Attention's own products, QKᵀ and A·V, cost 2·d_qk and 2·d_v per head per key a query sees
(4·L·T·H·Q per token at full context: Chowdhery et al. 2022, PaLM, Appendix B's 12·L·H·Q·T
for training, ÷ 3). Under the causal convention query i (1-based) sees i keys, under the full
convention all T; a sliding window of w caps both at w; a chunked layer limits each query to its
own chunk of c tokens. GQA/MQA share keys but every query head still scores them, so h (not
h_kv) heads count. Relative positions (Transformer-XL) add a second score product per pair,
(q + v)·W_R r_{i−j}, 2·d_qk per head; the projection W_R r of the distances depends on positions
only, one product per batch whatever its size (Dai et al. compute it once), so it counts 0 per
token, like the embedding lookup. Only attention layers score keys (L_att of the L layers); the
other mixers' convolutions and scans are counted by their own convention (calc.formulas.mixers).

DeepSeek Sparse Attention (DSA; DeepSeek-V3.2-Exp) counts what the algorithm does: the indexer's
projections per token (attention/indexer), its scores q·k of h_I heads of width d_I against
every key the query sees (2·h_I·d_I per key) and their weighted sum over the heads (2·h_I per
key), on the L_idx layers with an indexer of their own; and the attention proper over the keys
it selects only: min(K_I, keys seen) per query, on every attention layer. The indexer's scores
and the selected keys' QKᵀ and A·V are attention/scores. transformers runs the selection as a
mask over dense scores (calc.verify.hf_implementation). MiniMax-M3's block-sparse attention (the
indexer without MLA) selects K_I blocks of B_I keys: its scores cost 2·h_I·d_I per key (no head
weights; a block's maximum is a comparison, 0), and a query attends to the visible part of its
own block and K_I − 1 earlier blocks (min(T, K_I·B_I) under the full convention), on the L_sel
global layers that are not indexer.dense_layers (_selected_per_sequence).

Doge's dynamic mask (attention.dynamic_mask; modeling_doge.py DogeAttention) selects the same
way: dt_proj h_kv·d_v → h_kv per token (attention/dynamic_mask, 2·h_kv·d_v·h_kv), A's
exp(A·softplus(·)) and the score added to the logits elementwise (0), and QKᵀ and A·V over the
min(K_dm, keys seen) keys each query keeps (its key/value head's top K_dm, keep_window_size), as
for DSA's selection; transformers masks the rest of a dense product (calc.verify.hf_implementation).
Doge's product-key experts (moe.product_keys; DogeCDMoE) count the router's d → 2·⌊√E⌋ sub-key
scores (moe/router), 0 for pairing the halves' top ⌊√E⌋, summing and choosing top_k, and
2·2·d·d_e per chosen one-neuron expert (down_embed's row, then up_embed's: moe/experts). Learned
residual scales (residual_scales) are elementwise: 0.

Gemma 4's layers without keys and values of their own (attention.kv_shared_layers) compute no
W_K/W_V products: they score their queries against the keys and values an earlier layer of
their kind computed, so their QKᵀ and A·V count as any other layer's. Where the keys are the
values (attention.k_eq_v) there is no W_V product; A·V multiplies the normed keys.

Differential attention (Ye et al. 2024, DIFF Transformer §2.1) counts each of the h softmax maps
once: a differential head's two QKᵀ maps, each half its width (d_qk, transformers' head_dim),
2·d_qk per key each; each map weighs the head's values 2·d_v wide, 2·2·d_v per key, as the
paper's FlashAttention form (each map times V) does; λ (a dot product of two d_h vectors) and
the subtraction count 0. transformers' DiffLlamaAttention computes each map twice, once per half
of the values (calc.verify.hf_implementation).
The shared block (Zamba, Glorioso et al. 2024 §2; Zamba2; calc.spec.layers.SharedBlockSpec)
counts at every depth it runs at, whatever weights the depths share: W_Q, W_K and W_V read the
2d-wide [hidden, embedding], W_O and the FFN as an attention layer's, each depth's projection
d → d and its adapters (shared_block/*), and QKᵀ and A·V over every key the query sees, as a
global layer's (attention/scores). Parameters count each weight set once (calc.formulas.params).
Looped layers (HRM-Text; calc.spec.loop.LoopSpec) count every pass: calc.evaluate reads these
formulas for the executed spec, the stored layers unrolled in the order loop.runs runs them, so
L and each layer count are the passes; parameters count the stored layers once. The additions
that feed one stream into the other count 0, as norms.
Per-layer embeddings (Gemma 3n, Gemma 4; calc.spec.layers.PerLayerEmbeddingsSpec) count as any
token embedding's lookup, 0 for the table, and 2·d·L·p for the projection of the embedding to
the L layers' vectors, 2·2·d·p per layer for each layer's gate and projection; the gate's
activation, its product with the layer's vector and the norms count 0. Gemma 4's MoE block
beside the dense MLP (moe.branch_norms, moe.router_scales) counts the router's d × E product,
the k routed experts and the dense MLP as a shared expert; its norms and scales count 0.
Gemma 3n's AltUp (calc.spec.layers.AltUpSpec, n copies) counts per layer and token its router
d → n twice (prediction and correction), its coefficients n → n² and n → n, and the prediction,
n × d streams times n × n coefficients (2·d·n²); the correction's broadcast products and the
scale 0; and once a token the 2(n − 1) projections d → d into and out of the copies. LAuReL
(LaurelSpec, rank r) counts its two products 2·2·d·r a layer; its norm and the 1/√2 scale 0.

ModernBERT decoder's prediction head (calc.spec.layers.PredictionHeadSpec) counts its dense
layer's d × d product per token, its activation and norm 0; the layer whose pre-norm is dropped
(norm.first_mixer_norm) computes what any other layer does.
A bucketed score bias (position.kind 'bucketed'; T5's relative attention bias, CPM-Ant's
CpmAntSegmentPositionEmbedding) counts 0: its rows are looked up, as the embedding's are, and
added to the scores, element-wise, as ALiBi's bias is; QKᵀ and A·V count as any layer's.
Inkling's relative bias (attention.relative_logits) counts r_proj, 2·d·h·d_rel per token, and
its bank's product as transformers computes it, 2·h·d_rel·E per token (E = rel_extent, the
window on a sliding layer) whatever the keys a query sees; the logit's lookup by distance and
its add count 0. Its residual short convolutions (residual_conv) count 2·k per channel per
token, as the other mixers' convolutions: h_kv·(d_qk + d_v) channels on each attention layer's
keys and values, 2·d on every layer's sublayer outputs.

A drafter (Gemma 4's assistants; calc.spec.drafter.DrafterSpec) counts its pre_projection
2·(2·D)·d and post_projection 2·d·D per token (drafter/projections); its kv-shared layers count
W_Q, W_O and QKᵀ and A·V over the keys the query sees, as any kv-shared layer (the keys are the
target's, computed by the target). A centroid head (CentroidHeadSpec) counts the centroid
logits, 2·d·C per token (centroid_head), and in place of the full head's 2·d·V the products
the module computes with the k·V/C head rows of the clusters picked, 2·d·k·V/C (lm_head);
choosing the top k, gathering the rows and scattering the logits into the V-wide output count 0.
ZAYA1's compressed convolutional attention (calc.spec.attention.CCASpec) counts W_Q, W_K, its two
half-width value projections and W_O as GQA's, and its causal convs over the C = (h + h_kv)·d_qk
query and key channels per token: the depthwise 2·C·k_a and the grouped 2·C·d_qk·k_b
(attention/conv); the residual q/k means, the L2 norms and the temperature 0. Its MLP router
(calc.spec.ffn.RouterMLPSpec) counts 2·(d·r + 2·r² + r·(E + 1)) per token and MoE layer
(moe/router); the carried state's scale, the norm and the GELUs 0. Residual scales
(calc.spec.residual) are element-wise: 0.
Backward = 2 × forward; training = 3 × forward (Kaplan et al. 2020 §2.1).
"""

from __future__ import annotations

import sympy

from calc.formulas import mixers, params
from calc.symbols import (
    B_I,
    K_I,
    E_rl,
    E_s,
    H_rct,
    K_dm,
    L,
    L_att,
    L_att2,
    L_chk,
    L_chk2,
    L_csa,
    L_dn,
    L_gr,
    L_hca,
    L_idx,
    L_la,
    L_loc,
    L_loc2,
    L_ml,
    L_moe,
    L_rw,
    L_sb,
    L_sc,
    L_sel,
    L_ssm,
    L_xa,
    N_brs,
    T,
    T_img,
    V_cen,
    V_o,
    c,
    d,
    d_emb,
    d_ff,
    d_I,
    d_qk,
    d_rl,
    d_s,
    d_v,
    h,
    h_I,
    i_causal,
    i_cen,
    i_diff,
    i_dm,
    i_hcm,
    i_hw,
    i_img,
    i_ph,
    i_proj,
    i_qsa,
    i_rel,
    i_shared_gate,
    k,
    m_csa,
    m_hca,
    n_au,
    n_hc,
    w,
)

FMA = 2  # FLOPs per multiply-add
# Backward and training per forward: calc.conventions.BACKWARD_PER_FORWARD, TRAIN_PER_FORWARD.

# ---- weights a token multiplies through, per layer (no biases, no norms) ------------------
# Inkling's projected relative-position bias (attention.relative_logits): r_proj d → h·d_rel,
# then, as transformers computes it (InklingRelativeLogits.forward: relative_states @ proj,
# one matmul per token), each head's d_rel states times the whole d_rel × E_rel bank, E_rel
# logits per head whatever the keys the query sees; gathering the logit of each key's
# distance and adding it to the score are element-wise (0, as ALiBi's bias). The residual
# short convolutions on the keys and values (k_sconv, v_sconv) count 2·k per channel per token
# as the other mixers' convolutions (calc.formulas.mixers), their residual add 0.
MATMUL_PER_LAYER = {**params.ATTENTION_WEIGHTS, "attention/conv": params.ATTENTION_CONV}
MATMUL_DENSE_FFN = params.ffn_weights(d_ff)
MATMUL_MOE: dict[str, sympy.Expr] = {
    "moe/router": params.ROUTER_WEIGHTS,
    # only the k routed FFN experts a token uses (a zero-computation expert multiplies nothing)
    "moe/experts": k * params.EXPERT_WEIGHTS,
    "moe/shared": E_s * params.ffn_weights(d_s) + i_shared_gate * d,
}
# computed even when W_U is tied to the embedding; V_o logits a token (the head's rows); a
# centroid head (i_cen) multiplies only the V_cen = top_k·V/C rows of the clusters its
# centroids picked (Gemma4AssistantMaskedEmbedder: the gathered rows times the state, a bmm)
MATMUL_LM_HEAD = (1 - i_cen) * d_emb * V_o + V_cen * d_emb
MATMUL_EMBEDDING_PROJECTION = i_proj * 2 * d_emb * d  # OPT's project_in and project_out


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


# A chunked layer (Llama 4's attention_chunk_size) cuts the sequence into ⌊T/c⌋ chunks of c
# tokens and a last one of r = T − c·⌊T/c⌋; a query sees the keys of its own chunk only: all of
# them under the full convention (c² or r² pairs a chunk), the causal triangle under causal.
_CHUNKS = sympy.floor(T / c)
_REST = T - c * _CHUNKS
CHUNKED_KEYS_PER_SEQUENCE = (
    i_causal * (_CHUNKS * c * (c + 1) + _REST * (_REST + 1))
    + (1 - i_causal) * 2 * (_CHUNKS * c**2 + _REST**2))

# QKᵀ and A·V for one whole sequence, all layers: h heads × (2·d_qk + 2·d_v) per pair, i.e.
# h·(d_qk + d_v) per doubled pair, + h·d_qk for relative position scores. Divided by T it is
# the per-token cost. Differential attention (DIFF Transformer §2.1, as FlashAttention runs it
# there: each map times V) computes each of the h maps once, d_qk wide (a differential head's
# two QKᵀ maps of half its width), and multiplies it by values 2·d_v wide. The L'_att layers
# of the kind with head shapes of their own (L'_loc of them local, L'_chk chunked) score with
# theirs (h', d'_qk, d'_v).
PAIR = h * (d_qk + (1 + i_diff) * d_v + i_rel * d_qk)
PAIR2 = params.of_kind(PAIR)
L_GLOBAL = L_att - L_loc - L_chk  # global attention layers (with or without positions)
L_GLOBAL2 = L_att2 - L_loc2 - L_chk2  # of them, those with the other head shapes


def _compressed_per_sequence(rate: sympy.Expr, cap: sympy.Expr | None = None) -> sympy.Expr:
    """Twice the (query, compressed entry) pairs of one sequence of T tokens on a DeepSeek-V4
    compressed layer pooling `rate` tokens an entry, a query seeing at most `cap` entries.

    Query i (1-based) sees the ⌊i/m⌋ entries whose windows it has passed (the causal_threshold
    (position + 1) // compress_rate of modeling_deepseek_v4.py); under the full convention every
    query sees all ⌊T/m⌋. Causal, uncapped: with q = ⌊T/m⌋ and r = T − m·q, Σ ⌊i/m⌋ =
    m·q(q − 1)/2 + q(r + 1); capped at K the queries past i = K·m − 1 see K each."""
    m = rate
    full = 2 * T * (sympy.floor(T / m) if cap is None else sympy.Min(cap, sympy.floor(T / m)))

    def causal(t: sympy.Expr) -> sympy.Expr:  # 2·Σ_{i ≤ t} ⌊i/m⌋
        q = sympy.floor(t / m)
        return m * q * (q - 1) + 2 * q * (t - m * q + 1)

    if cap is None:
        return i_causal * causal(T) + (1 - i_causal) * full
    seen = sympy.Min(T, cap * m - 1)  # the queries that see fewer than `cap` entries
    return i_causal * (causal(seen) + 2 * cap * (T - seen)) + (1 - i_causal) * full


def _selected_per_sequence() -> sympy.Expr:
    """Twice the (query, key) pairs of one sequence of T tokens on a layer whose indexer picks
    K_I blocks of B_I keys per query (DSA: B_I = 1, keys).

    Causal: query i (1-based) attends to the visible part of its own block, (i − 1) mod B + 1
    keys, and to K − 1 whole earlier blocks, or to all i keys while its blocks number at most K
    (i <= m = min(T, K·B); MiniMaxM3VLIndexer: the own block is a local block, scored +inf,
    and the top-k of fewer blocks keeps them all). With S(n) = Σ_{j<n} (j mod B + 1), twice it
    B(B + 1)·⌊n/B⌋ + r(r + 1), r = n − B⌊n/B⌋: 2Σ = m(m + 1) + 2(T − m)(K − 1)B + 2S(T) − 2S(m).
    Full: every query attends to min(T, K·B) keys, as a window of K·B would (DSA: min(T, K)).
    """
    m = sympy.Min(T, K_I * B_I)

    def twice_s(n: sympy.Expr) -> sympy.Expr:
        q = sympy.floor(n / B_I)
        r = n - B_I * q
        return B_I * (B_I + 1) * q + r * (r + 1)

    causal = m * (m + 1) + 2 * (T - m) * (K_I - 1) * B_I + twice_s(T) - twice_s(m)
    return i_causal * causal + (1 - i_causal) * 2 * T * m


# Indexer layers (calc.spec.attention.IndexerSpec): the L_sel global layers that attend to the
# keys their indexer selects, K_I keys (DSA) or K_I blocks of B_I keys (MiniMax-M3) a query;
# the indexer scores all keys it sees, h_I·d_I per doubled pair (q·k over d_I), plus h_I for
# the head weights' sum where it weighs its heads (i_hw: DSA's matmul over h_I); MiniMax-M3
# takes a block's maximum of its keys' scores (a comparison: 0, as softmax).
# Qwen4-Exp's QSA (indexer.pooled, i_qsa; modular_qwen4_exp.py Qwen4ExpTextQSAIndexer) scores
# the ⌊i/B_I⌋ complete blocks query i (1-based) sees, one mean-pooled key each (the mean and
# the ReLU sum over heads elementwise: 0), h_I·d_I per doubled pair; the query attends to the
# min(K_I, ⌊i/B_I⌋) best of them and its i − B_I·⌊i/B_I⌋ keys past them: i keys less B_I per
# complete block beyond K_I. Full: every query sees ⌊T/B_I⌋ blocks and T keys.
QSA_BLOCKS = _compressed_per_sequence(B_I)
QSA_KEYS = _keys_per_sequence(T) - B_I * (QSA_BLOCKS - _compressed_per_sequence(B_I, K_I))
SELECTED_KEYS = (1 - i_qsa) * _selected_per_sequence() + i_qsa * QSA_KEYS
# Doge's dynamic mask (attention.dynamic_mask) selects on every global layer without an indexer:
# a query attends to the min(K_dm, keys seen) keys its key/value head scores highest
# (prepare_dynamic_mask's top-k), as DSA's selection of keys (B_I = 1) would.
GLOBAL_KEYS = (i_dm * _keys_per_sequence(sympy.Min(T, K_dm))
               + (1 - i_dm) * _keys_per_sequence(T))
INDEXER_PAIR = h_I * (d_I + i_hw)
LOCAL_KEYS = _keys_per_sequence(sympy.Min(T, w))
# Twice the (query, key) pairs of one sequence over the layers of the model's head shapes and
# over the L'_att layers of the other kind's (attention.kind_shapes)
PAIRS = ((L_GLOBAL - L_GLOBAL2 - L_sel) * GLOBAL_KEYS + L_sel * SELECTED_KEYS
         + (L_loc - L_loc2) * LOCAL_KEYS + (L_chk - L_chk2) * CHUNKED_KEYS_PER_SEQUENCE)
PAIRS2 = L_GLOBAL2 * GLOBAL_KEYS + L_loc2 * LOCAL_KEYS + L_chk2 * CHUNKED_KEYS_PER_SEQUENCE
# The shared block's attention (calc.spec.layers.SharedBlockSpec) is global and plain: PAIR
# (no relative positions, differential maps or indexer with it) at each of its L_sb depths.
# A cross-attention layer's T queries each score all T_img image tokens under either
# convention (no causal mask across them; the image mask of MllamaTextModel only zeroes
# entries of the full product): 2·T·T_img pairs doubled.
CROSS_PAIR = h * (d_qk + d_v)
CROSS_KEYS = 2 * T * T_img
# The image tokens' keys and values: each sequence's T_img tokens through W_K and W_V once per
# cross-attention layer, a cost per sequence that its T tokens share.
IMAGE_KV_PER_SEQUENCE = FMA * L_xa * T_img * params.CROSS_ATTENTION_WEIGHTS["cross_attention/kv"]


# DeepSeek-V4's compressed layers (calc.spec.attention.CompressionSpec) add to their window's
# keys the compressed entries a query sees: an HCA layer's all of them, QKᵀ and A·V as any key
# (one head of d_qk that is both key and value); a CSA layer's the min(K_I, entries seen) its
# indexer selects, and the indexer scores every entry seen, h_I·(d_I + 1) per doubled pair as
# DSA's does.
COMPRESSED_PAIR = h * (d_qk + d_v)
COMPRESSED_SCORES_PER_SEQUENCE = (
    L_hca * COMPRESSED_PAIR * _compressed_per_sequence(m_hca)
    + L_csa * (COMPRESSED_PAIR * _compressed_per_sequence(m_csa, K_I)
               + INDEXER_PAIR * _compressed_per_sequence(m_csa)))
ATTENTION_SCORES_PER_SEQUENCE = (PAIR * PAIRS + PAIR2 * PAIRS2
                                 + L_idx * INDEXER_PAIR * ((1 - i_qsa) * _keys_per_sequence(T)
                                                           + i_qsa * QSA_BLOCKS)
                                 + L_sb * PAIR * _keys_per_sequence(T)
                                 + COMPRESSED_SCORES_PER_SEQUENCE)
CROSS_SCORES_PER_SEQUENCE = L_xa * CROSS_PAIR * CROSS_KEYS
# A generated token at context T (itself included) sees T keys, min(T, w) in local layers, and
# in chunked ones the T − c·⌊(T − 1)/c⌋ keys of its own chunk so far; on a selecting layer the
# visible part of its own block and K_I − 1 earlier blocks of B_I, or all T while they are fewer
# (DSA: min(T, K_I)); under Doge's dynamic mask a global layer's min(T, K_dm).
SELECTED_SEEN = ((1 - i_qsa) * sympy.Min(
    T, (K_I - 1) * B_I + (T - 1) - B_I * sympy.floor((T - 1) / B_I) + 1)
    + i_qsa * (T - B_I * (sympy.floor(T / B_I) - sympy.Min(K_I, sympy.floor(T / B_I)))))
INDEXER_SEEN = (1 - i_qsa) * T + i_qsa * sympy.floor(T / B_I)  # QSA: the complete blocks
GLOBAL_SEEN = i_dm * sympy.Min(T, K_dm) + (1 - i_dm) * T
CHUNK_SEEN = T - c * sympy.floor((T - 1) / c)
INFERENCE_ATTENTION_PER_TOKEN = (FMA * PAIR * (
    (L_GLOBAL - L_GLOBAL2 - L_sel) * GLOBAL_SEEN + L_sel * SELECTED_SEEN
    + (L_loc - L_loc2) * sympy.Min(T, w) + (L_chk - L_chk2) * CHUNK_SEEN
) + FMA * PAIR2 * (
    L_GLOBAL2 * GLOBAL_SEEN + L_loc2 * sympy.Min(T, w) + L_chk2 * CHUNK_SEEN
) + FMA * L_idx * INDEXER_PAIR * INDEXER_SEEN + FMA * PAIR * L_sb * T
    + FMA * L_xa * CROSS_PAIR * T_img
    # DeepSeek-V4: the ⌊T/m⌋ compressed entries of a token at context T
    + FMA * L_hca * COMPRESSED_PAIR * sympy.floor(T / m_hca)
    + FMA * L_csa * (COMPRESSED_PAIR * sympy.Min(K_I, sympy.floor(T / m_csa))
                     + INDEXER_PAIR * sympy.floor(T / m_csa)))

# The bank products of the relative bias: h·d_rel·E_rel per layer that does not slide,
# h·d_rel·w per sliding one, each with its kind's heads.
RELATIVE_BANK_PRODUCTS = d_rl * (
    h * (E_rl * (L_GLOBAL - L_GLOBAL2) + w * (L_loc - L_loc2))
    + params.of_kind(h) * (E_rl * L_GLOBAL2 + w * L_loc2))

# Forward FLOPs per token by component (the attention scores per sequence, see above); the
# convolutions and scans of the other mixers are not matrix products (calc.formulas.mixers).
FORWARD_PER_TOKEN: dict[str, sympy.Expr] = {
    # the L_kvs layers that read earlier keys and values compute no W_K/W_V products
    **{key: FMA * expr for key, expr in params.attention_totals(
        MATMUL_PER_LAYER, params.KV_OWN_WEIGHTS).items()},
    **{key: FMA * (L_idx * expr + params.COMPRESSION_WEIGHTS[key])
       for key, expr in params.INDEXER_WEIGHTS.items()},
    "attention/relative": FMA * (params.attention_totals(MATMUL_PER_LAYER)["attention/relative"]
                                 + RELATIVE_BANK_PRODUCTS),
    # DeepSeek-V4's compressors: kv_proj and gate_proj per token (the pooling, a softmax-weighted
    # sum over each window, is elementwise: 0, as norms)
    "attention/compressor": FMA * params.COMPRESSION_WEIGHTS["attention/compressor"],
    # ZAYA1's CCA: the depthwise conv 2·k_a and the grouped conv 2·d_qk·k_b per channel of the
    # C = (h + h_kv)·d_qk query and key channels (biases and the residual q/k means 0)
    "attention/conv": FMA * (params.attention_totals(MATMUL_PER_LAYER)["attention/conv"]
                             + L_att * params.CCA_CONV_WEIGHTS),
    **{key: FMA * L_ssm * expr for key, expr in mixers.MAMBA_WEIGHTS.items()},
    "mamba/conv": L_ssm * mixers.MAMBA_CONV,
    "mamba/scan": L_ssm * mixers.MAMBA_SCAN,
    **{key: FMA * L_dn * expr for key, expr in mixers.DELTANET_WEIGHTS.items()},
    "deltanet/conv": L_dn * mixers.DELTANET_CONV,
    "deltanet/scan": L_dn * mixers.DELTANET_SCAN,
    **{key: FMA * L_la * expr for key, expr in mixers.LIGHTNING_WEIGHTS.items()},
    "lightning/scan": L_la * mixers.LIGHTNING_SCAN,
    **{key: FMA * L_rw * expr for key, expr in mixers.RWKV_WEIGHTS.items()},
    "rwkv/scan": L_rw * mixers.RWKV_SCAN,
    **{key: FMA * L_gr * expr for key, expr in mixers.GRIFFIN_WEIGHTS.items()},
    "griffin/conv": L_gr * mixers.GRIFFIN_CONV,
    "griffin/scan": L_gr * mixers.GRIFFIN_SCAN,
    **{key: FMA * L_ml * expr for key, expr in mixers.MLSTM_WEIGHTS.items()},
    "mlstm/scan": L_ml * mixers.MLSTM_SCAN,
    **{key: FMA * L_sc * expr for key, expr in mixers.SHORT_CONV_WEIGHTS.items()},
    "conv/conv": L_sc * mixers.SHORT_CONV_CONV,
    # Inkling's residual convolutions on every layer's attention and FFN outputs (attn_sconv,
    # mlp_sconv): 2·k per channel per token, d channels each
    "residual_conv": FMA * L * params.RESIDUAL_CONV["residual_conv"],
    # Inkling 2's per-token taps: weight_proj d → h_kv·k for the keys and the values, a matmul
    # per token; the convolution they join stays attention/conv's 2·k per channel
    "attention/conv_taps": FMA * H_rct * params.CONV_TAP_WEIGHTS["attention/conv_taps"],
    # Inkling 2's mixes over blocks: per query and source, d multiply-adds for the score and d
    # for the mix (Inkling2BlockAttentionResidual through eager_attention_forward's matmuls)
    "block_residual": FMA * 2 * d * N_brs,
    # cross-attention layers: W_Q and W_O per text token when there are image tokens (i_img);
    # without them transformers skips the layers whole, their FFN too (MllamaTextModel.forward)
    **{key: FMA * i_img * L_xa * params.CROSS_ATTENTION_WEIGHTS[key]
       for key in ("cross_attention/q", "cross_attention/o")},
    "mlp": FMA * (params.over_dense_layers(MATMUL_DENSE_FFN)
                  - (1 - i_img) * L_xa * MATMUL_DENSE_FFN),
    **{key: FMA * L_moe * expr for key, expr in MATMUL_MOE.items()},
    # hyper-connections: each map's n_hc·d → outputs product, and mHC's n_hc × n_hc matrix
    # times the streams (an n_hc × d matmul per token in DeepseekV4DecoderLayer); summing the
    # streams by pre and spreading the output by post are broadcast products (0, as norms)
    "hyper_connections/layers": FMA * L * (params.HC_WEIGHTS["hyper_connections/layers"]
                                           + params.HC_MAPS * i_hcm * n_hc**2 * d),
    "hyper_connections/head": FMA * params.HC_WEIGHTS["hyper_connections/head"],
    # the shared block, its projection and its adapters at every depth it runs at
    **{key: FMA * L_sb * expr for key, expr in params.SHARED_BLOCK_WEIGHTS.items()},
    # per-layer embeddings: the table is a lookup (0, as the token embedding); the projection
    # d → L·p once per token and each layer's gate d → p and projection p → d are matrix
    # products; the gate's product with the layer's vector is elementwise (0)
    **{key: FMA * expr for key, expr in params.PER_LAYER_EMBEDDINGS_WEIGHTS.items()},
    # AltUp (Gemma3nTextAltUp): the router d → n twice a layer (predict reads the active
    # stream, correct the layer's output), the prediction and correction coefficients n → n²
    # and n → n, and the prediction itself, a product of each token's n × d streams with its
    # n × n coefficients (torch.matmul: 2·d·n² FLOPs); the correction's products with the
    # innovation broadcast (0, as norms); the projections into and out of the copies once
    "altup/layers": FMA * L * (params.ALTUP_LAYER_WEIGHTS + d * n_au + d * n_au**2),
    "altup/projections": FMA * params.ALTUP_WEIGHTS["altup/projections"],
    # LAuReL (Gemma3nTextLaurelBlock): linear_left d → r and linear_right r → d a layer
    "laurel/layers": FMA * params.LAUREL_WEIGHTS["laurel/layers"],
    # A.X-K2's gated norms (norm.gate_rank): fc1 and fc2 per gated norm; the SiLU, sigmoid
    # and product are elementwise (0, as norms)
    **{key: FMA * (L + L_moe) * expr for key, expr in params.NORM_GATE_WEIGHTS.items()},
    "embedding_projection": FMA * MATMUL_EMBEDDING_PROJECTION,
    # a drafter's pre_projection 2·D → d and post_projection d → D, once per token each
    "drafter/projections": FMA * params.ONCE["drafter/projections"],
    # the centroid logits d → C; picking the top k of them is a comparison (0, as softmax)
    "centroid_head": FMA * params.ONCE["centroid_head"],
    "lm_head": FMA * MATMUL_LM_HEAD,
    # ModernBERT decoder's prediction head: its dense d → d per token (activation, norm and
    # bias 0, as everywhere)
    "prediction_head": FMA * i_ph * d * d,
}
WEIGHT_FLOPS_PER_TOKEN = sympy.Add(*FORWARD_PER_TOKEN.values())
# Of those, the recurrences (whose operands are activations, like QKᵀ's) and the convolutions
# (whose kernels are weights): not matrix products.
SCANS_PER_TOKEN = (FORWARD_PER_TOKEN["mamba/scan"] + FORWARD_PER_TOKEN["deltanet/scan"]
                   + FORWARD_PER_TOKEN["lightning/scan"] + FORWARD_PER_TOKEN["rwkv/scan"]
                   + FORWARD_PER_TOKEN["griffin/scan"] + FORWARD_PER_TOKEN["mlstm/scan"])
CONVS_PER_TOKEN = (FORWARD_PER_TOKEN["mamba/conv"] + FORWARD_PER_TOKEN["deltanet/conv"]
                   + FORWARD_PER_TOKEN["attention/conv"] + FORWARD_PER_TOKEN["residual_conv"]
                   + FORWARD_PER_TOKEN["griffin/conv"] + FORWARD_PER_TOKEN["conv/conv"])

FLOPS: dict[str, sympy.Expr] = {
    "weights_per_token": WEIGHT_FLOPS_PER_TOKEN,
    # QKᵀ and A·V, the cross-attention scores, and the image tokens' W_K and W_V: what a
    # sequence costs besides its tokens' weights (calc.evaluate divides it by T)
    "attention_per_sequence": (ATTENTION_SCORES_PER_SEQUENCE + CROSS_SCORES_PER_SEQUENCE
                               + IMAGE_KV_PER_SEQUENCE),
    "image_kv_per_sequence": IMAGE_KV_PER_SEQUENCE,
    "cross_scores_per_sequence": CROSS_SCORES_PER_SEQUENCE,
    "inference_attention_per_token": INFERENCE_ATTENTION_PER_TOKEN,
}
