"""Training memory of the most loaded GPU: model states and activations, in bytes.

Model states (Rajbhandari et al. 2020, ZeRO, §3.1 and Fig. 1): Ψ parameters on a GPU hold working
weights (q_w bytes each), gradients (q_g) and the optimizer side: fp32 master weights (q_m) and
optimizer states (q_o), ZeRO's K = q_m + q_o (12 for mixed-precision Adam: 2Ψ + 2Ψ + 12Ψ = 16Ψ).
Some recipes add an fp32 copy of the gradients (q_gc), which Megatron-LM's distributed optimizer
shards with the optimizer side (Megatron-LM README, "Distributed Optimizer": "fp16 param, fp16
grads" 20 bytes → 4 + 16/d; "bf16 param, fp32 grads" 18 → 6 + 12/d). ZeRO stage 1 partitions
the optimizer side over the N_d data-parallel ranks, stage 2 also the gradients, stage 3 also the
weights; a piece is divided by N_d^{1[stage ≥ s]}.

Tensor (t) and pipeline (p) parallelism: the most loaded GPU holds the first stage's layers plus
the embedding, and the untied LM head too when p = 1, all split t ways (Megatron-LM
megatron/training/theoretical_memory_usage.py, "most loaded model shard"; norms are split too).
Expert parallelism (e, carved out of the data-parallel ranks) splits the routed experts e ways
more (Lepikhin et al. 2021, GShard §2.2); ZeRO then shards them over the N_d·c/e ranks that hold
the same experts, the rest over all N_d·c data- and context-parallel ranks (Megatron-LM's
distributed optimizer shards over both). Context parallelism (c) gives each GPU s/c of every
sequence's tokens, so activations shrink c ways; the interleaved schedule keeps
1 + (p − 1)/(p·v) times more in flight (theoretical_memory_usage.py, "interleaved schedule
memory penalty").
The first stage holds L_s = ⌈L/p⌉ layers: when p does not divide L the first stages get one more
(32 layers on 3 stages: 11, 11, 10), so a GPU holds whole layers, never L/p of them. Each rank
holds h_t = ⌈h_kv/t⌉ key/value heads: with t > h_kv a KV head cannot be split, so its K and V
projections and activations are replicated t/h_kv times (vLLM's QKVParallelLinear:
num_kv_heads = 1, num_kv_head_replicas = t / h_kv when t >= h_kv).

Activations follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
Transformer Models", §4, Table 2): per layer s·b·h·(34 + 5·a·s/h) bytes with 2-byte activations,
1-byte dropout masks, a 4h GeLU MLP and MHA. Here every tensor of that accounting has its own
width, so other architectures (GQA, gated FFNs, MoE, MLA, 4-byte activations, no dropout) change
the right term; with the paper's architecture the expression reduces to the paper's exactly
(tests/test_memory.py). Replicated tensors (norm inputs, projection inputs, dropout masks) are
split t ways only under sequence parallelism; tensors inside the tensor-parallel region always
are. Flash attention and selective recomputation both drop the stored s×s scores (5·a·s/h);
full recomputation keeps only each layer's input, s·b·h·q_a. With the 1F1B schedule the first
pipeline stage holds its L_s layers for p micro-batches in flight (§4.2.3): L layers' worth when
p divides L, p·⌈L/p⌉ otherwise.

Under --framework hf the activations are what transformers' own modules save for the backward
(i_hf): read tensor by tensor in transformers 5.24's Llama modules (modeling_llama.py, which
most decoder types copy) and proved on the meta device by calc.verify.memory.
"""

from __future__ import annotations

import sympy

from calc.counting import GIB, MASK_BYTES, TOKEN_ID_BYTES
from calc.formulas import mixers, params
from calc.symbols import (
    B_I,
    E_0,
    K_I,
    SYMBOLS,
    B_bk,
    D_tg,
    E,
    E_s,
    L,
    L_s,
    L_s_att,
    L_s_att2,
    L_s_dense,
    L_s_dn,
    L_s_dw,
    L_s_gr,
    L_s_kvs,
    L_s_kvs2,
    L_s_la,
    L_s_ml,
    L_s_rw,
    L_s_sb,
    L_s_sc,
    L_s_sel,
    L_s_ssm,
    L_s_xa,
    L_sm,
    L_w,
    M,
    M_gib,
    N,
    N_big,
    N_e,
    N_emb,
    N_head,
    N_mtp,
    N_mtp_e,
    P_pf,
    T,
    T_img,
    V_cen,
    V_o,
    a_down,
    a_g,
    a_gate,
    a_k,
    a_o,
    a_q,
    a_r,
    a_shared_expert_gate,
    a_sink,
    a_up,
    a_v,
    b,
    b_qkv,
    b_rsc,
    d,
    d_e,
    d_ff,
    d_qk,
    d_rl,
    d_rope,
    d_s,
    d_v,
    g_o,
    h,
    h_kv,
    h_t,
    h_t2,
    i_ao,
    i_au,
    i_cca,
    i_diff,
    i_drop,
    i_dsa,
    i_dual,
    i_eager,
    i_frozen,
    i_full,
    i_gate,
    i_glu,
    i_hc,
    i_head,
    i_hf,
    i_hg,
    i_img,
    i_keep_down,
    i_keep_exp,
    i_keep_head,
    i_keep_mix,
    i_keep_o,
    i_keep_qkv,
    i_keep_up,
    i_kev,
    i_le,
    i_lg,
    i_lr,
    i_mla,
    i_mn,
    i_mtps,
    i_norm_final,
    i_og,
    i_oib,
    i_ph,
    i_qh,
    i_qk_head,
    i_qk_proj,
    i_qlora,
    i_qsa,
    i_rbr,
    i_rnu,
    i_rope,
    i_rsc,
    i_rse,
    i_rt,
    i_sba,
    i_scores,
    i_shared_gate,
    i_sp,
    i_swr,
    i_up,
    i_vp,
    i_z1,
    i_z2,
    i_z3,
    k,
    k_rc,
    n_au,
    n_cp,
    n_dp,
    n_ep,
    n_hc,
    n_norm,
    n_pp,
    n_tp,
    n_vp,
    p_le,
    q_a,
    q_dq,
    q_ema,
    q_g,
    q_gc,
    q_L,
    q_l,
    q_Lg,
    q_lo,
    q_m,
    q_o,
    q_rg,
    q_w,
    r_hc,
    r_kv,
    r_lr,
    r_ng,
    r_o,
    r_q,
    r_rt,
    r_sb,
    u_ao,
    u_g,
)

