"""Fine-tuning: adapter parameters, the memory of a frozen (maybe 4-bit) base, and step FLOPs.

LoRA (Hu et al. 2021 §4.1) adds beside a frozen W ∈ R^{n_in×n_out} the product of A ∈ R^{n_in×r}
and B ∈ R^{r×n_out}: r·(n_in + n_out) parameters, and 2·r·(n_in + n_out) FLOPs per token (x·A,
then (xA)·B). A target on the FFN adapts that projection in every dense layer and in every routed
and shared expert of an MoE layer (a token runs through the adapters of its k experts).

Memory (calc.formulas.memory, per GPU): the frozen base in its storage dtype: QLoRA's 4-bit
projections at q_f bytes per weight with their block constants (Dettmers et al. 2023 §3), the rest
(embeddings, LM head, norms, biases) at q_w; the adapters take weights, gradients and optimizer
states like any trained parameter (ZeRO's 2Ψ + 2Ψ + KΨ, Rajbhandari et al. 2020 §3.1, on the
adapters' Ψ). With i_frozen = 0 the states below are calc.formulas.memory.MODEL_STATES exactly
(tests/test_finetune.py). Activations: a frozen projection's backward needs its weight, not its
input (dX = dY·Wᵀ; torch saves the input of a linear only when its weight takes a gradient), so
the i_keep_* indicators drop those inputs; each adapter also keeps x·A, r wide, for dB.

FLOPs: a frozen weight skips its weight gradient, so its backward is one forward (the input
gradient) instead of two; attention's own products keep both (their operands are activations),
and the adapters train in full: step = 2 × weights' forward + 3 × (attention + adapters), less
the position-key side of Transformer-XL's relative scores (W_R is frozen).
"""

from __future__ import annotations

import sympy

from calc.counting import BACKWARD_PER_FORWARD, FROZEN_BACKWARD_PER_FORWARD, TRAIN_PER_FORWARD
from calc.formulas import flops, memory, params
from calc.symbols import (
    E,
    E_s,
    L,
    L_moe,
    L_s,
    N,
    T,
    a_down,
    a_gate,
    a_k,
    a_o,
    a_q,
    a_up,
    a_v,
    b,
    d,
    d_e,
    d_ff,
    d_qk,
    d_s,
    d_v,
    h,
    h_kv,
    i_frozen,
    i_full,
    i_glu,
    i_rel,
    i_shared_gate,
    i_z1,
    i_z2,
    i_z3,
    k,
    n_cp,
    n_dp,
    n_ep,
    n_tp,
    q_a,
    q_f,
    q_g,
    q_gc,
    q_m,
    q_o,
    q_w,
    r_a,
)

# ---- adapter parameters -----------------------------------------------------------------------
# Attention (MHA/GQA/MQA widths of calc.formulas.params; MLA is refused in calc.spec.finetune).
ATTENTION_ADAPTERS: dict[str, sympy.Expr] = {
    "lora/q": a_q * r_a * (d + h * d_qk),
    "lora/k": a_k * r_a * (d + h_kv * d_qk),
    "lora/v": a_v * r_a * (d + h_kv * d_v),
    "lora/o": a_o * r_a * (h * d_v + d),
}
# One FFN of hidden width `width`: up and gate are d × width, down is width × d.
FFN_TARGETS = {"lora/up": a_up, "lora/gate": a_gate * i_glu, "lora/down": a_down}
FFN_TARGETS_ON = sympy.Add(*FFN_TARGETS.values())


def _ffn_adapters(experts: sympy.Expr) -> dict[str, sympy.Expr]:
    """FFN adapters of the whole model: dense layers, and `experts` routed experts (E for the
    parameters, k for a token's FLOPs) plus the shared ones in each MoE layer."""
    return {key: on * r_a * ((L - L_moe) * (d + d_ff)
                             + L_moe * (experts * (d + d_e) + E_s * (d + d_s)))
            for key, on in FFN_TARGETS.items()}


ADAPTERS: dict[str, sympy.Expr] = {
    **{key: L * expr for key, expr in ATTENTION_ADAPTERS.items()}, **_ffn_adapters(E)}
ADAPTERS_TOTAL = sympy.Add(*ADAPTERS.values())
ADAPTERS_ACTIVE = sympy.Add(*(L * expr for expr in ATTENTION_ADAPTERS.values()),
                            *_ffn_adapters(k).values())

# ---- the projections QLoRA stores in 4 bits ---------------------------------------------------
# bitsandbytes quantises the weight of every nn.Linear but the output layer (transformers keeps
# lm_head in 16 bits): each layer's attention projections, Transformer-XL's W_R, FFNs, routers and
# experts. Embeddings, the LM head, norms and biases stay at q_w.
QUANTISED = (L * (sympy.Add(*params.ATTENTION_WEIGHTS.values()) + i_rel * d * h * d_qk)
             + (L - L_moe) * params.ffn_weights(d_ff)
             + L_moe * (params.ROUTER_WEIGHTS + E * params.ffn_weights(d_e)
                        + E_s * params.ffn_weights(d_s) + i_shared_gate * d))

