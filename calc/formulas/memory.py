"""Training memory of the most loaded GPU: model states and activations, in bytes.

Model states (Rajbhandari et al. 2020, ZeRO, §3.1 and Fig. 1): Ψ parameters on a GPU hold working
weights (q_w bytes each), gradients (q_g) and the optimizer side: fp32 master weights (q_m) and
optimizer states (q_o), ZeRO's K = q_m + q_o (12 for mixed-precision Adam: 2Ψ + 2Ψ + 12Ψ = 16Ψ).
Some recipes add an fp32 copy of the gradients (q_gc), which Megatron-LM's distributed optimizer
shards with the optimizer side (Megatron-LM README, "Distributed Optimizer": "fp16 param, fp16
grads" 20 bytes → 4 + 16/d; "bf16 param, fp32 grads" 18 → 6 + 12/d). ZeRO stage 1 partitions
the optimizer side over the N_d data-parallel ranks, stage 2 also the gradients, stage 3 also the
weights; a piece is divided by N_d^{1[stage ≥ s]}.

Tensor (t) and pipeline (p) parallelism: the most loaded GPU holds 1/p of the layers plus the
embedding, and the untied LM head too when p = 1, all split t ways (Megatron-LM
megatron/training/theoretical_memory_usage.py, "most loaded model shard"; norms are split too).

Activations follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
Transformer Models", §4, Table 2): per layer s·b·h·(34 + 5·a·s/h) bytes with 2-byte activations,
1-byte dropout masks, a 4h GeLU MLP and MHA. Here every tensor of that accounting has its own
width, so other architectures (GQA, gated FFNs, MoE, MLA, 4-byte activations, no dropout) change
the right term; with the paper's architecture the expression reduces to the paper's exactly
(tests/test_memory.py). Replicated tensors (norm inputs, projection inputs, dropout masks) are
split t ways only under sequence parallelism; tensors inside the tensor-parallel region always
are. Flash attention and selective recomputation both drop the stored s×s scores (5·a·s/h);
full recomputation keeps only each layer's input, s·b·h·q_a. With the 1F1B schedule the first
pipeline stage holds L/p layers for p micro-batches in flight, i.e. L layers' worth (§4.2.3).
"""

from __future__ import annotations

import sympy

from calc.symbols import (
    E_s,
    L,
    L_moe,
    M_gib,
    N,
    N_emb,
    N_head,
    T,
    V,
    b,
    d,
    d_e,
    d_ff,
    d_qk,
    d_s,
    d_v,
    h,
    h_kv,
    i_drop,
    i_full,
    i_glu,
    i_keep_down,
    i_keep_head,
    i_keep_o,
    i_keep_qkv,
    i_keep_up,
    i_mla,
    i_pp1,
    i_qlora,
    i_scores,
    i_sp,
    i_z1,
    i_z2,
    i_z3,
    k,
    n_dp,
    n_norm,
    n_pp,
    n_tp,
    q_a,
    q_g,
    q_gc,
    q_l,
    q_m,
    q_o,
    q_w,
    r_kv,
    r_q,
)

MASK_BYTES = 1  # a dropout mask element (Korthikanti et al. 2022 §4.1: "a byte")
GIB = 2**30  # vendors' "80GB" of HBM is 80 GiB (calc.spec.GPU.memory_gib)

# ---- model states --------------------------------------------------------------------------
# Parameters on the most loaded GPU: its 1/p of the layers, the embedding, the untied head when
# the pipeline has one stage; all split t ways.
PARAMS_PER_GPU = ((N - N_emb - N_head) / n_pp + N_emb + i_pp1 * N_head) / n_tp

MODEL_STATES: dict[str, sympy.Expr] = {
    "params_per_gpu": PARAMS_PER_GPU,
    "weights": q_w * PARAMS_PER_GPU / n_dp**i_z3,
    "gradients": q_g * PARAMS_PER_GPU / n_dp**i_z2 + q_gc * PARAMS_PER_GPU / n_dp**i_z1,
    "optimizer": (q_m + q_o) * PARAMS_PER_GPU / n_dp**i_z1,
}

