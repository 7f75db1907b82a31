"""Parameter counts: one closed-form expression per named component.

A Linear(n_in, n_out) holds n_in·n_out weights (+ n_out with a bias); a LayerNorm of width n holds
n·(g_norm + b_norm) (γ, and β when present: Ba et al. 2016; OLMo's non-parametric LayerNorm has
neither: Groeneveld et al. 2024 §2.1), an RMSNorm n (γ only: Zhang & Sennrich 2019). Keys are
hierarchical (`attention/q`), as in nanoGPT's sizing notebook, and a total is
the plain sum of its named terms. Structure enters through 0/1 indicators (calc.symbols), so each
term is one general expression; calc.formulas.specialise gives a model's own form.

A model is a sum over the kinds of layer part (PARTS): each part's per-layer expression times the
count of layers that have it (L_att attention layers, L_ssm Mamba, L_dn gated DeltaNet, L_la
lightning attention, L_rw RWKV, L_gr Griffin, L_ml mLSTM, L_sc short convolutions, L_dense dense
FFNs, L_moe MoE FFNs, L norms), each count one symbol that calc.evaluate reads off the spec's
per-layer structure (calc.spec.layers).
"""

from __future__ import annotations

import sympy

from calc.formulas import mixers
from calc.symbols import (
    E_0,
    C_cen,
    D_tg,
    E,
    E_a,
    E_rl,
    E_s,
    H_rct,
    L,
    L_att,
    L_att2,
    L_brs,
    L_csa,
    L_dense,
    L_dn,
    L_dw,
    L_gr,
    L_hca,
    L_idx,
    L_kvs,
    L_kvs2,
    L_la,
    L_loc,
    L_ml,
    L_moe,
    L_rw,
    L_sb,
    L_sc,
    L_ssm,
    L_xa,
    M,
    M_sb,
    N_brq,
    P,
    V,
    V_le,
    V_o,
    V_seg,
    b_dm,
    b_ff,
    b_gh,
    b_lm,
    b_moe,
    b_norm,
    b_o,
    b_oL,
    b_ph,
    b_qkv,
    b_router,
    b_rsc,
    d,
    d_e,
    d_emb,
    d_ff,
    d_I,
    d_qk,
    d_qk2,
    d_rl,
    d_rope,
    d_rope2,
    d_s,
    d_v,
    d_v2,
    g_norm,
    g_o,
    h,
    h2,
    h_I,
    h_kv,
    h_kv2,
    i_au,
    i_bn,
    i_cca,
    i_diff,
    i_dm,
    i_dsa,
    i_fos,
    i_gate,
    i_gh,
    i_glu,
    i_hc,
    i_hcm,
    i_hg,
    i_hw,
    i_kev,
    i_kev2,
    i_krn,
    i_le,
    i_lg,
    i_lr,
    i_ls,
    i_mla,
    i_mn,
    i_moa,
    i_moe,
    i_n0,
    i_ng,
    i_norm_emb,
    i_norm_final,
    i_og,
    i_ph,
    i_pk,
    i_proj,
    i_qk_head,
    i_qk_proj,
    i_qlora,
    i_qsc,
    i_qw,
    i_rbr,
    i_rel,
    i_rgs,
    i_rls,
    i_rs,
    i_rsc,
    i_rse,
    i_rt,
    i_sba,
    i_shared_gate,
    i_sink,
    i_sink2,
    i_skp,
    i_srt,
    i_sub,
    i_tied,
    k,
    k_ca,
    k_cb,
    k_rc,
    m_csa,
    m_hca,
    n_act,
    n_au,
    n_hc,
    n_norm,
    n_pb,
    n_pk,
    p_le,
    r_hc,
    r_kv,
    r_kv2,
    r_lr,
    r_ng,
    r_o,
    r_q,
    r_q2,
    r_rt,
    r_sb,
    w,
)

# Parameters of one norm per unit of width: γ, plus β for a LayerNorm with bias (neither for
# OLMo 1's LayerNorms without parameters).
NORM = g_norm + b_norm
MHA = 1 - i_mla
# The output gate's values per head: d_v (one per channel) or 1 (one per head)
GATE_WIDTH = i_gh + (1 - i_gh) * d_v