# ---- model states --------------------------------------------------------------------------
# Parameters on the most loaded GPU: the first stage's L_s layers (each the mean of all layers,
# exact when the layers are alike), the embedding, the untied head when the pipeline has one
# stage; all split t ways, the routed experts e ways more. Plus, with t > h_kv, the replicated
# share of the K and V projections (weights and biases) of its layers beyond the even split.
# Under DualPipe (DeepSeek-V3 report §3.2.1, Table 2: "2×" parameters) a rank holds two stages,
# the first with the last: L_w = L_s + the last stage's layers, and the output head; the
# multi-token-prediction modules sit beside the head (their own parameters; the embedding and
# head shared, or copies of both per module, i_mtps).
LAYERS_PER_GPU = (N - N_emb - N_head - N_e) * L_w / L


def of_kind(expr: sympy.Expr) -> sympy.Expr:
    """`expr`, one attention layer's on one rank, for the layers of the kind with head shapes
    of its own (attention.kind_shapes): h', h'_kv, d'_qk, d'_v and h'_t."""
    return params.of_kind(expr).subs(h_t, h_t2)


def over_stage_attention(expr: sympy.Expr) -> sympy.Expr:
    """`expr` over the first stage's L_s_att attention layers, L'_s,att of them the other
    kind's."""
    return (L_s_att - L_s_att2) * expr + L_s_att2 * of_kind(expr)


def over_stage_kv_shared(expr: sympy.Expr) -> sympy.Expr:
    """`expr` over the first stage's L_s,kvs layers that read an earlier layer's keys and
    values, L'_s,kvs of them the other kind's."""
    return (L_s_kvs - L_s_kvs2) * expr + L_s_kvs2 * of_kind(expr)


KV_REPLICATED = (1 - i_mla) * L_w / L_s * (over_stage_attention(
    (h_t - h_kv / n_tp) * (d_qk + (1 - i_kev) * d_v) * (d + b_qkv))
    - over_stage_kv_shared((h_t - h_kv / n_tp) * (d_qk + (1 - i_kev) * d_v) * (d + b_qkv)))
MTP_PER_GPU = i_head * ((N_mtp - N_mtp_e + (1 - i_mtps) * M * (N_emb + N_head)) / n_tp
                        + N_mtp_e / (n_tp * n_ep))
DENSE_PER_GPU = (LAYERS_PER_GPU + N_emb + i_head * N_head) / n_tp + KV_REPLICATED
EXPERTS_PER_GPU = N_e * L_w / (L * n_tp * n_ep)
PARAMS_PER_GPU = DENSE_PER_GPU + EXPERTS_PER_GPU + MTP_PER_GPU


def _sharded(stage: sympy.Expr) -> sympy.Expr:
    """Parameters per GPU after ZeRO (stage = its 0/1 indicator) shards them over the ranks that
    hold the same ones: N_d·c for the dense part, N_d·c/e for the routed experts."""
    mtp_experts = i_head * N_mtp_e / (n_tp * n_ep)
    dense = DENSE_PER_GPU + MTP_PER_GPU - mtp_experts
    experts = EXPERTS_PER_GPU + mtp_experts
    return dense / (n_dp * n_cp)**stage + experts / (n_dp * n_cp / n_ep)**stage


# The optimizer in the backward (i_oib; calc.spec.memory.OPTIMIZER_IN_BACKWARD_SOURCE): each
# parameter's gradient is applied by its own optimizer in a hook as soon as autograd has
# accumulated it, and freed, so the gradients never all exist at once: one parameter's is
# resident, the largest (N_big elements, split t ways; under FSDP2's full shard, its shard).
# The states, and the gradient's fp32 copy of a recipe that keeps one, stay as they are.
GRADIENTS = q_g * _sharded(i_z2) + q_gc * _sharded(i_z1)
ONE_GRADIENT = (q_g + q_gc) * N_big / (n_tp * (n_dp * n_cp)**i_z3)

MODEL_STATES: dict[str, sympy.Expr] = {
    "params_per_gpu": PARAMS_PER_GPU,
    "weights": q_w * _sharded(i_z3),
    "gradients": (1 - i_oib) * GRADIENTS + i_oib * ONE_GRADIENT,
    "optimizer": (q_m + q_o) * _sharded(i_z1),
    # an EMA of the parameters on the GPU, sharded as the master weights it averages
    "ema": q_ema * _sharded(i_z1),
}

