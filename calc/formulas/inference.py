"""Inference: weights and KV cache in memory; prefill and decode time on a roofline.

KV cache: every layer keeps, per token, the keys and values of its h_kv heads, h_kv·(d_qk + d_v)
elements (GQA: Ainslie et al. 2023; MQA h_kv = 1): 2 × 126 × 8 × 128 × 2 bytes = 516.096 KB per
token for LLaMA-3.1 405B in BF16 (Zhao et al. 2025, ISCA'25, Table 1). MLA caches the joint
latent r_kv and the one RoPE key d_rope shared by all heads (DeepSeek-V2 §2.1.2; the same table:
70.272 KB per token for DeepSeek-V3 in BF16). A sliding-window layer keeps at most w tokens
(Mistral 7B §2, "rolling buffer cache"), a chunked one at most a chunk. Mamba, gated DeltaNet and
short-convolution layers keep no keys but a fixed state per sequence (Gu & Dao 2023 §3.3: "the
recurrent state"), which the cache holds at the same bytes per element, split over the K GPUs.
DeepSeek Sparse Attention's indexer caches one key of d_I per token in each layer that has an
indexer (transformers' DynamicIndexedLayer, cache.update_indexer in modeling_deepseek_v32.py),
at the cache's bytes per element, held like MLA's latent on every GPU. DeepSeek-V4's compressed
layers (attention.compression) keep beside their window the ⌊T/m⌋ entries their compressor has
made, one d_qk-wide key that is its own value each, and a CSA layer its indexer's ⌊T/m⌋ keys of
d_I (DeepseekV4HCACache and DeepseekV4CSACache's compressed_kv), held on every GPU as the one KV
head is; the tokens a compressor holds until its window is whole (fewer than m) and CSA's
overlap state are not counted.

Time (the roofline of Williams et al. 2009): a step takes the longer of its FLOPs at the dense
peak R and its bytes at the bandwidth BW, each derated by a utilisation (u, u_bw; 1 = the bound
itself). Prefill runs b prompts of T tokens in one pass: compute-bound unless T is tiny. A decode
step makes one token for each of b sequences and reads every weight it uses and the whole KV
cache once: bandwidth-bound until b is large. An MoE step touches, per MoE layer,
E·(1 − (1 − k/E)^b) distinct routed experts in expectation when b tokens each pick k of E
uniformly (derived here); at b = 1 that is k, the active parameters. K GPUs split weights,
cache, FLOPs and bytes evenly (ideal tensor parallelism: no communication time), except that a
key/value head cannot be split: each GPU caches h_g = ⌈h_kv/K⌉ heads, so with K > h_kv every
head is replicated K/h_kv times (vLLM's QKVParallelLinear, num_kv_head_replicas), and MLA's one
latent, which every head reads, is on every GPU. The L'_att layers of the kind with head shapes
of their own (attention.kind_shapes) cache h'_kv heads of theirs, h'_g of them on one GPU.
"""

from __future__ import annotations

import sympy

from calc.counting import GIGA
from calc.formulas import mixers
from calc.formulas.memory import GIB
from calc.symbols import (
    BW,
    E,
    F_d,
    F_p,
    H_la,
    H_ml,
    H_v,
    K,
    L_att,
    L_att2,
    L_chk,
    L_chk2,
    L_csa,
    L_dn,
    L_gr,
    L_hca,
    L_idx,
    L_kvs,
    L_kvs2,
    L_kvsl,
    L_kvsl2,
    L_la,
    L_loc,
    L_loc2,
    L_ml,
    L_rw,
    L_sb,
    L_sc,
    L_ssm,
    L_xa,
    M_gib,
    N,
    N_er,
    N_r,
    N_s,
    R,
    T,
    T_img,
    b,
    c,
    d,
    d_gr,
    d_I,
    d_in,
    d_la,
    d_lk,
    d_lv,
    d_mk,
    d_mv,
    d_qk,
    d_qk2,
    d_rope,
    d_rope2,
    d_rw,
    d_v,
    d_v2,
    h,
    h_g,
    h_g2,
    h_kv,
    h_kv2,
    i_cca,
    i_kv1,
    i_mla,
    k,
    k_ca,
    k_cb,
    k_dn,
    k_gr,
    k_s,
    k_sc,
    m_csa,
    m_hca,
    q_kv,
    q_w,
    r_kv,
    r_kv2,
    u,
    u_bw,
    w,
)

