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
mask over dense scores (calc.verify.hf_implementation).

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

A drafter (Gemma 4's assistants; calc.spec.drafter.DrafterSpec) counts its pre_projection
2·(2·D)·d and post_projection 2·d·D per token (drafter/projections); its kv-shared layers count
W_Q, W_O and QKᵀ and A·V over the keys the query sees, as any kv-shared layer (the keys are the
target's, computed by the target). A centroid head (CentroidHeadSpec) counts the centroid
logits, 2·d·C per token (centroid_head), and in place of the full head's 2·d·V the products
the module computes with the k·V/C head rows of the clusters picked, 2·d·k·V/C (lm_head);
choosing the top k, gathering the rows and scattering the logits into the V-wide output count 0.
Backward = 2 × forward; training = 3 × forward (Kaplan et al. 2020 §2.1).
"""

from __future__ import annotations

import sympy

from calc.formulas import mixers, params
from calc.symbols import (
    K_I,
    E_s,
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
    L_ssm,
    L_xa,
    T,
    T_img,
    V_cen,
    V_o,
    c,
    d,
    d_e,
    d_emb,
    d_ff,
    d_I,
    d_qk,
    d_s,
    d_v,
    h,
    h_I,
    i_causal,
    i_cen,
    i_diff,
    i_dsa,
    i_hcm,
    i_img,
    i_ph,
    i_proj,
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
MATMUL_PER_LAYER = params.ATTENTION_WEIGHTS  # per attention layer
MATMUL_DENSE_FFN = params.ffn_weights(d_ff)
MATMUL_MOE: dict[str, sympy.Expr] = {
    "moe/router": params.ROUTER_WEIGHTS,
    # only the k routed FFN experts a token uses (a zero-computation expert multiplies nothing)
    "moe/experts": k * params.ffn_weights(d_e),
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
# DSA: a global layer's query attends to min(K_I, keys it sees), as a window of K_I would
# (query i sees min(i, K_I) under causal); the indexer scores all keys it sees, h_I·(d_I + 1)
# per doubled pair (q·k over d_I, then the head weights' sum over h_I).
GLOBAL_KEYS = (i_dsa * _keys_per_sequence(sympy.Min(T, K_I))
               + (1 - i_dsa) * _keys_per_sequence(T))
INDEXER_PAIR = h_I * (d_I + 1)
LOCAL_KEYS = _keys_per_sequence(sympy.Min(T, w))
# Twice the (query, key) pairs of one sequence over the layers of the model's head shapes and
# over the L'_att layers of the other kind's (attention.kind_shapes)
PAIRS = ((L_GLOBAL - L_GLOBAL2) * GLOBAL_KEYS + (L_loc - L_loc2) * LOCAL_KEYS
         + (L_chk - L_chk2) * CHUNKED_KEYS_PER_SEQUENCE)
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
                                 + L_idx * INDEXER_PAIR * _keys_per_sequence(T)
                                 + L_sb * PAIR * _keys_per_sequence(T)
                                 + COMPRESSED_SCORES_PER_SEQUENCE)
CROSS_SCORES_PER_SEQUENCE = L_xa * CROSS_PAIR * CROSS_KEYS
# A generated token at context T (itself included) sees T keys, min(T, w) in local layers, and
# in chunked ones the T − c·⌊(T − 1)/c⌋ keys of its own chunk so far.
GLOBAL_SEEN = i_dsa * sympy.Min(T, K_I) + (1 - i_dsa) * T
CHUNK_SEEN = T - c * sympy.floor((T - 1) / c)
INFERENCE_ATTENTION_PER_TOKEN = (FMA * PAIR * (
    (L_GLOBAL - L_GLOBAL2) * GLOBAL_SEEN + (L_loc - L_loc2) * sympy.Min(T, w)
    + (L_chk - L_chk2) * CHUNK_SEEN
) + FMA * PAIR2 * (
    L_GLOBAL2 * GLOBAL_SEEN + L_loc2 * sympy.Min(T, w) + L_chk2 * CHUNK_SEEN
) + FMA * L_idx * INDEXER_PAIR * T + FMA * PAIR * L_sb * T + FMA * L_xa * CROSS_PAIR * T_img
    # DeepSeek-V4: the ⌊T/m⌋ compressed entries of a token at context T
    + FMA * L_hca * COMPRESSED_PAIR * sympy.floor(T / m_hca)
    + FMA * L_csa * (COMPRESSED_PAIR * sympy.Min(K_I, sympy.floor(T / m_csa))
                     + INDEXER_PAIR * sympy.floor(T / m_csa)))

# Forward FLOPs per token by component (the attention scores per sequence, see above); the
# convolutions and scans of the other mixers are not matrix products (calc.formulas.mixers).
FORWARD_PER_TOKEN: dict[str, sympy.Expr] = {
    # the L_kvs layers that read earlier keys and values compute no W_K/W_V products
    **{key: FMA * expr for key, expr in params.attention_totals(
        MATMUL_PER_LAYER, params.KV_OWN_WEIGHTS).items()},
    **{key: FMA * (L_idx * expr + params.COMPRESSION_WEIGHTS[key])
       for key, expr in params.INDEXER_WEIGHTS.items()},
    # DeepSeek-V4's compressors: kv_proj and gate_proj per token (the pooling, a softmax-weighted
    # sum over each window, is elementwise: 0, as norms)
    "attention/compressor": FMA * params.COMPRESSION_WEIGHTS["attention/compressor"],
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