# ---- model states of the most loaded GPU ------------------------------------------------------
# The first stage's L_s of the L layers, split t ways, routed experts e ways more, as
# calc.formulas.memory.PARAMS_PER_GPU holds them (its replicated K/V heads are not adapted
# apart); the adapters and quantised projections all sit in layers. ZeRO shards over the N_d·c
# data- and context-parallel ranks (experts' states over N_d·c/e there; here over N_d·c too).
PARAMS_PER_GPU = memory.PARAMS_PER_GPU
EXPERT_ADAPTERS = FFN_TARGETS_ON * r_a * L_moe * E * (d + d_e)
ADAPTERS_PER_GPU = (ADAPTERS_TOTAL - EXPERT_ADAPTERS + EXPERT_ADAPTERS / n_ep) * L_s / (L * n_tp)
EXPERT_WEIGHTS = L_moe * E * params.ffn_weights(d_e)
QUANTISED_PER_GPU = (QUANTISED - EXPERT_WEIGHTS + EXPERT_WEIGHTS / n_ep) * L_s / (L * n_tp)
TRAINED_PER_GPU = (1 - i_frozen) * PARAMS_PER_GPU + i_frozen * ADAPTERS_PER_GPU
FROZEN_BYTES = i_frozen * (q_w * PARAMS_PER_GPU + (q_f - q_w) * QUANTISED_PER_GPU)
RANKS = n_dp * n_cp



def _trained(stage: sympy.Expr) -> sympy.Expr:
    """Trained parameters per GPU after ZeRO (stage: its 0/1 indicator): the whole model as
    calc.formulas.memory shards it, or the adapters."""
    return ((1 - i_frozen) * memory._sharded(stage)
            + i_frozen * ADAPTERS_PER_GPU / RANKS**stage)


STATES: dict[str, sympy.Expr] = {
    "trained_per_gpu": TRAINED_PER_GPU,
    "frozen": FROZEN_BYTES / RANKS**i_z3,
    "weights": q_w * _trained(i_z3),
    "gradients": q_g * _trained(i_z2) + q_gc * _trained(i_z1),
    "optimizer": (q_m + q_o) * _trained(i_z1),
}
STATES_TOTAL = STATES["frozen"] + STATES["weights"] + STATES["gradients"] + STATES["optimizer"]

# ---- activations ------------------------------------------------------------------------------
# Each adapter keeps x·A (r per token) for B's gradient; its input x is the projection's input,
# kept through i_keep_* (calc.formulas.memory). Recomputed under full recomputation. Replicated
# across the t ranks (the rank is small); the 1F1B first stage holds L layers' worth, as there.
ADAPTER_TARGETS_PER_LAYER = a_q + a_k + a_v + a_o  # one layer's attention adapters
FFN_ADAPTERS_PER_LAYER = a_up + a_gate * i_glu + a_down  # one FFN's or expert's
ADAPTER_ACTIVATIONS = T * b * (1 - i_full) * r_a * q_a * (
    L * ADAPTER_TARGETS_PER_LAYER + (L - L_moe) * FFN_ADAPTERS_PER_LAYER
    + L_moe * (k + E_s) * FFN_ADAPTERS_PER_LAYER)

ACTIVATIONS_TOTAL = memory.ACTIVATIONS_TOTAL + ADAPTER_ACTIVATIONS
MEMORY: dict[str, sympy.Expr] = {
    "adapter_activations": ADAPTER_ACTIVATIONS,
    "total": STATES_TOTAL + ACTIVATIONS_TOTAL,
    "micro_batch_room": (memory.GPU_BYTES - STATES_TOTAL) / ACTIVATIONS_TOTAL.subs(b, 1),
}

# ---- parameter counts, whole model ------------------------------------------------------------
COUNTS: dict[str, sympy.Expr] = {
    **ADAPTERS,
    "adapters": ADAPTERS_TOTAL,
    "adapters_active": ADAPTERS_ACTIVE,
    "quantised": QUANTISED,
    # the rest of the frozen base: embeddings, LM head, norms, biases
    "unquantised": N - QUANTISED,
}

# ---- FLOPs of one training step, per sequence (exact integers; ÷ T per token) -----------------
# Weights: forward + input gradient + (trained only) weight gradient; attention's QKᵀ and A·V:
# forward + both operands' gradients; adapters: trained, 3 × their forward.
ADAPTER_FORWARD_PER_TOKEN = flops.FMA * ADAPTERS_ACTIVE
WEIGHTS_PASSES = 1 + BACKWARD_PER_FORWARD - i_frozen * (
    BACKWARD_PER_FORWARD - FROZEN_BACKWARD_PER_FORWARD)
# Transformer-XL's position scores (q + v)·(W_R r)ᵀ: with W_R frozen the position keys take no
# gradient, so only the query side does (one forward's worth, not two).
POSITION_SCORES_PER_SEQUENCE = i_rel * h * d_qk * sympy.cancel(
    flops.ATTENTION_SCORES_PER_SEQUENCE / flops.PAIR)
FLOPS: dict[str, sympy.Expr] = {
    "adapter_forward_per_token": i_frozen * ADAPTER_FORWARD_PER_TOKEN,
    "train_per_sequence": T * (WEIGHTS_PASSES * flops.WEIGHT_FLOPS_PER_TOKEN
                               + TRAIN_PER_FORWARD * i_frozen * ADAPTER_FORWARD_PER_TOKEN)
    + TRAIN_PER_FORWARD * flops.ATTENTION_SCORES_PER_SEQUENCE
    - i_frozen * (BACKWARD_PER_FORWARD - FROZEN_BACKWARD_PER_FORWARD)
    * POSITION_SCORES_PER_SEQUENCE,
}