GB = GIGA  # datasheets print bandwidth in decimal GB/s

# Elements one token leaves in the cache of one layer (of the L'_att layers: KV_WIDTH2); keys
# that are the values and cached once (attention.kv_cached_once, DeepSeek-V4) leave d_qk a head.
KV_WIDTH = (1 - i_mla) * h_kv * (d_qk + (1 - i_kv1) * d_v) + i_mla * (r_kv + d_rope)
# a kind's own latent attention (dots3's sliding layers: kind_shapes.local.mla) caches its
# own latent and RoPE key
KV_WIDTH2 = (1 - i_mla) * h_kv2 * (d_qk2 + d_v2) + i_mla * (r_kv2 + d_rope2)


def _token_layers(att: sympy.Expr, loc: sympy.Expr, chk: sympy.Expr) -> sympy.Expr:
    """Token-layers one sequence at context T keeps in `att` attention layers, `loc` of them
    local and `chk` chunked: all T in global layers, at most w in local ones and at most c in
    chunked ones (Llama 4 keeps one chunk)."""
    return (att - loc - chk) * T + loc * sympy.Min(T, w) + chk * sympy.Min(T, c)


# The L_kvs layers that read an earlier layer's keys and values (attention.kv_shared_layers,
# L_kvsl of them local) cache none (modeling_gemma4.py: a "reuse" layer never updates the
# cache); where the keys are the values (attention.k_eq_v) transformers still caches both, the
# keys normed and turned, the values normed only (Gemma4TextAttention: cache.update(k, v)).
KV_TOKEN_LAYERS = _token_layers(L_att - L_att2 - (L_kvs - L_kvs2),
                                L_loc - L_loc2 - (L_kvsl - L_kvsl2), L_chk - L_chk2)
KV_TOKEN_LAYERS2 = _token_layers(L_att2 - L_kvs2, L_loc2 - L_kvsl2, L_chk2)
# The other mixers keep a state per sequence whatever T (Mamba: D × N and the last k − 1 inputs
# of its conv; gated DeltaNet: d_k × d_v per value head and its conv's; lightning attention:
# d_la × d_la per head, transformers' MiniMaxCache linear_cache; RWKV: the WKV's numerator,
# denominator and running maximum per channel and the last token's input to the time-mix and to
# the channel-mix, transformers' RwkvModel state; Griffin: the RG-LRU's d_gr and its conv's last
# k − 1 inputs over d_gr, RecurrentGemmaRecurrentBlock's recurrent_states and conv1d_state;
# mLSTM: per head its matrix memory d_mk × d_mv, normaliser d_mk and stabiliser m, xLSTMCache's
# rnn_state;
# short conv: k − 1 inputs; a cross-attention layer: the keys and values of the sequence's T_img
# image tokens, fixed whatever the context, MllamaTextCrossAttention's cache.update; ZAYA1's CCA
# layers beside their keys and values: the convs' last (k_a − 1) + (k_b − 1) inputs over the
# (h + h_kv)·d_qk query and key channels and the last token's delayed value, h_kv·d_qk/2,
# ZayaCCAProjection's conv and recurrent states).
STATE_ELEMENTS = (L_ssm * (d_in * N_s + (k_s - 1) * mixers.CONV_CHANNELS)
                  + L_dn * (H_v * d_lk * d_lv
                            + (k_dn - 1) * (2 * mixers.DN_KEYS + mixers.DN_VALUES))
                  + L_la * H_la * d_la * d_la
                  + L_rw * (3 * d_rw + 2 * d)
                  + L_gr * (d_gr + (k_gr - 1) * d_gr)
                  + L_ml * H_ml * (d_mk * d_mv + d_mk + 1)
                  + L_sc * (k_sc - 1) * d
                  + L_xa * T_img * h_kv * (d_qk + d_v)
                  + L_att * i_cca * ((k_ca - 1 + k_cb - 1) * (h + h_kv) * d_qk
                                     + h_kv * d_qk / 2))

