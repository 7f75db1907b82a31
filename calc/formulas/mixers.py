"""The mixers other than attention, per layer: parameters, weights a token multiplies through,
and the FLOPs of their convolutions and scans (which are not matrix products).

Mamba (Gu & Dao 2023, §3.4 and Fig. 3; the reference code state-spaces/mamba and transformers'
MambaMixer build the same weights): in_proj d → 2D, conv1d (depthwise, kernel k_s, bias),
x_proj D → R + 2N, dt_proj R → D with bias, A (D × N) and the skip D (D), out_proj D → d.
Mamba-2 (Dao & Gu 2024, §7.1, Fig. 6): in_proj d → 2D + 2GN + H (x, z, B and C per group, Δ per
head), the conv over D + 2GN channels, Δ's bias, A and D one per head, a gated RMSNorm over D.
Both sets are one general expression, selected by i_m2. Jamba adds RMSNorms on Δ, B and C.

Gated DeltaNet (Yang, Kautz & Hatamizadeh 2025, §3; transformers' Qwen3NextGatedDeltaNet):
in_proj_qkvz d → 2·H_k·d_k + 2·H_v·d_v, in_proj_ba d → 2·H_v, a conv over q, k, v
(2·H_k·d_k + H_v·d_v channels, no bias), Δ's bias and A per value head, a gated RMSNorm of
width d_v shared by the heads, out_proj H_v·d_v → d.

Kimi Delta Attention (Kimi Team 2025, "Kimi Linear: An Expressive, Efficient Attention
Architecture", §3; transformers' KimiLinearDeltaAttention) is gated DeltaNet with the channel
gate (i_cg): q_proj, k_proj, v_proj and b_proj from d (no z or α in the input projections), the
decay through f_a_proj d → r_g and f_b_proj r_g → H_v·d_k with a bias per channel (dt_bias) and
A per head, the output gate through g_a_proj d → r_g and g_b_proj r_g → H_v·d_v (a sigmoid on
the gated RMSNorm), the conv, norm and out_proj as gated DeltaNet's. Ling 3's KDA (transformers'
BailingHybridDeltaAttention, i_gf) projects the decay (forget_gate.f_proj d → H_v·d_k) and the
output gate (g_proj d → H_v·d_v) from d at full rank, beside q, k, v and β.

Lightning attention (Qin et al. 2024, "Lightning Attention-2", arXiv 2401.04658; the MiniMax-01
report, arXiv 2501.08313, §2.2; transformers' MiniMaxLightningAttention): qkv_proj d →
3·H_la·d_la (SiLU on q, k and v), output_gate d → H_la·d_la (a sigmoid on it multiplies the
normed output), an RMSNorm over all H_la·d_la output channels (one weight each), out_proj
H_la·d_la → d; no bias, no conv, no learned decay (each head's decay is a fixed slope, a
buffer).

RWKV-4 (Peng et al. 2023, arXiv 2305.13048, §3; transformers' RwkvSelfAttention and
RwkvFeedForward), one time-mix and one channel-mix per layer: the time-mix's key, value and
receptance d → d_rw and output d_rw → d (no biases), time_decay w and time_first u (d_rw
each), the token shift's time_mix_key/value/receptance (3d); the channel-mix's key d → d_ff
and value d_ff → d are the layer's dense FFN (relu2, calc.formulas.params), and its token
shift's time_mix_key/receptance (2d) and its receptance d → d (whose sigmoid gates the FFN's
output) are counted here, as rwkv/shift and rwkv/gate. The token shift's mixing
(x·μ + x_{t−1}·(1 − μ)) is element-wise: 0 FLOPs, as the gates.

Griffin's recurrent block (De et al. 2024, arXiv 2402.19427, §2.4; RecurrentGemma, Botev et al.
2024, arXiv 2404.07839; transformers' RecurrentGemmaRecurrentBlock and RecurrentGemmaRglru):
linear_y and linear_x d → d_gr, a causal depthwise temporal conv1d of kernel k_gr over d_gr
channels, the RG-LRU's input and recurrence gates, each block-diagonal with d_gr/w_gr blocks of
w_gr × w_gr (d_gr·w_gr weights) and a bias per channel, its recurrent parameter Λ (d_gr), and
linear_out d_gr → d; every projection and the conv with biases.

xLSTM's mLSTM layer (Beck et al. 2024, arXiv 2405.04517, §2.3; xLSTM 7B, arXiv 2503.13427;
transformers' xLSTMLayer): q and k d → H_ml·d_mk, v and the output gate d → H_ml·d_mv, the input
and forget gates d → H_ml with a bias each, the per-head LayerNorm's γ over H_ml·d_mv, and
out_proj H_ml·d_mv → d; no other biases (use_bias=False).

Short convolution (LFM2, Liquid AI 2025; transformers' Lfm2ShortConv): in_proj d → 3d (B, C, x),
a depthwise conv over d channels of kernel k_sc, out_proj d → d, all with or without biases.

FLOPs. Projections are matrix products (2 per multiply-add, as everywhere in calc). A causal
depthwise convolution of kernel k costs 2·k per channel per token (a multiply-add per tap; its
bias 0), which is what FlopCounterMode counts for a convolution over T outputs. A scan counts
its recurrence run token by token on the state (Mamba: D × N elements; DeltaNet: d_k × d_v per
value head): each multiply or add on a state element is 1 FLOP, so decaying the state costs 1,
writing an outer product into it 2 and each read of it (a contraction) 2 per element; what
prepares the coefficients (Δ·A, exp, softplus, Δ·B, β, the gates, the D skip) counts 0, as
activations and norms do elsewhere. Mamba and Mamba-2: decay, write, read = 5 per element;
gated DeltaNet: decay, read kᵀS, write k(v − kᵀS)ᵀ, read Sᵀq = 7 per element (the delta rule).
The channel gate decays each state element by its key channel's own factor: still 1 per element,
so Kimi Delta Attention's scan is gated DeltaNet's 7 per element. Lightning attention's state
S_t = λ·S_{t−1} + k_t v_tᵀ is read as o_t = S_tᵀ q_t: decay, write, read = 5 per element of
d_la × d_la per head, Mamba's count; its blocked form (intra-block QKᵀ and scores × V, inter-block
Q·S and the state update Kᵀ·V per block of B tokens) computes the same outputs with 4·B·d_la +
4·d_la² FLOPs per head and token, which calc.verify.hf_implementation counts for transformers.
RWKV's WKV keeps two state elements per channel, a (numerator) and b (denominator), and reads
wkv_t = (a + e^{u+k_t}·v_t) / (b + e^{u+k_t}) before the update a ← e^{−w}·a + e^{k_t}·v_t,
b ← e^{−w}·b + e^{k_t}: decay 2 (a, b), write 3 (e^k·v, two adds), read 4 (e^{u+k}·v, two adds,
the division) = 9 per channel; the exponentials are coefficients (0), and the running maximum
that transformers' rwkv_linear_attention_cpu and its CUDA kernel keep to avoid overflow is
numerics, not the recurrence (0).
Griffin's RG-LRU keeps one state element per channel, h_t = a_t ⊙ h_{t−1} + √(1 − a_t²) ⊙
(i_t ⊙ x_t): decay 1 (a_t·h), write 2 (the normaliser √(1 − a_t²) times the gated input, as
Mamba's B̄·x, and the add), no read (the state is the output): 3 per channel; a_t = σ(Λ)^{c·r_t},
√(1 − a_t²) and the input gate's product i_t ⊙ x_t prepare the coefficients and the input (0).
The mLSTM's memory per head is a matrix C (d_mk × d_mv) and a normaliser n (d_mk), run token by
token as its recurrent form: C_t = f_t·C_{t−1} + i_t·k_t v_tᵀ, n_t = f_t·n_{t−1} + i_t·k_t, read
as h_t = C_tᵀq_t / max(|n_tᵀq_t|, e^{−m_t}): decay 1, write 2, read 2 on each of the
d_mk·(d_mv + 1) elements, 5 per element as lightning attention's; the exponential gates, their
stabiliser m_t, the maximum and the division prepare coefficients or normalise (0). transformers
runs the recurrent step as matmuls (k vᵀ, qᵀC, qᵀn: 4·d_mk·d_mv + 2·d_mk per head and token, the
decay element-wise) and whole chunks of chunk_size c in the chunkwise-parallel form, which adds
the intra-chunk QKᵀ and scores × V (2·c·(d_mk + d_mv) per head and token); calc.verify.
hf_implementation counts both for transformers.
"""