# ---- weight matrices: what a token multiplies through (calc.formulas.flops counts these) ----
# MHA/GQA/MQA: W_Q is d × h·d_qk, W_K and W_V are d × h_kv·d_qk and d × h_kv·d_v (Vaswani 2017
# §3.2.2; GQA: Ainslie et al. 2023). MLA (DeepSeek-V2 §2.1.2, DeepSeek-V3 config.json): queries
# go d → r_q (norm) → h·d_qk; keys and values share a latent d → r_kv (norm) → h·(d_nope + d_v),
# plus one RoPE key of width d_rope shared by all heads, projected straight from d. Where the
# keys are the values (Gemma 4's attention_k_eq_v; modeling_gemma4.py Gemma4TextAttention:
# v_proj None, value_states = key_states) there is no W_V. DeepSeek-V4's queries go through a
# latent as MLA's do, d → r_q (norm) → h·d_qk (modeling_deepseek_v4.py DeepseekV4Attention:
# q_a_proj, q_a_norm, q_b_proj; attention.q_lora_rank), and its W_O is grouped: the h·d_v
# outputs in g_o groups, each projected by a block of its own h·d_v/g_o → r_o (o_a_proj, a
# DeepseekV4GroupedLinear of g_o·r_o × h·d_v/g_o), then g_o·r_o → d (o_b_proj).
V_PROJ = (1 - i_kev) * d_v
# A.X-K2 (transformers 5.24.0 modular_axk2.py, AXK2Attention): q_gate_proj reads the query
# latent after and before its norm side by side, 2·r_q wide, and yields each head's query and
# its output gate (attention.mla.latent_gate, 1_latent-gate): W_UQ's input is (1 + 1_lg)·r_q,
# and the gate's is the 2·r_q latent instead of the layer's input d.
ATTENTION_WEIGHTS: dict[str, sympy.Expr] = {
    "attention/q": i_qlora * (d * r_q + (1 + i_lg) * r_q * h * d_qk)
    + (1 - i_qlora) * d * h * d_qk,
    "attention/kv": MHA * d * h_kv * (d_qk + V_PROJ)
    + i_mla * (d * (r_kv + d_rope) + r_kv * h * (d_qk - d_rope + d_v)),
    "attention/o": (1 - i_og) * h * d_v * d + i_og * (h * d_v * r_o + g_o * r_o * d),
    # Qwen3-Next's output gate: W_Q also yields sigmoid gates for each head's output, h·d_v
    # (modeling_qwen3_next.py, Qwen3NextAttention: q_proj of 2·h·d_h); a gate of one value
    # per head is d → h (modeling_lfm3.py Lfm3Attention, modeling_laguna.py LagunaAttention:
    # g_proj Linear(d, heads), broadcast over each head's d_v channels)
    "attention/gate": i_gate * ((1 - i_lg) * d + i_lg * 2 * r_q) * h * GATE_WIDTH,
    # JetMoE's mixture of attention heads (modeling_jetmoe.py, JetMoeMoA): a router
    # Linear(d, E_a) without bias picks the h/h_kv experts whose W_Q and W_O a token uses
    "attention/router": i_moa * d * E_a,
    # Doge's dynamic mask (modeling_doge.py DogeAttention): dt_proj Linear(h_kv·d_v, h_kv)
    # reads each token's values and scores it as a key per key/value head
    "attention/dynamic_mask": i_dm * h_kv * d_v * h_kv,
    # Inkling's projected relative-position bias (attention.relative_logits; modeling_inkling.py
    # InklingAttention.r_proj): Linear(d, h·d_rel, bias=False), each query head's relative
    # states
    "attention/relative": d * h * d_rl,
    # Inkling 2's sinks projected from each token (attention.sink_proj; modeling_inkling2.py
    # Inkling2SlidingAttention.sink_proj): Linear(d, h, bias=False), one sink logit per head
    "attention/sinks": i_sink * i_skp * d * h,
}
# The other E_a − h/h_kv attention experts' W_Q and W_O (h_kv heads each): parameters a token
# does not use, as the routed experts of an MoE FFN.
MOA_IDLE = {"attention/q": i_moa * (E_a * h_kv - h) * d * d_qk,
            "attention/o": i_moa * (E_a * h_kv - h) * d_v * d}


def ffn_weights(width: sympy.Expr) -> sympy.Expr:
    """W_up, W_down (and W_gate when gated) of an FFN of hidden width `width`."""
    return (2 + i_glu) * d * width


# ---- attention, per layer: the weights, their biases and the MLA latents' norms ----------------
ATTENTION_Q = (ATTENTION_WEIGHTS["attention/q"]
               + b_qkv * (MHA * h * d_qk + i_mla * i_qlora * r_q)  # MLA: bias on the q_a only
               + i_qlora * NORM * r_q)  # the latent's norm (MLA's or DeepSeek-V4's)
# dots3 (modular_dots3_note.py, Dots3NoteTextAttention): k_rope_only_layernorm, a norm over
# the shared RoPE key (attention.mla.rope_key_norm, 1_k-rope-norm)
ATTENTION_KV = (ATTENTION_WEIGHTS["attention/kv"]
                + b_qkv * (MHA * h_kv * (d_qk + V_PROJ) + i_mla * (r_kv + d_rope))
                + i_mla * NORM * (r_kv + i_krn * d_rope))
ATTENTION_O = ATTENTION_WEIGHTS["attention/o"] + b_o * d
# A per-channel gate projected with W_Q carries its bias; a per-head g_proj has none (LFM3 and
# Laguna build it with bias=False whatever attention_bias says).
# HunYuan V4's gate under MLA is a gate_proj of its own without bias (modeling_hy_v4.py
# HYV4Attention: gate_proj Linear(d, h·v_head_dim, bias=False)). Beam's gate is its own
# gate_proj without bias and gate_bias, one value per head (modeling_beam.py, BeamAttention:
# gate_proj(x) + gate_bias[None, None, :, None] before the sigmoid): b_gate,head.
ATTENTION_GATE = (ATTENTION_WEIGHTS["attention/gate"]
                  + i_gate * (1 - i_gh) * MHA * (1 - b_gh) * b_qkv * h * d_v + b_gh * h)
# Relative positions (Transformer-XL, Dai et al. 2019 §3.3, as Gopher and Chinchilla use them):
# W_R ∈ R^{d×h·d_qk} projects the sinusoidal embedding of each distance into keys, and the
# content and position biases u, v ∈ R^{h·d_qk} replace the query in two of the four score
# terms; one set per layer (Transformer-XL's untie_r). Gopher's Table 1 sizes are 13·L·d² + V·d.
ATTENTION_POSITION = i_rel * (d * h * d_qk + 2 * h * d_qk)
# Inkling (InklingRelativeLogits.proj): each attention layer's bank of bias profiles, d_rel ×
# E_rel, the window w wide on a sliding layer (InklingAttention.rel_extent), whatever its
# heads: summed over the layers in `components` beside r_proj.
RELATIVE_BANKS = d_rl * (E_rl * (L_att - L_loc) + w * L_loc)
# Inkling's residual short convolutions on the keys and values (InklingAttention.k_sconv and
# v_sconv: InklingShortConvolution, a depthwise nn.Conv1d of kernel k without bias over W_K's
# and W_V's outputs), k weights per channel.
ATTENTION_CONV = k_rc * h_kv * (d_qk + d_v)
# QK-norm: per head over d_qk (Qwen3, Gemma 3: one γ for q, one for k), or over the whole
# projections h·d_qk and h_kv·d_qk (OLMo 2). Without weights (Llama 4's L2 norm) both are 0.
# (Gemma 4's value norm has no weight: Gemma4RMSNorm with_scale=False.)
K_NORM = NORM * (i_qk_head * d_qk + i_qk_proj * h_kv * d_qk)
# DeepSeek-V4's query norm has no γ (q_b_norm, a DeepseekV4UnweightedRMSNorm), its key's has
# (kv_norm): 1_qw = 0.
ATTENTION_QK_NORM = (NORM * i_qw * (i_qk_head * d_qk + i_qk_proj * h * d_qk) + K_NORM
                     + i_cca * h_kv)