WEIGHTS = q_w * N
# Copies of the cache over the K GPUs: K·h_g heads held where the model has h_kv (MLA: 1).
KV_COPIES = K * h_g / ((1 - i_mla) * h_kv + i_mla)
KV_COPIES2 = K * h_g2 / ((1 - i_mla) * h_kv2 + i_mla)
# b sequences at context T, over all K GPUs (each GPU holds 1/K of it): keys and values, and
# the recurrent states (at the same bytes each)
INDEXER_KEYS = L_idx * d_I * T  # DSA: the indexer's keys of one sequence, all its layers
# DeepSeek-V4: the compressed entries of one sequence, all its CSA and HCA layers
COMPRESSED_ENTRIES = (L_hca * d_qk * sympy.floor(T / m_hca)
                      + L_csa * (d_qk + d_I) * sympy.floor(T / m_csa))
# The shared block (calc.spec.layers.SharedBlockSpec) caches its keys and values at each of its
# L_sb depths, all T tokens (transformers' cache.update with the hybrid layer's index).
SHARED_BLOCK_TOKEN_LAYERS = L_sb * T
KV_CACHE = q_kv * b * ((KV_WIDTH * (KV_TOKEN_LAYERS + SHARED_BLOCK_TOKEN_LAYERS)
                        + INDEXER_KEYS + COMPRESSED_ENTRIES) * KV_COPIES
                       + KV_WIDTH2 * KV_TOKEN_LAYERS2 * KV_COPIES2 + STATE_ELEMENTS)
GPU_BYTES = K * M_gib * GIB
# Weights one decode step reads: all but the routed experts, and the experts its b tokens touch;
# a looped model's layers each pass they run (the next pass cannot start before this one ends,
# and no cache holds a layer's weights between passes).
WEIGHTS_READ = q_w * (N_r - N_er + sympy.Piecewise((N_er * (1 - (1 - k / E) ** b), E > 0),
                                                   (0, True)))

PREFILL_COMPUTE = b * T * F_p / (K * R * u)
BYTES_PER_SECOND = K * BW * GB * u_bw
PREFILL_MEMORY = (WEIGHTS + KV_CACHE) / BYTES_PER_SECOND  # weights read once, cache written
DECODE_COMPUTE = b * F_d / (K * R * u)
DECODE_MEMORY = (WEIGHTS_READ + KV_CACHE) / BYTES_PER_SECOND
# Unevaluated: sympy cannot order compute and memory time, and trying costs a tenth of a second
# at import; the Max is the same either way (tests/test_formulas.py).
DECODE_STEP = sympy.Max(DECODE_COMPUTE, DECODE_MEMORY, evaluate=False)

INFERENCE: dict[str, sympy.Expr] = {
    "weights": WEIGHTS,
    # before any window caps it; DSA's indexer keys included, and DeepSeek-V4's compressed
    # entries as their share of a token (one per m)
    "kv_cache_per_token": q_kv * ((L_att - L_att2 - (L_kvs - L_kvs2) + L_sb) * KV_WIDTH
                                  + (L_att2 - L_kvs2) * KV_WIDTH2 + L_idx * d_I
                                  + L_hca * d_qk / m_hca + L_csa * (d_qk + d_I) / m_csa),
    "kv_cache": KV_CACHE,
    # the recurrent states among it, the same at any context
    "state_cache": q_kv * b * STATE_ELEMENTS,
    "total": WEIGHTS + KV_CACHE,
    "gpu": GPU_BYTES,
    # Sequences at context T whose cache fits beside the weights (KV_CACHE is linear in b).
    "batch_room": (GPU_BYTES - WEIGHTS) / (KV_CACHE / b),
    "prefill_flops": b * T * F_p,
    "prefill_compute_seconds": PREFILL_COMPUTE,
    "prefill_memory_seconds": PREFILL_MEMORY,
    "prefill_seconds": sympy.Max(PREFILL_COMPUTE, PREFILL_MEMORY, evaluate=False),
    "decode_weights_read": WEIGHTS_READ,
    "decode_compute_seconds": DECODE_COMPUTE,
    "decode_memory_seconds": DECODE_MEMORY,
    "decode_weights_seconds": WEIGHTS_READ / BYTES_PER_SECOND,
    "decode_seconds": DECODE_STEP,
    "tokens_per_second": b / DECODE_STEP,
}