from __future__ import annotations

import sympy

from calc.symbols import (
    G_s,
    H_k,
    H_la,
    H_ml,
    H_s,
    H_v,
    N_s,
    R_dt,
    b_cs,
    b_sc,
    b_ssm,
    d,
    d_gr,
    d_in,
    d_la,
    d_lk,
    d_lv,
    d_mk,
    d_mv,
    d_rw,
    i_cg,
    i_dtn,
    i_gf,
    i_gn,
    i_m2,
    k_dn,
    k_gr,
    k_s,
    k_sc,
    r_g,
    w_gr,
)

M1 = 1 - i_m2  # Mamba-1 only
IN_WIDTH = 2 * d_in + i_m2 * (2 * G_s * N_s + H_s)  # Mamba-2 also projects B, C and Δ
CONV_CHANNELS = d_in + i_m2 * 2 * G_s * N_s  # Mamba-2 convolves B and C too

# ---- weights a token multiplies through, per layer (calc.formulas.flops doubles them) --------
MAMBA_WEIGHTS: dict[str, sympy.Expr] = {
    "mamba/in": d * IN_WIDTH,
    "mamba/x": M1 * d_in * (R_dt + 2 * N_s),  # Δ's low rank, B and C from the conv's output
    "mamba/dt": M1 * R_dt * d_in,  # Δ back to D channels
    "mamba/out": d_in * d,
}
DN_KEYS = H_k * d_lk  # width of q and of k
DN_VALUES = H_v * d_lv  # width of v and of the gate z
HEAD_GATE = 1 - i_cg  # Gated DeltaNet's gates (z and α from in_proj), not the channel gate
DELTANET_WEIGHTS: dict[str, sympy.Expr] = {
    # q, k, v and β; z and α with the head gate; the decay and output gate of the channel gate
    # at full rank
    "deltanet/in": d * (2 * DN_KEYS + DN_VALUES + H_v + HEAD_GATE * (DN_VALUES + H_v)
                        + i_gf * (H_v * d_lk + DN_VALUES)),
    # the channel gate's two low-rank pairs: decay d → r_g → H_v·d_k, output gate → H_v·d_v
    "deltanet/lowrank": i_cg * (2 * d * r_g + r_g * (H_v * d_lk + DN_VALUES)),
    "deltanet/out": DN_VALUES * d,
}
LA_WIDTH = H_la * d_la  # width of q, of k, of v, of the output and of its gate
LIGHTNING_WEIGHTS: dict[str, sympy.Expr] = {
    "lightning/qkv": d * 3 * LA_WIDTH,
    "lightning/gate": d * LA_WIDTH,  # output_gate
    "lightning/out": LA_WIDTH * d,
}
RWKV_WEIGHTS: dict[str, sympy.Expr] = {
    "rwkv/key": d * d_rw,
    "rwkv/value": d * d_rw,
    "rwkv/receptance": d * d_rw,
    "rwkv/output": d_rw * d,
    "rwkv/gate": d * d,  # the channel-mix's receptance, gating the FFN's output
}
GRIFFIN_WEIGHTS: dict[str, sympy.Expr] = {
    "griffin/y": d * d_gr,  # linear_y, the GeLU branch
    "griffin/x": d * d_gr,  # linear_x, into the conv and the RG-LRU
    # the input and recurrence gates: d_gr/w_gr blocks of w_gr × w_gr each (one baddbmm each)
    "griffin/gates": 2 * d_gr * w_gr,
    "griffin/out": d_gr * d,  # linear_out
}
MLSTM_WEIGHTS: dict[str, sympy.Expr] = {
    "mlstm/q": d * H_ml * d_mk,
    "mlstm/k": d * H_ml * d_mk,
    "mlstm/v": d * H_ml * d_mv,
    "mlstm/ogate": d * H_ml * d_mv,  # ogate_preact, the sigmoid output gate
    "mlstm/gates": 2 * d * H_ml,  # igate_preact and fgate_preact: one scalar per head each
    "mlstm/out": H_ml * d_mv * d,  # out_proj
}
SHORT_CONV_WEIGHTS: dict[str, sympy.Expr] = {
    "conv/in": d * 3 * d,  # B, C and x
    "conv/out": d * d,
}