# ZAYA1's compressed convolutional attention (calc.spec.attention.CCASpec; transformers 5.24.0
# modeling_zaya.py ZayaCCAProjection): W_Q, W_K and W_V as GQA's (v_proj_current and
# v_proj_delayed, d → h_kv·d_h/2 each, carry W_V's weights and bias), and over the C =
# (h + h_kv)·d_qk channels of the queries and keys side by side conv_qk_depthwise
# (Conv1d(C, C, k_a, groups=C): C·k_a weights) and conv_qk_grouped (Conv1d(C, C, k_b, groups=h +
# h_kv): C·d_qk·k_b weights), each with its C biases. ZayaQKNorm's temp, one value per key/value
# head, is the L2 norm's only parameter (attention/qk_norm).
CCA_CHANNELS = (h + h_kv) * d_qk
CCA_CONV_WEIGHTS = i_cca * CCA_CHANNELS * (k_ca + d_qk * k_cb)
CCA_CONV = CCA_CONV_WEIGHTS + i_cca * 2 * CCA_CHANNELS
# gpt-oss: one learned sink logit per head joins each softmax (modeling_gpt_oss.py, `sinks`);
# MiMo-V2-Flash has them on its sliding layers only (modeling_mimo_v2_flash.py,
# MiMoV2FlashAttention: `sinks` where is_swa), the L'_att layers' 1'_sink (of_kind).
ATTENTION_SINKS = i_sink * (1 - i_skp) * h + ATTENTION_WEIGHTS["attention/sinks"]
# Differential attention (Ye et al. 2024, DIFF Transformer §2.1: λ = exp(λ_q1·λ_k1) −
# exp(λ_q2·λ_k2) + λ_init): four learned vectors of one head's width per layer
# (modeling_diffllama.py, DiffLlamaAttention: lambda_q1, lambda_k1, lambda_q2, lambda_k2 of
# head_dim each); its norm over each output, nn.RMSNorm(2·head_dim, elementwise_affine=False),
# has no parameter.
ATTENTION_LAMBDA = i_diff * 4 * d_qk
# BitNet b1.58 (Ma et al. 2025; modeling_bitnet.py): a norm on W_O's input (attn_sub_norm)
# and one on W_down's input (ffn_sub_norm).
ATTENTION_SUB_NORM = i_sub * NORM * h * d_v
LAYER_NORMS = n_norm * NORM * d
# A.X-K2's gated norms (norm.gate_rank; transformers 5.24.0 modular_axk2.py, AXK2GatedRMSNorm
# and AXK2GateMLP): y = N(x), then y · σ(fc2(SiLU(fc1(y)))), fc1 d → r_ng and fc2 r_ng → d
# without bias; on every layer's input_layernorm and on the MoE layers' post_attention_layernorm
# (AXK2DecoderLayer), L + L_moe of them.
NORM_GATE_WEIGHTS: dict[str, sympy.Expr] = {"norm_gates": 2 * d * r_ng}

# DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2-Exp; transformers 5.24.0
# modeling_deepseek_v32.py, DeepseekV32Indexer), on each attention layer that has its own
# (L_idx; GLM-5's "shared" layers reuse an earlier one's keys): wq_b r_q → h_I·d_I from MLA's
# query latent, wk d → d_I (one key per token), weights_proj d → h_I (a weight per head), all
# without bias; k_norm is an nn.LayerNorm(d_I) with γ and β whatever the model's norm.
# MiniMax-M3's (i_hw = 0; modeling_minimax_m3_vl.py MiniMaxM3VLIndexer, on its
# minimax_m3_sparse layers): q_proj d → h_I·d_I from the residual, k_proj d → d_I, no head
# weights; q_norm and k_norm are RMSNorms of d_I with γ, 2·d_I as DSA's LayerNorm.
INDEXER_WEIGHTS: dict[str, sympy.Expr] = {
    "attention/indexer": (i_hw * r_q + (1 - i_hw) * d) * h_I * d_I + d * d_I + i_hw * d * h_I}
INDEXER: dict[str, sympy.Expr] = {"attention/indexer": INDEXER_WEIGHTS["attention/indexer"]
                                  + 2 * d_I}

# DeepSeek-V4's compressed attention (calc.spec.attention.CompressionSpec; transformers 5.24.0
# modeling_deepseek_v4.py). A CSA layer's DeepseekV4CSACompressor: kv_proj and gate_proj
# d → 2·d_qk (two overlapping series, Ca and Cb) without bias, position_bias m × 2·d_qk, kv_norm
# a DeepseekV4RMSNorm(d_qk) with γ; its DeepseekV4Indexer: the same compressor at 2·d_I (kv_proj,
# gate_proj, position_bias m × 2·d_I, kv_norm d_I), q_b_proj r_q → h_I·d_I from the attention's
# query latent and its DeepseekV4IndexerScorer's weights_proj d → h_I, without bias. An HCA
# layer's DeepseekV4HCACompressor: kv_proj and gate_proj d → d_qk, position_bias m' × d_qk,
# kv_norm d_qk. Their rotary embeddings hold buffers only.
COMPRESSION_WEIGHTS: dict[str, sympy.Expr] = {
    "attention/compressor": L_csa * 2 * d * 2 * d_qk + L_hca * 2 * d * d_qk,
    "attention/indexer": L_csa * (2 * d * 2 * d_I + r_q * h_I * d_I + d * h_I),
}
COMPRESSION: dict[str, sympy.Expr] = {
    "attention/compressor": COMPRESSION_WEIGHTS["attention/compressor"]
    + L_csa * (m_csa * 2 * d_qk + d_qk) + L_hca * (m_hca * d_qk + d_qk),
    "attention/indexer": COMPRESSION_WEIGHTS["attention/indexer"]
    + L_csa * (m_csa * 2 * d_I + d_I),
}