# ---- activations, bytes per token of one layer (Korthikanti et al. 2022 §4.1) ----------------
# Outside the tensor-parallel region: the input of every norm, the inputs of the Q/K/V and up
# projections (the norms' outputs), a dropout mask after attention and after the MLP (4 + 4 + 2
# of the paper's 34). MLA (DeepSeek-V2 §2.1.2) also keeps each latent's norm input and its
# up-projection input; its down-projections run replicated. A projection's input is kept for its
# weight gradient: with frozen weights only where an adapter needs it (i_keep_*, 1 in full
# training; calc.formulas.finetune), in q_l bytes (q_a; 1 when the projection runs in FP8,
# calc.spec.gemm_precision). Per layer (norms), per sublayer (a dropout mask after the mixer and
# after the FFN), per attention layer, per FFN, and per layer of another mixer (its in_proj
# input; in a layer with attention beside Mamba, Falcon-H1's, that input is Q/K/V's).
# Recomputing the norms in the backward (i_rnu, DeepSeek-V3 §3.2.3) drops their outputs, the
# projections' inputs after a norm; their inputs stay.
# transformers' modules (i_hf) differ where noted, from modeling_llama.py (5.24): its RMSNorm
# casts its input to fp32 (a copy when the activations are 16-bit; the input itself in fp32)
# and keeps it, the fp32 reciprocal RMS (4 bytes a token) and, when its weight trains, the
# normalised input cast back to q_a; its decoder layers have no residual dropout.
NORM_HF = 4 * d + 4 + (1 - i_frozen) * q_a * d
NORM_INPUTS = n_norm * ((1 - i_hf) * d * q_a + i_hf * NORM_HF)
DROPOUT_MASK = (1 - i_hf) * i_drop * MASK_BYTES * d
# A.X-K1's norm over an MoE layer's combined output (moe.output_norm) keeps its input as the
# layer's norms do: outside the tensor-parallel region, after the experts' reduction.
MOE_NORM_INPUT = i_mn * ((1 - i_hf) * d * q_a + i_hf * NORM_HF)
KEPT_NORM_OUTPUT = 1 - i_rnu
# Per-layer embeddings (calc.spec.layers.PerLayerEmbeddingsSpec; modeling_gemma4.py
# Gemma4TextDecoderLayer), in each layer: the gate's input (d) and the projection's input (p)
# for their weights' gradients (trained weights only), the activation's input and output (p
# each: the activation's backward and the product with the layer's vector), and the norm's
# input as the layer's own norms keep it. The vectors themselves are one tensor of L·p a token
# (ACTIVATIONS["embedding"]).
PLE_LAYER = i_le * ((1 - i_frozen) * (d + p_le) * q_a + 2 * p_le * q_a
                    + (1 - i_hf) * d * q_a + i_hf * NORM_HF)
# Once a forward, outside the layers (so kept under recomputation too): the L·p vectors each
# layer's product reads, the embedding as the projection's input (trained weights only) and
# the projection's norm over each p-wide slice (its input; transformers' RMSNorm its fp32
# copy, a reciprocal RMS per slice and, when its weight trains, its normalised output).
PLE_MODEL = i_le * (L * p_le * q_a + (1 - i_frozen) * d * q_a
                    + (1 - i_hf) * L * p_le * q_a
                    + i_hf * (4 * L * p_le + 4 * L + (1 - i_frozen) * q_a * L * p_le))

# Gemma 3n's AltUp and LAuReL (calc.spec.layers.AltUpSpec, LaurelSpec; modeling_gemma3n.py
# Gemma3nTextAltUp, Gemma3nTextLaurelBlock), calc's convention, not measured against
# transformers' saved tensors: in each layer AltUp keeps its n_au input streams (the
# prediction product's operand) and its n_au predictions (the correction's), the two router
# norms' inputs and normed outputs (4·d), the innovation and the scaled active stream (2·d),
# the two tanh outputs and the correction's coefficients (3·n_au) and the prediction's n_au²
# coefficients; LAuReL keeps linear_right's input (r_lr) and its norm's input (d). Its
# linear_left reads the layer's normed input, kept for the attention already. Once a forward,
# outside the layers: the n_au − 1 streams the output projections read (d each).
ALTUP_LAYER = i_au * (2 * n_au * d + 6 * d + 3 * n_au + n_au**2) * q_a
LAUREL_LAYER = i_lr * (r_lr + d) * q_a
ALTUP_MODEL = i_au * (n_au - 1) * d * q_a
# Inkling's parts, calc's convention (not measured against transformers' saved tensors): each
# residual short convolution keeps its input for its weight's gradient, the attention's and
# the FFN's outputs (attn_sconv, mlp_sconv: d each, replicated like the norms' inputs) and W_K's
# and W_V's outputs before k_sconv and v_sconv (h_t·(d_qk + d_v), split by heads); the relative
# bias keeps r_proj's output, the bank product's input (h·d_rel, split by heads). The bank's
# per-token logits and the gathered bias are transients (their gradients need only the index).
RESIDUAL_CONV_ON = sympy.Min(k_rc, 1)
RESIDUAL_CONV_LAYER = RESIDUAL_CONV_ON * 2 * d * q_a

# ZAYA1's parts (transformers 5.24.0 modeling_zaya.py), calc's convention, not measured against
# transformers' saved tensors. Residual scales (calc.spec.residual): a product with a learned
# vector keeps its other factor for the vector's gradient only (none on a frozen base): the
# biased residual r + b_r and the biased branch x + b_x, d each per sublayer where the model
# has them (the residual itself is the next norm's input, kept there); the embedding's e + b
# once. CCA on each attention layer, on one rank's heads: the two convs' inputs, C = (h +
# h_kv)·d_qk each, for their weights; the L2 norms' inputs (C) and one norm per head; the
# normed keys for the temperature's gradient (h_kv·d_qk). The MLP router on each MoE layer,
# replicated: the carried state (the scale's operand), the inputs of fc1, fc2 and out_proj for
# their weights (the down projection reads the FFN's normed input, kept for the experts), and
# the norm's and the two GELUs' inputs (r_rt each).
RESIDUAL_SCALES_SUBLAYER = i_rsc * (1 - i_frozen) * (b_rsc + i_rbr) * d * q_a
RESIDUAL_SCALES_MODEL = i_rsc * i_rse * (1 - i_frozen) * d * q_a
CCA_CHANNELS = (h + h_kv) * d_qk
CCA_PER_RANK = i_cca * ((1 - i_frozen) * (2 * CCA_CHANNELS + h_kv * d_qk) + CCA_CHANNELS
                        + h + h_kv) * q_a / n_tp
ROUTER_MLP_LAYER = i_rt * ((1 - i_frozen) * 4 * r_rt + 3 * r_rt) * q_a

# A.X-K2's gated norm (norm.gate_rank; modular_axk2.py AXK2GatedRMSNorm: y = N(x), then
# y · σ(fc2(SiLU(fc1(y))))), on every layer's mixer norm and the MoE layers' FFN norm: the
# product keeps y (fc1's input too) and σ's output, σ keeping it for its own backward; the SiLU
# its input (r_ng); fc2 its input (r_ng) where its weight trains. transformers takes the
# sigmoid in fp32 (sigmoid(mlp(y).float())): 4 bytes an element. Outside the tensor-parallel
# region, like the norms.
# (min(r_ng, 1): 1 where the norms are gated, 0 where they are not)
NORM_GATE = ((2 - i_frozen) * r_ng * q_a
             + sympy.Min(r_ng, 1) * d * (q_a + (1 - i_hf) * q_a + 4 * i_hf))