# ---- parameters, per layer --------------------------------------------------------------------
MAMBA: dict[str, sympy.Expr] = {
    "mamba/in": MAMBA_WEIGHTS["mamba/in"] + b_ssm * IN_WIDTH,
    "mamba/conv": CONV_CHANNELS * (k_s + b_cs),
    "mamba/x": MAMBA_WEIGHTS["mamba/x"],
    "mamba/dt": MAMBA_WEIGHTS["mamba/dt"] + M1 * d_in + i_m2 * H_s,  # Δ's bias
    "mamba/ssm": M1 * (d_in * N_s + d_in) + i_m2 * 2 * H_s,  # A and the skip D
    "mamba/norm": i_m2 * i_gn * d_in + M1 * i_dtn * (R_dt + 2 * N_s),
    "mamba/out": MAMBA_WEIGHTS["mamba/out"] + b_ssm * d,
}
DELTANET: dict[str, sympy.Expr] = {
    "deltanet/in": DELTANET_WEIGHTS["deltanet/in"],
    "deltanet/lowrank": DELTANET_WEIGHTS["deltanet/lowrank"],
    "deltanet/conv": (2 * DN_KEYS + DN_VALUES) * k_dn,
    # A (A_log) per value head; Δ's bias per value head, or per key channel of each state with
    # the channel gate
    "deltanet/gates": H_v + HEAD_GATE * H_v + i_cg * H_v * d_lk,
    "deltanet/norm": d_lv,
    "deltanet/out": DELTANET_WEIGHTS["deltanet/out"],
}
LIGHTNING: dict[str, sympy.Expr] = {
    **LIGHTNING_WEIGHTS,
    "lightning/norm": LA_WIDTH,  # the RMSNorm over the output's H_la·d_la channels
}
RWKV: dict[str, sympy.Expr] = {
    **RWKV_WEIGHTS,
    "rwkv/decay": 2 * d_rw,  # time_decay w and time_first u, per channel
    "rwkv/shift": 3 * d + 2 * d,  # the time-mix's and the channel-mix's time_mix_* vectors
}
GRIFFIN: dict[str, sympy.Expr] = {
    "griffin/y": GRIFFIN_WEIGHTS["griffin/y"] + d_gr,  # with its bias, as every part here
    "griffin/x": GRIFFIN_WEIGHTS["griffin/x"] + d_gr,
    "griffin/conv": d_gr * (k_gr + 1),  # depthwise: k_gr taps and a bias per channel
    "griffin/gates": GRIFFIN_WEIGHTS["griffin/gates"] + 2 * d_gr,
    "griffin/decay": d_gr,  # the recurrent parameter Λ, per channel
    "griffin/out": GRIFFIN_WEIGHTS["griffin/out"] + d,
}
MLSTM: dict[str, sympy.Expr] = {
    **{key: MLSTM_WEIGHTS[key] for key in ("mlstm/q", "mlstm/k", "mlstm/v", "mlstm/ogate")},
    "mlstm/gates": MLSTM_WEIGHTS["mlstm/gates"] + 2 * H_ml,  # the gates' biases, always there
    "mlstm/norm": H_ml * d_mv,  # the per-head LayerNorm's γ (multihead_norm)
    "mlstm/out": MLSTM_WEIGHTS["mlstm/out"],
}
SHORT_CONV: dict[str, sympy.Expr] = {
    "conv/in": SHORT_CONV_WEIGHTS["conv/in"] + b_sc * 3 * d,
    "conv/conv": d * (k_sc + b_sc),
    "conv/out": SHORT_CONV_WEIGHTS["conv/out"] + b_sc * d,
}