# Hyper-connections (Zhu et al. 2024, arXiv 2409.19606): n_hc residual streams of width d. A
# map before each sublayer (the mixer's and the FFN's: two per layer) reads the n_hc·d values
# of a token, normed without a weight, and yields n_hc weights summing the streams into the
# sublayer's input and n_hc spreading its output over them; DeepSeek-V4's mHC also an
# n_hc × n_hc matrix mixing the streams (1_hcm). Its dynamic part is a weight of one row per
# output, its static part a bias per output and a scale per output group (pre, post, and the
# mix): transformers 5.24.0 modeling_hy_v4.py HYV4HyperConnection (fn 2n × n·d, base 2n,
# scale 2) and modeling_deepseek_v4.py DeepseekV4HyperConnection (fn (2 + n)·n × n·d, base
# (2 + n)·n, scale 3). Before the final norm one head map collapses the streams (HYV4HyperHead,
# DeepseekV4HyperHead: hc_fn n × n·d, hc_base n, hc_scale 1).
# Qwen4-Exp's gated low-rank maps (1_hg; transformers 5.24.0 modular_qwen4_exp.py,
# Qwen4ExpTextGatedResidual): hc_norm, a grouped RMSNorm with γ over the n_hc·d streams,
# input_mix_weight_down n_hc·d → r_hc and input_mix_weight_up r_hc → n_hc·d (no bias) gating
# the normed streams, whose mean is the sublayer's input, and block_inject_weight
# n_hc·d → n_hc spreading its output: n_hc outputs, no bias and no scale. The head map
# (hyper_connection_mixer) is the same without block_inject_weight.
HC_OUTPUTS = (2 - i_hg) * n_hc + i_hcm * n_hc**2  # one map's outputs per token
HC_GATE = 2 * r_hc * n_hc * d  # a gated map's down and up projections
HC_MAPS = 2  # per layer: before the mixer and before the FFN
HC_WEIGHTS = {"hyper_connections/layers": HC_MAPS * (HC_OUTPUTS * n_hc * d + HC_GATE),
              "hyper_connections/head": (1 - i_hg) * n_hc * n_hc * d + HC_GATE}
HYPER_CONNECTIONS: dict[str, sympy.Expr] = {
    "hyper_connections/layers": HC_MAPS * (
        HC_OUTPUTS * (n_hc * d + 1 - i_hg) + HC_GATE + (i_hc - i_hg) * (2 + i_hcm)
        + i_hg * n_hc * d)}

# One attention layer's attention: every key is multiplied by L_att in the totals.
ATTENTION: dict[str, sympy.Expr] = {
    "attention/q": ATTENTION_Q + MOA_IDLE["attention/q"],
    "attention/kv": ATTENTION_KV,
    "attention/o": ATTENTION_O + MOA_IDLE["attention/o"],
    "attention/gate": ATTENTION_GATE,
    "attention/router": ATTENTION_WEIGHTS["attention/router"],
    "attention/position": ATTENTION_POSITION,
    # ZAYA1's CCA convolutions over q and k, Inkling's residual convolutions on k and v
    "attention/conv": CCA_CONV + ATTENTION_CONV,
    "attention/qk_norm": ATTENTION_QK_NORM,
    "attention/sinks": ATTENTION_SINKS,
    "attention/lambda": ATTENTION_LAMBDA,
    "attention/sub_norm": ATTENTION_SUB_NORM,
    # and A, one learned value per key/value head (exp(A·softplus(dt))), with dt_proj's bias
    # where attention_bias is set
    "attention/dynamic_mask": ATTENTION_WEIGHTS["attention/dynamic_mask"]
    + i_dm * h_kv + b_dm * h_kv,
    # and Inkling 2's scale per head and relative state (Inkling2ScaledL2Clip.scale, h × d_rel)
    "attention/relative": ATTENTION_WEIGHTS["attention/relative"] + i_rls * h * d_rl,
    # nGPT (modular_dory.py, DoryAttention): sqk, a scale per query channel, and s_gate, a
    # scale per output-gate value
    "attention/scales": i_ng * (h * d_qk + i_gate * h * GATE_WIDTH)
    # Inkling 2's scale per query channel (attention.query_scale; Inkling2QueryProjection's
    # Inkling2ScaledL2Clip.scale, num_heads × head_dim)
    + i_qsc * h * d_qk,
}
# What the L_kvs layers lack (attention.kv_shared_layers; modeling_gemma4.py: a layer whose
# kv_sharing_mode is "reuse" builds no k_proj, v_proj or k_norm and reads the keys and values
# of the last earlier layer of its kind).
KV_OWN: dict[str, sympy.Expr] = {"attention/kv": ATTENTION_KV, "attention/qk_norm": K_NORM}
KV_OWN_WEIGHTS = {"attention/kv": ATTENTION_WEIGHTS["attention/kv"]}
# Active per token: the h/h_kv attention experts it is routed to.
ATTENTION_ACTIVE = {key: expr - MOA_IDLE.get(key, 0) for key, expr in ATTENTION.items()}
# Inkling's residual short convolutions on the attention and FFN outputs (InklingDecoderLayer's
# attn_sconv and mlp_sconv: depthwise over d, kernel k, no bias), every layer's.
RESIDUAL_CONV: dict[str, sympy.Expr] = {"residual_conv": 2 * d * k_rc}
# Inkling 2's per-token taps on its full layers' key and value convolutions
# (residual_conv_taps; modeling_inkling2.py Inkling2DynamicShortConvolution.weight_proj:
# Linear(d, h_kv·k, bias=False) for the keys and one for the values), over the H_rct key/value
# heads of the layers that have them; their static taps are attention/conv's
CONV_TAP_WEIGHTS: dict[str, sympy.Expr] = {"attention/conv_taps": 2 * d * k_rc}
# Inkling 2's attention residuals over blocks (block_residual; Inkling2BlockAttentionResidual):
# a learned query of d each (N_brq of them: attention_input, 3 on a full layer, mlp_input,
# final_input), and on the L_brs split layers the key's and the value's own input norms
# (k_input_layernorm, v_input_layernorm; q_input_layernorm stands for input_layernorm)
BLOCK_RESIDUAL: dict[str, sympy.Expr] = {"block_residual": d * N_brq + 2 * NORM * d * L_brs}
# every layer's, × L; nGPT's residual rates (DoryDecoderLayer's lambda_1, lambda_2: d each)
NORMS: dict[str, sympy.Expr] = {"norms": LAYER_NORMS, "residual_scales": i_ng * 2 * d}
# One Transformer layer without its FFN: attention and the layer's norms.
PER_LAYER: dict[str, sympy.Expr] = {**ATTENTION, **NORMS}