# Under transformers with PEFT's adapters on a frozen base (i_hf, i_frozen) a frozen projection
# keeps no input (a 4-bit one under QLoRA neither: bitsandbytes 0.50.2's MatMul4Bit keeps its
# weight alone, calc.spec.memory.STACKS["hf"]), and each adapter casts its input to its
# weights' fp32 (peft 0.21.2, tuners/lora/layer.py Linear.forward, _cast_input_dtype;
# get_peft_model's autocast_adapter_dtype puts adapters on a 16-bit base in fp32) and keeps
# its own 4-byte copy when the activations are 16-bit (i_up); in fp32 the adapters keep the
# input itself, once.
OWN_INPUT = 1 - i_hf * i_frozen * i_up  # a kept projection input is the input itself
ADAPTER_COPY = 4 * i_hf * i_frozen * i_up  # bytes per element of an adapter's fp32 copy
# A query latent (MLA's, or DeepSeek-V4's attention.q_lora_rank) and MLA's KV latent keep their
# norm's input and, for the up-projection, its output. A.X-K2's W_UQ and W_G read the query
# latent after and before its norm side by side (attention.mla.latent_gate): their kept input
# is 2·r_q, the latent's second copy r_q more.
ATTENTION_OUTSIDE = (KEPT_NORM_OUTPUT * i_keep_qkv * d * q_l * OWN_INPUT
                     + ADAPTER_COPY * d * (a_q + a_k + a_v + a_g + a_r + a_sink)
                     + (q_a + KEPT_NORM_OUTPUT * i_keep_qkv * q_l)
                     * (i_qlora * r_q + i_mla * r_kv)
                     + i_mla * i_lg * KEPT_NORM_OUTPUT * i_keep_qkv * q_l * r_q)
FFN_OUTSIDE = (KEPT_NORM_OUTPUT * i_keep_up * d * q_l * OWN_INPUT
               + ADAPTER_COPY * d * (a_gate + a_up))
MIXER_OUTSIDE = KEPT_NORM_OUTPUT * i_keep_mix * d * q_l
OUTSIDE = NORM_INPUTS + ATTENTION_OUTSIDE + FFN_OUTSIDE + 2 * DROPOUT_MASK  # an attention + FFN
# Inside: Q and K (for QKᵀ), V (for A·V), the input of W_O (8 of the 34; q_lo bytes), on one
# of the t ranks: h/t query heads and h_t key/value heads. MLA's up-projections recomputed in
# the backward (i_rnu) rebuild Q, K and V from the stored latents; the RoPE key, d_rope wide and
# shared by the heads, is kept.
# transformers' eager attention (i_hf with i_scores) keeps the keys and values after
# repeat_kv, h heads wide rather than h_kv (a copy; over a single KV head the heads expand as
# a view, which matmul folds into its batch without a copy only for one sequence:
# min(h_kv − 1 + b − 1, 1)); SDPA's flash kernel keeps its fp32 log-sum-exp,
# one per head, and its output is W_O's input (the same storage). A QK-norm is an RMSNorm over
# each head's query and key (Qwen3, modeling_qwen3.py) or over the whole projections (OLMo 2):
# NORM_HF's tensors, d_qk wide per head, a reciprocal RMS per head or per projection.
QK_NORMS_HF = ((i_qk_head + i_qk_proj) * (h + h_kv) * (4 + (1 - i_frozen) * q_a) * d_qk
               + 4 * (i_qk_head * (h + h_kv) + 2 * i_qk_proj))
REPEATED_KV = (h - h_kv) * sympy.Min(h_kv - 1 + b - 1, 1)
# W_O's input, kept for its weight or its adapter; transformers' flash output is that tensor,
# kept by the kernel whatever trains, unless an output gate comes between them.
KEPT_O = 1 - (1 - i_keep_o * OWN_INPUT) * (1 - i_hf * (1 - i_scores) * (1 - i_gate) * (1 - i_diff))
# An output gate, out · g(x W_G) (Qwen3-Next; LFM3 and Laguna one value per head): the product
# keeps both factors for the backward, the attention's output before the gate (h·d_v: flash's
# own output, or eager's A·V) and the gate's values (sigmoid keeps its output; softplus its
# input, as wide); W_O's input is then the product (KEPT_O). Measured on transformers 5.24's
# Lfm3Attention by calc.verify.memory (tests/test_verify_memory.py).
# transformers' AXK2Attention (attention.mla.latent_gate) takes that sigmoid in fp32
# (torch.sigmoid(gate_states.float())): 4 bytes a value there, measured by calc.verify.memory
# (tests/test_verify_memory.py).
OUTPUT_GATE = (i_gate * h * (d_v * q_a + params.GATE_WIDTH
                             * ((1 - i_hf * i_lg) * q_a + i_hf * i_lg * 4)))