# ---- FLOPs per token that are not matrix products --------------------------------------------
TAP = 2  # a multiply-add per tap of a convolution
DECAY, WRITE, READ = 1, 2, 2  # FLOPs per state element (module docstring)
MAMBA_CONV = TAP * k_s * CONV_CHANNELS
MAMBA_SCAN = (DECAY + WRITE + READ) * d_in * N_s
DELTANET_CONV = TAP * k_dn * (2 * DN_KEYS + DN_VALUES)
DELTANET_SCAN = (DECAY + READ + WRITE + READ) * H_v * d_lk * d_lv
LIGHTNING_SCAN = (DECAY + WRITE + READ) * H_la * d_la * d_la
# RWKV's WKV: decay 2, write 3, read 4 per channel (module docstring)
RWKV_DECAY, RWKV_WRITE, RWKV_READ = 2, 3, 4
RWKV_SCAN = (RWKV_DECAY + RWKV_WRITE + RWKV_READ) * d_rw
GRIFFIN_CONV = TAP * k_gr * d_gr
# the RG-LRU: decay 1 and write 2 per channel, nothing read (module docstring)
GRIFFIN_SCAN = (DECAY + WRITE) * d_gr
# the mLSTM: decay, write, read on C (d_mk × d_mv) and n (d_mk) per head (module docstring)
MLSTM_SCAN = (DECAY + WRITE + READ) * H_ml * d_mk * (d_mv + 1)
SHORT_CONV_CONV = TAP * k_sc * d