# ---- feed-forward, per dense layer ----------------------------------------------------------
# Plain: W_1 d × d_ff, W_2 d_ff × d (Vaswani et al. 2017 §3.3); gated adds W_gate d × d_ff
# (Shazeer 2020, "GLU Variants Improve Transformer", §2). xIELU (Apertus) learns two scalars in
# each FFN's activation (transformers' XIELUActivation: alpha_p, alpha_n).
DENSE_FFN: dict[str, sympy.Expr] = {
    "mlp/up": (1 + i_glu) * (d * d_ff + b_ff * d_ff),
    "mlp/down": d_ff * d + b_ff * d,
    "mlp/act": n_act,
    "mlp/sub_norm": i_sub * NORM * d_ff,
    # Inkling (InklingMLP.global_scale): one learned scalar on the dense FFN's output
    "mlp/scale": i_fos,
    # nGPT (DoryMLP): suv_gate and suv_up, a scale per gate and up output
    "mlp/scales": i_ng * (1 + i_glu) * d_ff,
}


def _expert(width: sympy.Expr) -> sympy.Expr:
    """One expert: an FFN of hidden width `width`, gated or not, with the FFN's biases."""
    return ffn_weights(width) + b_ff * ((1 + i_glu) * width + d)


# Doge's product-key experts (moe.product_keys; modeling_doge.py DogeCDMoE): expert e is row e
# of down_embed and of up_embed, nn.Embedding(E, d) each: d → 1, the activation, 1 → d
# (d_e = 1), no gate and no bias.
EXPERT_WEIGHTS = (1 - i_pk) * ffn_weights(d_e) + i_pk * 2 * d * d_e
EXPERT = (1 - i_pk) * _expert(d_e) + i_pk * 2 * d * d_e
SHARED_EXPERT = _expert(d_s)

# ---- mixture of experts, per MoE layer ------------------------------------------------------
# Router: Linear(d, E) (Shazeer et al. 2017; Fedus et al. 2021), with an optional bias per
# expert (DeepSeek-V3's e_score_correction_bias). Shared experts (DeepSeek-MoE, Dai et al. 2024)
# every token uses; Qwen2-MoE scales them by a learned gate Linear(d, 1). LongCat-Flash's router
# also scores E_0 zero-computation experts (arXiv 2509.01322 §2.1; modeling_longcat_flash.py,
# LongcatFlashTopkRouter: classifier Linear(d, E + E_0), e_score_correction_bias E + E_0 wide);
# an identity expert holds no weights.
# Product keys (Lample et al. 2019 §3.2; DogeCDMoE.router_gate Linear(d, 2·⌊√E⌋, bias=False)):
# two halves of n_pk = ⌊√E⌋ sub-key scores instead of one score per expert. Inkling's router
# (InklingTopkRouter) scores its E_s shared experts too, weight (E + E_s) × d, and scales every
# routing weight by one learned scalar, global_scale (1_router-scale). ZAYA1's router
# (calc.spec.ffn.RouterMLPSpec; modeling_zaya.py ZayaRouter, ZayaRouterMLP): down_proj d → r_rt,
# fc1 and fc2 r_rt → r_rt, out_proj r_rt → E + 1 (the skip class) in place of Linear(d, E); the
# first three with bias, a norm over r_rt, and router_states_scale, r_rt values on every MoE
# layer but the first (components takes the first's off).
ROUTER_MLP_WEIGHTS = d * r_rt + 2 * r_rt**2 + r_rt * (E + 1)
ROUTER_WEIGHTS = ((1 - i_pk - i_rt) * d * (E + E_0 + i_srt * E_s) + i_pk * d * 2 * n_pk
                  + i_rt * ROUTER_MLP_WEIGHTS)
MOE_FFN: dict[str, sympy.Expr] = {
    # Gemma 4 (modeling_gemma4.py, Gemma4TextRouter): scale, d values on the router's input
    # after a norm without weights, and per_expert_scale, E values on the chosen weights
    "moe/router": ROUTER_WEIGHTS + b_router * (E + E_0) + i_rs * (d + E) + i_rgs
    + i_rt * r_rt * (3 + NORM + 1),
    "moe/experts": E * EXPERT,
    "moe/shared": E_s * SHARED_EXPERT + i_shared_gate * d,
    "moe/bias": b_moe * d,  # JetMoE: one bias on the combined output (JetMoeMoE.bias)
    # A.X-K1 (modeling_axk1.py, AXK1MoE): post_mlp_layernorm, an RMSNorm over the routed and
    # shared experts' sum, on the MoE layers only (its dense layers' AXK1MLP has none)
    # Gemma 4 (Gemma4TextDecoderLayer with enable_moe_block): pre_feedforward_layernorm_2
    # before the routed experts, post_feedforward_layernorm_1 and _2 after each branch
    "moe/norm": i_mn * NORM * d + i_bn * 3 * NORM * d,
}
# Active per token: only k of the E routed experts (calc.counting.PARAMETERS says so in reports);
# with zero-computation experts k is the expected top-k·E/(E + E_0) (calc.evaluate).
MOE_ACTIVE: dict[str, sympy.Expr] = {**MOE_FFN, "moe/experts": k * EXPERT}