RECOMPUTED_UP = i_mla * i_rnu
# Hyper-connections (calc.formulas.params, HC_OUTPUTS): the residual is n_hc streams of width d.
# Each of a layer's two maps keeps, by this convention, its input streams (n_hc·d: the pre-
# weighted sum's and mHC's mix's operand, and the norm's input), their normed copy (n_hc·d: the
# map product's input, for its weight's gradient), its outputs after the sigmoid or softmax
# (HC_OUTPUTS) and the sublayer's output (d: post's operand), in q_a bytes, outside the
# tensor-parallel region like the norms. transformers' HYV4HyperConnection (i_hf; measured
# with saved_tensors_hooks on the module and its spread, tests/test_hyper_connections.py)
# computes in fp32: it keeps the streams cast to fp32 (4·n_hc·d; the input itself in fp32)
# and the 16-bit streams beside them (i_up), the sublayer's output cast to fp32 (4·d), and
# 8·n_hc + 1 fp32 values (the logits, gates and the reciprocal RMS). A checkpointed layer keeps
# its input, n_hc·d wide.
# Qwen4-Exp's gated maps (1_hg) keep, by this convention (not measured: transformers' is
# the same module in the activation dtype), beyond those: the gate's down output and its SiLU
# (2·r_hc) and its up output after the sigmoid (n_hc·d, the gating product's operand).
HC_UNGATED = 1 - i_hg
HC_STORED = params.HC_MAPS * (
    (1 - i_hf * HC_UNGATED) * (2 * n_hc * d + i_hc * d + params.HC_OUTPUTS
                                + i_hg * (2 * r_hc + n_hc * d)) * q_a
    + i_hf * HC_UNGATED * ((4 + i_up * q_a) * n_hc * d + i_hc * 4 * (d + 8 * n_hc + 1)))
RESIDUAL_WIDTH = d + i_hc * (n_hc - 1) * d + i_au * (n_au - 1) * d  # AltUp's n_au streams too
# Differential attention keeps, beyond attention's own (measured on transformers 5.24's
# DiffLlamaAttention by calc.verify.memory, the one implementation calc has seen; its two
# attention calls share Q and K, one per half of the values): eager, the second call's copies
# of the queries and keys its matmul makes (the repeated keys when h > h_kv; over more than one
# sequence the heads cannot fold into the batch as a view, so Q and unrepeated K are copied),
# values h·d_v wider (each call's repeated half of the values is h heads) and its softmax
# (SCORES a second time, where the scores are kept); SDPA, the
# second call's values (h_kv heads) and fp32 log-sum-exp, and both calls' outputs (W_O's input
# is another tensor, after the combination: KEPT_O); both, the two outputs side by side
# (2·h·d_v, kept by the λ product for λ's gradient) and λ's two fp32 exponentials per layer
# and micro-batch, both only where λ trains (not on a frozen base), λ's q_a value, and the
# head norm's fp32 input and reciprocal RMS (one per pair of heads).
DIFFERENTIAL = i_diff * (
    i_scores * ((sympy.Min(b - 1, 1) + sympy.Max(sympy.Min(h - h_kv, 1), sympy.Min(b - 1, 1)))
                * h * d_qk + h * d_v) * q_a / n_tp
    + (1 - i_scores) * (h_t * d_v * q_a + (4 * h + 2 * h * d_v * q_a) / n_tp)
    + ((1 - i_frozen) * 2 * h * d_v * q_a + 4 * h * d_v + 2 * h) / n_tp
    + ((1 - i_frozen) * 8 + q_a) * n_cp / (T * b))
ATTENTION_PER_RANK = ((1 - RECOMPUTED_UP) * (h * d_qk / n_tp + h_t * (d_qk + d_v)) * q_a
                      + RECOMPUTED_UP * d_rope * q_a
                      + (KEPT_O * q_lo + ADAPTER_COPY * a_o) * h * d_v / n_tp
                      + OUTPUT_GATE / n_tp
                      # a grouped W_O (DeepSeek-V4): o_b_proj's g_o·r_o input, kept as W_O's
                      + i_og * KEPT_O * q_lo * g_o * r_o / n_tp
                      + i_hf * (i_scores * REPEATED_KV * (d_qk + d_v) * q_a
                                + (1 - i_scores) * 4 * h + QK_NORMS_HF) / n_tp
                      + DIFFERENTIAL
                      + (d_rl * h / n_tp + RESIDUAL_CONV_ON * h_t * (d_qk + d_v)) * q_a)
# What a layer that reads an earlier layer's keys and values (attention.kv_shared_layers) does
# not keep of its own: its K and V (the earlier layer's tensors, kept once), its key norm's
# tensors under transformers, and its adapters' fp32 copies on k_proj and v_proj.
KV_OWN_PER_RANK = ((1 - RECOMPUTED_UP) * h_t * (d_qk + d_v) * q_a
                   + i_hf * (i_qk_head + i_qk_proj) * h_kv * (4 + (1 - i_frozen) * q_a) * d_qk
                   / n_tp)
# The adapters' fp32 copies of the layer's input on k_proj and v_proj (ATTENTION_OUTSIDE): none
# on a kv-shared layer, none on v_proj where the keys are the values.
V_ADAPTER_COPY = i_kev * ADAPTER_COPY * d * a_v
KV_ADAPTER_COPIES = (over_stage_kv_shared(ADAPTER_COPY * d * (a_k + a_v) - V_ADAPTER_COPY)
                     + over_stage_attention(V_ADAPTER_COPY))
# A plain FFN keeps the input and output of its activation (16 of the 34 at d_ff = 4h); a gated
# one keeps gate and up outputs and their product (Megatron-LM's fused SwiGLU saves its 2·d_ff
# input, the down projection its d_ff input). An MoE layer: per token, its k routed experts and
# the shared ones.
# DeepSeek-V3 (§3.3.3, i_swr) caches the MoE SwiGLU's inputs at q_l and recomputes its
# output, which the down projections would have kept.
# transformers' gated MLP, down(act(gate(x)) · up(x)), keeps the activation's output apart from
# the product: one d_ff-wide tensor more.
MLP_DENSE = ((1 + i_glu + i_hf * i_glu) * q_a + i_keep_down * q_l * OWN_INPUT
             + ADAPTER_COPY * a_down) * d_ff