# ---- activations a layer keeps for its backward pass, elements per token ---------------------
# What the fused training kernels save (each tensor once, at the activation dtype); the scan's
# states are never stored but recomputed in the backward pass, from the saved inputs (Gu & Dao
# 2023 §3.3.2, "recomputation"; Dao & Gu 2024 §6 for SSD's chunk states). Split: inside the
# tensor-parallel region (one rank holds 1/t); replicated: every rank holds all of it. The
# in_proj input (the norm's output, d) is counted by calc.formulas.memory with the layer's other
# projection inputs.
# Mamba-1 (state-spaces/mamba, mamba_ssm/ops/selective_scan_interface.py, MambaInnerFn with its
# default checkpoint_lvl=1, which recomputes the conv output and Δ): xz (2D), the scan output
# (D); x_dbl (R + 2N) and contiguous copies of B and C (2N), which follow x_proj's all-reduce
# and so are replicated (vLLM's MambaMixer: x_proj is row-parallel). The states at the scan's
# 2048-token chunk boundaries (2·D·N per chunk) are not counted.
# Mamba-2 (mamba_ssm/ops/triton/ssd_combined.py, MambaSplitConv1dScanCombinedFn, which
# Megatron-LM's MambaMixer runs): zxbcdt (2D + 2GN + H) and the scan output (D); the conv, the
# states and the gated norm are recomputed (the norm's fp32 1/rms per group is not counted).
MAMBA_STORED_SPLIT = 3 * d_in + i_m2 * (2 * G_s * N_s + H_s)
MAMBA_STORED_REPLICATED = M1 * (R_dt + 4 * N_s)
# Gated DeltaNet (Megatron-LM's GatedDeltaNet and transformers' Qwen3NextGatedDeltaNet around
# flash-linear-attention's chunk_gated_delta_rule): the conv's input (q, k, v: the conv output
# is recomputed by causal_conv1d's backward), the kernel's q, k and v (at key-head width; code
# that repeats q and k to H_v heads keeps H_v/H_k times more), β and the decay g per value head,
# the WY matrix of each 64-token chunk (64 per value head and token; fla's chunk size), the gated
# norm's input and gate, and out_proj's input.
FLA_CHUNK = 64
# The channel gate (fla's chunk_kda) keeps the decay per key channel (H_v·d_k, not H_v) and
# the inputs of the two low-rank up-projections (2·r_g; none at full rank, whose input is the
# layer's normed input, counted with in_proj's).
DELTANET_STORED_SPLIT = (2 * (2 * DN_KEYS + DN_VALUES) + (2 + FLA_CHUNK) * H_v
                         + 3 * DN_VALUES + i_cg * (H_v * d_lk - H_v + 2 * r_g))