# ---- once per model ------------------------------------------------------------------------
ONCE: dict[str, sympy.Expr] = {
    "embedding/token": V * d_emb,  # E ∈ R^{V×d_emb} (Vaswani et al. 2017 §3.4; d_emb = d but
    # in OPT-350m)
    "embedding/position": P * d,  # learned table P ∈ R^{P×d} (GPT-2); 0 for RoPE/ALiBi/none
    "embedding/norm": i_norm_emb * NORM * d,  # BLOOM's word_embeddings_layernorm
    # CPM-Ant (modeling_cpmant.py, CpmAntModel.segment_embedding): a table of segment_types
    # rows whose row for each token's segment joins its token embedding
    "embedding/segment": V_seg * d,
    # a looped model's initial state (calc.spec.loop.LoopSpec.init_state; modeling_hrm_text.py
    # HrmTextModel.z_L_init, nn.Parameter(torch.zeros(d), requires_grad=False)): frozen, but a
    # parameter torch's numel and transformers' num_parameters() count
    "loop/state": i_ls * d,
    # a bucketed score bias (position.kind 'bucketed'): one table for the model, a value per
    # head for each relative-position bucket and each segment pair (CPM-Ant's
    # CpmAntSegmentPositionEmbedding: segment_types² + position_bias_num_buckets rows × heads)
    "position_bias": n_pb * h,
    # OPT (modeling_opt.py): project_in d_emb → d after the embedding, project_out d → d_emb
    # before the head, both without bias, when word_embed_proj_dim differs from hidden_size.
    "embedding_projection": i_proj * 2 * d_emb * d,
    "hyper_connections/head": (HC_WEIGHTS["hyper_connections/head"]
                               + (1 - i_hg) * n_hc + i_hc - i_hg + i_hg * n_hc * d),
    # A drafter (modeling_gemma4_assistant.py, Gemma4AssistantForCausalLM): pre_projection
    # Linear(2·D, d) of the target's [embedding, hidden state] and post_projection Linear(d, D),
    # both bias=False; D = 0 without a drafter
    "drafter/projections": 3 * D_tg * d,
    "final_norm": i_norm_final * NORM * d,
    # Gemma4AssistantMaskedEmbedder: centroids Linear(d, C, bias=False); its token_ordering is
    # a buffer (V indices), not a parameter
    "centroid_head": C_cen * d,
    # W_U ∈ R^{d×V_o}; a tied W_U = Eᵀ counts once (and has V_o = V rows, calc.spec.model). V_o
    # < V where the head scores only the first V_o tokens (modeling_apertus1p5.py: lm_head of
    # output_vocab_size rows beside an embedding of vocab_size)
    "lm_head": (1 - i_tied) * V_o * d_emb + b_lm * V_o + i_ng * V_o,  # nGPT's logit_scale
    # ModernBERT decoder (modeling_modernbert_decoder.py, ModernBertDecoderPredictionHead):
    # dense Linear(d, d, bias=classifier_bias), an activation and a norm of the model's kind,
    # between the final norm and the LM head
    "prediction_head": i_ph * (d * d + b_ph * d + NORM * d),
}
EMBEDDING_KEYS = ("embedding/token", "embedding/position", "embedding/segment",
                  "per_layer_embeddings/table")

# ---- per-layer embeddings (calc.spec.layers.PerLayerEmbeddingsSpec) ---------------------------
# transformers 5.24.0 modeling_gemma4.py: Gemma4TextModel's embed_tokens_per_layer
# (vocab_size_per_layer_input × L·p, a token embedding: counted with the embeddings),
# per_layer_model_projection Linear(d, L·p, bias=False) and per_layer_projection_norm over p;
# in each Gemma4TextDecoderLayer per_layer_input_gate Linear(d, p, bias=False),
# per_layer_projection Linear(p, d, bias=False) and post_per_layer_input_norm over d.
PER_LAYER_EMBEDDINGS_WEIGHTS: dict[str, sympy.Expr] = {
    "per_layer_embeddings/projection": d * L * p_le,  # once, before the layers
    "per_layer_embeddings/layers": L * 2 * d * p_le,  # each layer's gate and projection
}
PER_LAYER_EMBEDDINGS: dict[str, sympy.Expr] = {
    "per_layer_embeddings/table": V_le * L * p_le,
    **PER_LAYER_EMBEDDINGS_WEIGHTS,
    "per_layer_embeddings/norms": i_le * NORM * (p_le + L * d),
}

# ---- AltUp and LAuReL (calc.spec.layers.AltUpSpec, LaurelSpec: Gemma 3n) ---------------------
# transformers 5.24.0 modeling_gemma3n.py, Gemma3nTextAltUp in every layer: modality_router
# Linear(d, n), prediction_coefs Linear(n, n²), correction_coefs Linear(n, n), all
# bias=False, and correct_output_scale, d values; Gemma3nTextModel: altup_projections and
# altup_unembed_projections, n − 1 Linear(d, d, bias=False) each. Gemma3nTextLaurelBlock in
# every layer: linear_left Linear(d, r) and linear_right Linear(r, d), bias=False.
ALTUP_LAYER_WEIGHTS = d * n_au + n_au**3 + n_au**2  # a layer's router and coefficients
ALTUP_WEIGHTS: dict[str, sympy.Expr] = {
    "altup/layers": L * ALTUP_LAYER_WEIGHTS,
    "altup/projections": 2 * (n_au - i_au) * d**2,  # into and out of the n − 1 copies
}
LAUREL_WEIGHTS: dict[str, sympy.Expr] = {"laurel/layers": L * 2 * d * r_lr}
ALTUP_LAUREL: dict[str, sympy.Expr] = {
    **ALTUP_WEIGHTS,
    "altup/layers": ALTUP_WEIGHTS["altup/layers"] + L * i_au * d,  # + correct_output_scale
    "altup/norms": L * i_au * NORM * d,  # router_norm
    **LAUREL_WEIGHTS,
    "laurel/norms": L * i_lr * NORM * d,  # post_laurel_norm
}