# transformers' MoE block (5.24.0; integrations/moe.py grouped_mm_experts_forward, its default
# experts implementation in training, and _default_apply_gate) keeps per token beside those:
# each of its k assignments' gathered input (the up grouped_mm's, where the experts train),
# its expert's output and its routing weight (the product of the two keeps both), the SiLU's
# output apart from the product as in the dense MLP (the shared experts' MLP too), and the
# router's fp32 softmax over the E experts and E_0 zero-computation ones (the TopKRouter of
# Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE, which casts the weights to the activations' dtype); a
# shared experts' gate (Qwen2-MoE: sigmoid(gate(x)) · shared(x)) keeps its sigmoid's output
# and the shared output.
# Not counted, the router's choices calc's spec does not hold: where the top-k is renormalised
# (Mixtral; Qwen's norm_topk_prob) the division's fp32 top-k values and their sum, 4·(k + 1)
# bytes a token, and Mixtral's routing weights left in fp32, 2·k bytes more at 16 bits
# (modeling_mixtral.py MixtralTopKRouter.forward; tests/test_verify_memory.py measures both).
MLP_MOE_HF = i_hf * ((i_glu * (k * d_e + E_s * d_s) + k * (d * (1 + i_keep_exp) + 1)
                      + i_shared_gate * (1 + d)) * q_a + 4 * (E + E_0))
# The shared experts' down projection keeps its input as the dense one does (OWN_INPUT, and
# an adapter's fp32 copy), and an adapter on their gate casts its own copy of the layer's input.
MLP_MOE = ((1 + i_glu) * (q_a + i_swr * (q_l - q_a)) * (k * d_e + E_s * d_s)
           + (1 - i_swr) * (i_keep_exp * k * d_e * q_l
                            + (i_keep_down * q_l * OWN_INPUT + ADAPTER_COPY * a_down) * E_s * d_s)
           + ADAPTER_COPY * i_shared_gate * a_shared_expert_gate * d
           + MLP_MOE_HF)
# The s×s attention scores per token: softmax output, dropout mask and dropout output (5·a·s);
# without dropout the softmax output serves A·V too. On the L_s_sel layers that attend to the
# keys an indexer selects a query scores only its min(s, K_I·B_I) selected keys (DSA: K_I keys,
# MiniMax-M3: K_I blocks of B_I). The indexer keeps nothing for the backward: its top-k passes
# no gradient (transformers runs DSA's under torch.no_grad, and MiniMax-M3's selection is
# integer indices); its h_I·s scores per token are a transient of the forward, not counted.
# transformers' eager attention takes the softmax in fp32 and keeps it beside its q_a copy (one
# tensor when the activations are fp32, i_up = 0); its dropout, when on, keeps the mask and
# the dropped copy instead of the q_a copy.


def _scores(keys: sympy.Expr) -> sympy.Expr:
    """The scores one attention layer keeps a token when its queries score `keys` keys."""
    return h * keys * (
        (1 - i_hf) * (q_a + i_drop * (MASK_BYTES + q_a))
        + i_hf * (4 + i_up * (1 - i_drop) * q_a + i_drop * (MASK_BYTES + q_a)))


SCORES = _scores(T)
# Qwen4-Exp's QSA (i_qsa): s less B_I keys per complete block beyond its top K_I, as
# calc.formulas.flops counts it under the full convention (every query sees all s keys)
_QSA_BLOCKS = sympy.floor(T / B_I)
SELECTED_SCORES = _scores((1 - i_qsa) * sympy.Min(T, K_I * B_I)
                          + i_qsa * (T - B_I * (_QSA_BLOCKS - sympy.Min(K_I, _QSA_BLOCKS))))
# one layer's: a selecting layer's where the model has an indexer
LAYER_SCORES = i_dsa * SELECTED_SCORES + (1 - i_dsa) * SCORES
# The other mixers (calc.formulas.mixers: what their kernels save). Tensor parallelism splits
# them by heads or channels, as attention by heads (Megatron-LM's MambaMixer and GatedDeltaNet;
# vLLM's MambaMixer and ShortConv for Mamba-1 and LFM2): in_proj column-parallel, the conv, the
# scan and the norm on each rank's own channels, out_proj row-parallel.
MIXERS_PER_RANK = {
    "mamba": (mixers.MAMBA_STORED_SPLIT / n_tp + mixers.MAMBA_STORED_REPLICATED) * q_a,
    "deltanet": mixers.DELTANET_STORED_SPLIT / n_tp * q_a,
    "lightning": mixers.LIGHTNING_STORED_SPLIT / n_tp * q_a,
    "rwkv": (mixers.RWKV_STORED_SPLIT / n_tp + mixers.RWKV_STORED_REPLICATED) * q_a,
    "griffin": mixers.GRIFFIN_STORED_SPLIT / n_tp * q_a,
    "mlstm": mixers.MLSTM_STORED_SPLIT / n_tp * q_a,
    "conv": mixers.SHORT_CONV_STORED_SPLIT / n_tp * q_a,
}
FFN_LAYERS_S = L_s_dense + L_sm  # the first stage's layers with an FFN
# The shared block at each of the first stage's L_s_sb depths (calc.spec.layers
# .SharedBlockSpec) keeps what an attention layer and a dense FFN keep, its attention reading
# [hidden, embedding]: the two norms' inputs (2d and d), W_Q/W_K/W_V's input 2d wide (kept for
# their weights or adapters), W_up's input, one rank's Q, K, V, W_O's input and scores, the
# FFN's d_ff-wide tensors; replicated beside them, the depth's projection input (d) and each
# adapter's r-wide middle (the FFN's, and W_Q's, W_K's, W_V's with attention adapters), kept
# for its second matrix's gradient. Its weights are shared, its activations are not.
SB_NORM = (1 - i_hf) * q_a + i_hf * NORM_HF / d  # one norm's kept bytes per element of width
SHARED_BLOCK_OUTSIDE = (SB_NORM * 3 * d
                        + KEPT_NORM_OUTPUT * (i_keep_qkv * 2 * d + i_keep_up * d) * q_l
                        + (d + r_sb * (1 + 3 * i_sba)) * q_a)
SHARED_BLOCK_PER_RANK = (ATTENTION_PER_RANK + i_scores * SCORES / n_tp + MLP_DENSE / n_tp)