# Lightning attention (a chunked linear-attention kernel with a fixed decay per head, as
# flash-linear-attention's chunk_simple_gla with g_gamma, which recomputes the states; the
# rest as autograd keeps it): the qkv projection before its SiLU (3W) and q, k, v after it (the
# kernel's inputs, 3W), the kernel's output (the norm's input, W), the output gate before its
# sigmoid (W), the norm's output (W, for the gate's gradient) and out_proj's input (W): 10W.
LIGHTNING_STORED_SPLIT = 10 * LA_WIDTH
# RWKV (transformers' RwkvLinearAttention, whose CUDA kernel saves k, v and its output and
# recomputes the states in its backward; the rest as autograd keeps it): split by channels
# (key, value and receptance column-parallel, output row-parallel, the WKV per channel): k, v,
# the kernel's output, sigmoid(r) and output's input (5·d_rw); replicated: the time-mix's
# shifted input and its three mixed inputs (4d), and the channel-mix's extras beside the FFN
# (which counts its own input): its shifted input, the mixed key and receptance inputs,
# sigmoid of its receptance and the FFN's output it multiplies (5d).
RWKV_STORED_SPLIT = 5 * d_rw
RWKV_STORED_REPLICATED = 4 * d + 5 * d
# Griffin's recurrent block (a linear-scan kernel that saves its inputs a_t and the normalised
# input and recomputes the states, as the RG-LRU's reference scan in google-deepmind/
# recurrentgemma; the rest as autograd keeps it), split by channels (linear_y and linear_x
# column-parallel, the gates by blocks, linear_out row-parallel): linear_y's output (GeLU's
# input) and GeLU(y), linear_x's output (the conv's input), the conv's output (the gates' input
# and the input gate's operand), the two gates after their sigmoids, a_t, the scan's input, the
# scan's output (for the product with GeLU(y)) and linear_out's input: 10·d_gr.
GRIFFIN_STORED_SPLIT = 10 * d_gr
# xLSTM's mLSTM (a chunkwise kernel that saves its inputs and per-token normaliser and maximum and
# recomputes the memory, as mlstm_kernels' chunkwise kernels the 7B model trains with; the rest
# as autograd keeps it), split by heads: q, k (2·d_mk per head), v, the kernel's output (the head
# norm's input), the head norm's output and the sigmoid output gate (the product's operands),
# out_proj's input (5·d_mv per head), the input and forget gates and the kernel's n and m (4 per
# head).
MLSTM_STORED_SPLIT = H_ml * (2 * d_mk + 5 * d_mv + 4)
# Short convolution (transformers' Lfm2ShortConv, plain autograd): B, C, x (3d), B ⊙ x (the
# conv's input), the conv's output (for C ⊙ ·) and out_proj's input: 6d.
SHORT_CONV_STORED_SPLIT = 6 * d