def of_kind(expr: sympy.Expr) -> sympy.Expr:
    """`expr`, one attention layer's, for the L'_att layers of the kind with head shapes of
    its own (attention.kind_shapes): h', h'_kv, d'_qk, d'_v, its sinks 1'_sink, whether its
    keys are its values and its latent ranks r'_q, r'_kv and d'_rope (dots3's sliding
    layers) in place of the model's."""
    return expr.subs({h: h2, h_kv: h_kv2, d_qk: d_qk2, d_v: d_v2, i_sink: i_sink2,
                      i_kev: i_kev2, r_q: r_q2, r_kv: r_kv2, d_rope: d_rope2},
                     simultaneous=True)


def over_attention_layers(expr: sympy.Expr) -> sympy.Expr:
    """`expr`, one attention layer's, summed over the L_att attention layers, of which L'_att
    have the other kind's head shapes (Laguna: 64 query heads on its 30 sliding layers, 48 on
    its 10 full ones)."""
    return (L_att - L_att2) * expr + L_att2 * of_kind(expr)


def over_kv_shared_layers(expr: sympy.Expr) -> sympy.Expr:
    """`expr`, one attention layer's, summed over the L_kvs layers without keys and values of
    their own, of which L'_kvs have the other kind's head shapes."""
    return (L_kvs - L_kvs2) * expr + L_kvs2 * of_kind(expr)


def over_dense_layers(expr: sympy.Expr) -> sympy.Expr:
    """`expr`, one dense FFN's, summed over the L_dense dense FFNs, of which L_dw are 2·d_ff
    wide (ffn.double_wide; modeling_gemma4.py Gemma4TextMLP: intermediate_size × 2 on the
    kv-shared layers when use_double_wide_mlp)."""
    return L_dense * expr + L_dw * (expr.subs(d_ff, 2 * d_ff) - expr)


def attention_totals(attention: dict[str, sympy.Expr],
                     own: dict[str, sympy.Expr] = KV_OWN) -> dict[str, sympy.Expr]:
    """Each attention term summed over the attention layers, less what the kv-shared layers
    do not have (`own`: KV_OWN, or its weights alone)."""
    return {key: over_attention_layers(expr) - over_kv_shared_layers(own.get(key, sympy.S.Zero))
            for key, expr in attention.items()}


# ---- the shared block (calc.spec.layers.SharedBlockSpec: Zamba, Zamba2) ---------------------
# Its input is [hidden, embedding], 2d wide (Glorioso et al. 2024, arXiv 2405.16712, Fig. 2;
# modeling_zamba.py ZambaAttentionDecoderLayer: torch.concatenate then input_layernorm of
# attention_hidden_size = 2·hidden_size; ZambaAttention's q/k/v_proj read attention_hidden_size
# and o_proj writes hidden_size, all bias=False; modeling_zamba2.py the same).
SB_INPUT = 2 * d
# What a token multiplies through at each depth the block runs at (calc.formulas.flops):
SHARED_BLOCK_WEIGHTS: dict[str, sympy.Expr] = {
    "shared_block/attention": SB_INPUT * h * d_qk + SB_INPUT * h_kv * (d_qk + d_v) + h * d_v * d,
    "shared_block/mlp": ffn_weights(d_ff),
    # each depth's own Linear(hidden, hidden, bias=False) after the block (ZambaHybridLayer's
    # and Zamba2HybridLayer's `linear`)
    "shared_block/projection": d * d,
    # Zamba2 (arXiv 2411.15242, Fig. 2; modeling_zamba2.py): each depth's adapters, pairs of
    # Linear(bias=False) whose output is added to the shared projection's: Zamba2MLP's
    # gate_up_proj_adapter d → r → 2·d_ff (the gate and up widths), and with
    # use_shared_attention_adapter Zamba2Attention's linear_q/k/v_adapter 2d → r → the
    # projection's output width
    "shared_block/adapters": r_sb * (d + (1 + i_glu) * d_ff)
    + i_sba * r_sb * (3 * SB_INPUT + h * d_qk + h_kv * (d_qk + d_v)),
}
# Each of the M_sb weight sets once, the projection and the adapters once per depth (L_sb):
# transformers ties every depth's block to the set it repeats (modeling_zamba.py
# _tied_weights_keys: every hybrid layer's shared_transf to the first one's; modeling_zamba2.py
# get_layers: hybrid layer i to layer i mod num_mem_blocks's shared_transformer, its adapter
# lists included, each holding the adapters of the depths that use the set).
SHARED_BLOCK: dict[str, sympy.Expr] = {
    "shared_block/attention": M_sb * SHARED_BLOCK_WEIGHTS["shared_block/attention"],
    "shared_block/mlp": M_sb * (DENSE_FFN["mlp/up"] + DENSE_FFN["mlp/down"] + n_act),
    "shared_block/norms": M_sb * NORM * (SB_INPUT + d),  # input_layernorm, pre_ff_layernorm
    "shared_block/projection": L_sb * SHARED_BLOCK_WEIGHTS["shared_block/projection"],
    "shared_block/adapters": L_sb * SHARED_BLOCK_WEIGHTS["shared_block/adapters"],
}

# ---- cross-attention layers (calc.spec.layers.CrossAttentionSpec: Llama 3.2 Vision) ----------
# transformers 5.24.0 modeling_mllama.py MllamaTextCrossAttention: q_proj d → h·d_h reads the
# text, k_proj and v_proj d → h_kv·d_h read the image tokens (projected to d by the wrapper's
# multi_modal_projector), o_proj h·d_h → d, all bias=False. The products a token or an image
# token multiplies through (calc.formulas.flops):
CROSS_ATTENTION_WEIGHTS: dict[str, sympy.Expr] = {
    "cross_attention/q": d * h * d_qk,
    "cross_attention/kv": d * h_kv * (d_qk + d_v),
    "cross_attention/o": h * d_v * d,
}
# and q_norm, k_norm (MllamaTextRMSNorm(head_dim), the model's norm over d_h), and
# MllamaCrossAttentionDecoderLayer's cross_attn_attn_gate and cross_attn_mlp_gate (one value
# each, torch.zeros(1), read through tanh). The layer's input and post-attention norms are
# every layer's (NORMS), its MLP a dense FFN (DENSE_FFN).
CROSS_ATTENTION_GATES = 2
CROSS_ATTENTION: dict[str, sympy.Expr] = {
    **CROSS_ATTENTION_WEIGHTS,
    "cross_attention/qk_norm": NORM * 2 * d_qk,
    "cross_attention/gates": sympy.Integer(CROSS_ATTENTION_GATES),
}