# ---- activations, bytes per token of one layer (Korthikanti et al. 2022 §4.1) ----------------
# Outside the tensor-parallel region: the input of every norm, the inputs of the Q/K/V and up
# projections (the norms' outputs), a dropout mask after attention and after the MLP (4 + 4 + 2
# of the paper's 34). MLA (DeepSeek-V2 §2.1.2) also keeps each latent's norm input and its
# up-projection input; its down-projections run replicated. A projection's input is kept for its
# weight gradient: with frozen weights only where an adapter needs it (i_keep_*, 1 in full
# training; calc.formulas.finetune), in q_l bytes (q_a; 1 when the projection runs in FP8,
# calc.spec.gemm_precision).
OUTSIDE = (n_norm * d * q_a + (i_keep_qkv + i_keep_up) * d * q_l + 2 * i_drop * MASK_BYTES * d
           + i_mla * (q_a + i_keep_qkv * q_l) * (i_qlora * r_q + r_kv))
# Inside: Q and K (for QKᵀ), V (for A·V), the input of W_O (8 of the 34).
ATTENTION_INSIDE = (h * d_qk + h_kv * d_qk + h_kv * d_v) * q_a + i_keep_o * h * d_v * q_l
# A plain FFN keeps the input and output of its activation (16 of the 34 at d_ff = 4h); a gated
# one keeps gate and up outputs and their product (Megatron-LM's fused SwiGLU saves its 2·d_ff
# input, the down projection its d_ff input). An MoE layer: per token, its k routed experts and
# the shared ones.
MLP_DENSE = ((1 + i_glu) * q_a + i_keep_down * q_l) * d_ff
MLP_MOE = ((1 + i_glu) * q_a + i_keep_down * q_l) * (k * d_e + E_s * d_s)
# The s×s attention scores per token: softmax output, dropout mask and dropout output (5·a·s);
# without dropout the softmax output serves A·V too.
SCORES = h * T * (q_a + i_drop * (MASK_BYTES + q_a))

STORED_PER_TOKEN = (L * (OUTSIDE / n_tp**i_sp + (ATTENTION_INSIDE + i_scores * SCORES) / n_tp)
                    + ((L - L_moe) * MLP_DENSE + L_moe * MLP_MOE) / n_tp)
CHECKPOINT_PER_TOKEN = L * d * q_a / n_tp**i_sp  # full recomputation: each layer's input

ACTIVATIONS: dict[str, sympy.Expr] = {
    "layers": T * b * ((1 - i_full) * STORED_PER_TOKEN + i_full * CHECKPOINT_PER_TOKEN),
    # Megatron-LM theoretical_memory_usage.py: int64 token ids and the embedding dropout mask
    # for p micro-batches in flight; the output layer's input and fp32 logits for the loss,
    # 4·s·b·h·(1 + V/h), on a one-stage pipeline (else the first stage is the larger).
    "embedding": n_pp * T * b * (8 + i_drop * MASK_BYTES * d) / n_tp**i_sp,
    "output": i_pp1 * 4 * T * b * (i_keep_head * d + V) / n_tp,
}
# One layer for one micro-batch, as Korthikanti et al. tabulate it (a dense layer).
ACTIVATIONS_PER_LAYER = T * b * (
    (1 - i_full) * (OUTSIDE / n_tp**i_sp + (ATTENTION_INSIDE + i_scores * SCORES + MLP_DENSE)
                    / n_tp)
    + i_full * d * q_a / n_tp**i_sp)

STATES_TOTAL = MODEL_STATES["weights"] + MODEL_STATES["gradients"] + MODEL_STATES["optimizer"]
ACTIVATIONS_TOTAL = sympy.Add(*ACTIVATIONS.values())
GPU_BYTES = M_gib * GIB

MEMORY: dict[str, sympy.Expr] = {
    "activations_per_layer": ACTIVATIONS_PER_LAYER,
    "total": STATES_TOTAL + ACTIVATIONS_TOTAL,
    "gpu": GPU_BYTES,
    # Activations grow linearly in b: the micro-batches the memory left by the states holds.
    "micro_batch_room": (GPU_BYTES - STATES_TOTAL) / ACTIVATIONS_TOTAL.subs(b, 1),
}