# The cross-attention layers (calc.spec.layers.CrossAttentionSpec) of the first stage, L_s_xa.
# Without image tokens transformers skips them (MllamaTextModel.forward): they keep nothing,
# neither the norms' and the FFN's tensors every layer's terms above give them nor their
# input under checkpointing. With image tokens (an estimate, not measured: verify --memory
# runs the text-only forward) each keeps beside those terms, per token, its normed queries
# and their norm's input, W_O's input, the attention's and the FFN's outputs the tanh gates
# multiply (2d), and its scores over the T_img image tokens (eager attention); and per
# sequence, shared by its T tokens, the image tokens' keys (and their norm's input) and values
# on one rank's h_t heads.
SKIPPED_OUTSIDE = NORM_INPUTS + 2 * DROPOUT_MASK + HC_STORED + FFN_OUTSIDE + MIXER_OUTSIDE
CROSS_PER_RANK = ((2 * h * d_qk + h * d_v) / n_tp + 2 * d
                  + i_scores * h * T_img / n_tp
                  + T_img * h_t * (2 * d_qk + d_v) / T) * q_a
CROSS_LAYERS_STORED = L_s_xa * (i_img * CROSS_PER_RANK
                                - (1 - i_img) * (SKIPPED_OUTSIDE / n_tp**i_sp + MLP_DENSE / n_tp))

# The first stage: p micro-batches in flight through its L_s layers: L_s_att with attention,
# L_s_dense and L_sm with a dense or an MoE FFN, L_s_ssm, L_s_dn, L_s_la, L_s_rw, L_s_gr, L_s_ml,
# L_s_sc with another mixer.
# DualPipe keeps p + 1 micro-batches in flight on its first rank (DeepSeek-V3 report Table 2,
# "PP+1"), each through one stage (counted as the first stage's L_s layers).
IN_FLIGHT = n_pp + i_dual
STORED_PER_TOKEN = IN_FLIGHT * (
    (L_s * (NORM_INPUTS + DROPOUT_MASK + HC_STORED) + over_stage_attention(ATTENTION_OUTSIDE)
     - KV_ADAPTER_COPIES
     + FFN_LAYERS_S * (FFN_OUTSIDE + DROPOUT_MASK) + L_sm * MOE_NORM_INPUT
     + (L_s + L_sm) * NORM_GATE
     + (L_s - L_s_att) * MIXER_OUTSIDE
     + L_s * (PLE_LAYER + ALTUP_LAYER + LAUREL_LAYER + RESIDUAL_CONV_LAYER)
     + (L_s + FFN_LAYERS_S) * RESIDUAL_SCALES_SUBLAYER + L_sm * ROUTER_MLP_LAYER)
    / n_tp**i_sp
    + L_s_att * CCA_PER_RANK
    + over_stage_attention(ATTENTION_PER_RANK + (1 + i_diff) * i_scores * SCORES / n_tp)
    + L_s_sel * i_scores * (SELECTED_SCORES - SCORES) / n_tp
    - over_stage_kv_shared(KV_OWN_PER_RANK)
    + ((L_s_dense + L_s_dw) * MLP_DENSE + L_sm * MLP_MOE) / n_tp
    + L_s_ssm * MIXERS_PER_RANK["mamba"] + L_s_dn * MIXERS_PER_RANK["deltanet"]
    + L_s_la * MIXERS_PER_RANK["lightning"] + L_s_rw * MIXERS_PER_RANK["rwkv"]
    + L_s_gr * MIXERS_PER_RANK["griffin"] + L_s_ml * MIXERS_PER_RANK["mlstm"]
    + L_s_sc * MIXERS_PER_RANK["conv"]
    + L_s_sb * (SHARED_BLOCK_OUTSIDE / n_tp**i_sp + SHARED_BLOCK_PER_RANK)
    + CROSS_LAYERS_STORED)
# full recomputation: each layer's input. Activation offload (i_ao; torchtune's
# OffloadActivations, torchtune/training/_activation_offloading.py at 1814feb17) copies every
# saved tensor of at least 1,024 bytes that is not a parameter to pinned host memory as the
# forward saves it and brings it back when the backward unpacks it; under checkpointing the
# tensors it sees are the layers' inputs (torch.utils.checkpoint's _NoopSaveInputs saves them
# outside the checkpoint's own hooks). On the GPU stay u_ao of them (ACTIVATION_OFFLOAD_LAYERS):
# in the backward, the input of the layer being recomputed and that of the layer before it,
# freed only when the next autograd node starts; at the backward's start its forward stash (the
# last 5 saved tensors, max_fwd_stash_size) holds no more, the final norm's tensors coming after
# the last layer's input. The output head and the loss lie outside the offload (a NoOpManager
# around model.output; the loss is computed outside the context): their bytes stay.
OFFLOADED_LAYERS = i_ao * (L_s - sympy.Min(L_s, u_ao))
# (a skipped cross-attention layer, never called, checkpoints no input)
CHECKPOINT_PER_TOKEN = (IN_FLIGHT * (L_s - OFFLOADED_LAYERS - (1 - i_img) * L_s_xa)
                        * RESIDUAL_WIDTH * q_a
                        / n_tp**i_sp)