# Learned residual scales (calc.spec.residual.ResidualScalesSpec): at each residual add (the
# mixer's, and the FFN's where the layer has one) a scale on the residual (Doge's
# input_residual), its bias, and a scale and bias on the sublayer's output (ZAYA1's
# ZayaResidualScaling); the embedding's scale and bias once.
RESIDUAL_SCALES: dict[str, sympy.Expr] = {
    "residual_scales": i_rsc * d * (1 + b_rsc + 2 * i_rbr)}

# Each kind of layer part, with the count of layers that have it: a model is their sum.
PARTS: tuple[tuple[sympy.Expr, dict[str, sympy.Expr]], ...] = (
    (L_att, ATTENTION), (L_idx, INDEXER), (L, NORMS), (L + L_moe, NORM_GATE_WEIGHTS),
    (L, RESIDUAL_CONV), (H_rct, CONV_TAP_WEIGHTS), (sympy.S.One, BLOCK_RESIDUAL),
    (L, HYPER_CONNECTIONS), (L + L_dense + L_moe, RESIDUAL_SCALES),
    (L_ssm, mixers.MAMBA),
    (L_dn, mixers.DELTANET), (L_la, mixers.LIGHTNING), (L_rw, mixers.RWKV),
    (L_gr, mixers.GRIFFIN), (L_ml, mixers.MLSTM), (L_sc, mixers.SHORT_CONV),
    (L_xa, CROSS_ATTENTION),
    (L_dense, DENSE_FFN),
)


# GPT-NeoX-Japanese (modeling_gpt_neox_japanese.py, GPTNeoXJapaneseLayer): the attention's
# dense_bias, d values, exists on the last layer only (use_bias = layer_number ==
# num_hidden_layers - 1); counted once, with W_O's own terms.
LAST_OUT_BIAS = b_oL * d


def components(per_moe_layer: dict[str, sympy.Expr] = MOE_FFN,
               attention: dict[str, sympy.Expr] = ATTENTION) -> dict[str, sympy.Expr]:
    """Totals over the whole model: each part's per-layer terms × the layers that have it (the
    attention layers' `attention`, the last layer's own W_O bias), the MoE terms × L_moe, and
    the once-per-model terms."""
    totals = attention_totals(attention)
    totals["attention/o"] += LAST_OUT_BIAS
    totals["attention/relative"] += RELATIVE_BANKS
    # DeepSeek-V4's compressors and CSA indexers, summed over their layers already; the CSA
    # indexer is attention/indexer as DSA's is
    totals["attention/compressor"] = COMPRESSION["attention/compressor"]
    parts: dict[str, sympy.Expr] = {}
    for count, part in PARTS[1:-1]:  # a key in two parts (residual_scales: nGPT's, ZAYA1's) sums
        for key, expr in part.items():
            parts[key] = parts.get(key, 0) + count * expr
    parts["attention/indexer"] += COMPRESSION["attention/indexer"]
    out = {
        **totals,
        **parts,
        **{key: over_dense_layers(expr) for key, expr in DENSE_FFN.items()},
        **{key: L_moe * expr for key, expr in per_moe_layer.items()},
        **SHARED_BLOCK,
        **PER_LAYER_EMBEDDINGS,
        **ALTUP_LAUREL,
        **ONCE,
    }
    # ModernBERT decoder: layer 0's attn_norm is nn.Identity (ModernBertDecoderLayer), one
    # norm of the L·n_norm fewer (norm.first_mixer_norm, 1_n0 = 0)
    out["norms"] -= (1 - i_n0) * NORM * d
    # ZAYA1's first MoE layer has no router_states_scale (ZayaRouter.use_eda = layer_idx != 0)
    out["moe/router"] -= i_rt * r_rt
    out["residual_scales"] += i_rse * 2 * d  # the embedding's scale and bias
    return out


COMPONENTS = components()
TOTAL = sympy.Add(*COMPONENTS.values())
EMBEDDING = sympy.Add(*(COMPONENTS[key] for key in EMBEDDING_KEYS))
# Kaplan et al. 2020 §2.1: N excludes embeddings; an untied LM head is an embedding too.
NON_EMBEDDING = TOTAL - EMBEDDING - ONCE["lm_head"]
ACTIVE = sympy.Add(*components(MOE_ACTIVE, ATTENTION_ACTIVE).values())

# ---- multi-token prediction, counted apart ---------------------------------------------------
# DeepSeek-V3 §2.2: module k keeps the shared embedding and output head and adds two RMSNorms on
# its inputs, a projection M_k ∈ R^{d×2d}, one Transformer block (an MoE block in V3) and, in
# the released checkpoint, a norm before the shared head (shared_head.norm). The block is one of
# the model's attention blocks, DSA's indexer included when the model has one (transformers
# 5.24.0 does not build the MTP layers, so nothing there checks this part).
_BLOCK = (sympy.Add(*PER_LAYER.values()) + i_dsa * INDEXER["attention/indexer"]
          + i_moe * sympy.Add(*MOE_FFN.values())
          + (1 - i_moe) * sympy.Add(*DENSE_FFN.values()))  # an attention block
MTP: dict[str, sympy.Expr] = {
    "mtp/projection": M * 2 * d * d,
    "mtp/norms": M * 3 * NORM * d,
    "mtp/block": M * _BLOCK,
}

SUMMARY: dict[str, sympy.Expr] = {
    "total": TOTAL,
    "embedding": EMBEDDING,
    "non_embedding": NON_EMBEDDING,
    "active": ACTIVE,
    "mtp": sympy.Add(*MTP.values()),
}