# Tokens of one micro-batch on one GPU (context parallelism splits the sequence), and the
# interleaved schedule's extra micro-batches in flight.
TOKENS = T * b / n_cp
INTERLEAVED = 1 + i_vp * (n_pp - 1) / (n_pp * n_vp)
# transformers' eager attention adds its float s × s causal mask (b × 1 × s × s, the activations'
# dtype, made once a forward) to the scores, which keeps nothing; every checkpoint holds it for
# its recompute.
CHECKPOINTED_MASK = i_hf * i_full * i_eager * T * TOKENS * q_a
# A drafter (modeling_gemma4_assistant.py): pre_projection keeps its input, the target's
# [embedding, hidden state] 2·D wide, for its weight's gradient (its own, or an adapter's on a
# frozen base). A centroid head: the bmm of the state with the gathered k·V/C head rows keeps
# those rows (a copy, d wide each, for the state's gradient), and the rows' int64 indices,
# which the gather and the scatter into the V-wide logits read in the backward (views of one
# tensor). Derived from the modeling code; transformers' drafter has no loss to train with, so
# calc.verify.memory's saved-tensor proof does not run it.
DRAFTER_IN = (1 - i_frozen * (1 - SYMBOLS["a_pre_projection"])) * 2 * D_tg * q_a
CENTROID_ROWS = V_cen * (d * q_a + TOKEN_ID_BYTES)  # an int64 index, as a token id
ACTIVATIONS: dict[str, sympy.Expr] = {
    "layers": INTERLEAVED * TOKENS * ((1 - i_full) * STORED_PER_TOKEN
                                      + i_full * CHECKPOINT_PER_TOKEN) + CHECKPOINTED_MASK,
    # Megatron-LM theoretical_memory_usage.py: int64 token ids and the embedding dropout mask
    # for p micro-batches in flight; the output layer's input and fp32 logits for the loss,
    # 4·s·b·h·(1 + V/h), on a one-stage pipeline (else the first stage is the larger).
    # transformers' rotary embedding makes its cos and sin tables once a forward (1 × s ×
    # d_qk, the activations' dtype), which every layer keeps (each checkpoint too, for its
    # recompute).
    "embedding": INTERLEAVED * IN_FLIGHT * TOKENS * (TOKEN_ID_BYTES + i_drop * MASK_BYTES * d
                                                     + PLE_MODEL + ALTUP_MODEL + DRAFTER_IN
                                                     + RESIDUAL_SCALES_MODEL)
                 / n_tp**i_sp
                 + i_hf * i_rope * 2 * T * d_qk * q_a,
    # The logits as the loss holds them, V_o a token (the head's rows): q_L bytes each
    # (calc.spec.finetune.LOSS_BYTES), on the GPU with the output head, one set per
    # multi-token-prediction module more.
    # transformers keeps the final norm's tensors (NORM_HF), the head's q_a input when the
    # head trains, and cross-entropy's fp32 total weight, one scalar a micro-batch.
    "output": i_head * (1 + M) * (
        TOKENS * ((1 - i_hf) * 4 * i_keep_head * d + q_L * V_o + CENTROID_ROWS
                  + i_hf * (i_norm_final * NORM_HF + i_keep_head * q_a * d))
        + 4 * i_hf) / n_tp
    # ModernBERT decoder's prediction head before the LM head, replicated: its dense layer's
    # input where that weight trains, its activation's input and its norm's input, d each
    + i_head * i_ph * TOKENS * (3 - i_frozen) * q_a * d,
}
# One layer for one micro-batch, as Korthikanti et al. tabulate it (a dense layer).
ACTIVATIONS_PER_LAYER = TOKENS * (
    (1 - i_full) * ((OUTSIDE + HC_STORED) / n_tp**i_sp + ATTENTION_PER_RANK
                    + ((1 + i_diff) * i_scores * LAYER_SCORES + MLP_DENSE) / n_tp)
    + i_full * RESIDUAL_WIDTH * q_a / n_tp**i_sp)
# One mixer of each other kind for one micro-batch (its in_proj input included; its norm, FFN
# and dropout masks not), without recomputation.
ACTIVATIONS_PER_MIXER = {f"activations_per_{kind}": TOKENS * (1 - i_full) * (
    MIXER_OUTSIDE / n_tp**i_sp + stored) for kind, stored in MIXERS_PER_RANK.items()}

# ---- the framework's transient buffers (calc.spec.memory.STACKS), beside states and
# activations at the backward's peak. One layer's parameters on the GPU (a mean layer, split t
# ways, routed experts e ways more).
LAYER_PER_GPU = (N - N_emb - N_head - N_e) / (L * n_tp) + N_e / (L * n_tp * n_ep)
BUFFERS: dict[str, sympy.Expr] = {
    # DeepSpeed ZeRO's gradient bucket (reduce_bucket_size elements of the 16-bit dtype)
    "gradient_bucket": i_z1 * B_bk * q_a,
    # ZeRO-3/FSDP: the 16-bit weights of the u_g layers gathered at once (FSDP2 gathers one
    # ahead; torchtitan with a pipeline keeps the stage gathered) and ZeRO-3's prefetch
    "gathered_weights": i_z3 * q_a * (u_g * LAYER_PER_GPU + P_pf),
    # FSDP: one layer's unsharded gradient before its reduce-scatter, in the reduce dtype
    "gathered_gradients": i_z3 * q_rg * LAYER_PER_GPU,
    # the loss: the fp32 gradient of the fp32 logits beside the logits themselves
    # (ACTIVATIONS["output"]) at the start of the backward, on a one-stage pipeline, where the
    # loss's own bytes leave it out (q_Lg)
    "logits_gradient": i_head * (1 + M) * q_Lg * TOKENS * V_o / n_tp,
    # a 4-bit head's dequantised copies (q_dq bytes a weight: LitGPT's QLoRA, fp16 then its
    # bf16 cast, calc.spec.memory.LITGPT_SOURCE), made by each chunk's forward and by the
    # head's backward, the first op of the backward, beside every saved activation; a layer's
    # matrices, dequantised later in the backward when activations have been freed, are
    # smaller than the head in the models priced so (V·d against d·d_ff)
    "dequantised_weight": i_frozen * q_dq * i_qh * i_head * N_head / n_tp,
}

STATES_TOTAL = (MODEL_STATES["weights"] + MODEL_STATES["gradients"] + MODEL_STATES["optimizer"]
                + MODEL_STATES["ema"])
ACTIVATIONS_TOTAL = sympy.Add(*ACTIVATIONS.values())
GPU_BYTES = M_gib * GIB

MEMORY: dict[str, sympy.Expr] = {
    "activations_per_layer": ACTIVATIONS_PER_LAYER,
    # the checkpointed inputs activation offload keeps in pinned host memory
    "activations_host": INTERLEAVED * TOKENS * i_full * IN_FLIGHT * OFFLOADED_LAYERS * d * q_a
                        / n_tp**i_sp,
    **ACTIVATIONS_PER_MIXER,
    "total": STATES_TOTAL + ACTIVATIONS_TOTAL,
    "gpu": GPU_BYTES,
    # Activations grow linearly in b: the micro-batches the memory left by the states holds.
    "micro_batch_room": (GPU_BYTES - STATES_TOTAL) / ACTIVATIONS_TOTAL.xreplace({b: 1}),
}
