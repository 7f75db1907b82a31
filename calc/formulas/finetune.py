"""Fine-tuning: adapter parameters, the memory of a frozen (maybe 4-bit) base, and step FLOPs.

LoRA (Hu et al. 2021 §4.1) adds beside a frozen W ∈ R^{n_in×n_out} the product of A ∈ R^{n_in×r}
and B ∈ R^{r×n_out}: r·(n_in + n_out) parameters, and 2·r·(n_in + n_out) FLOPs per token (x·A,
then (xA)·B). A target names modules as PEFT's target_modules do (TARGET_MATRICES below): an FFN
target adapts that projection in every dense layer and in the shared experts' MLP; `experts`
adapts every routed expert (a token runs through the adapters of its k experts).

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
from calc.formulas import flops, memory, mixers, params
from calc.formulas.mixers import M1
from calc.symbols import (
    SYMBOLS,
    C_cen,
    D_tg,
    E,
    E_s,
    H_ml,
    H_v,
    L,
    L_att,
    L_att2,
    L_dense,
    L_dn,
    L_dw,
    L_gr,
    L_idx,
    L_kvs,
    L_kvs2,
    L_la,
    L_ml,
    L_moe,
    L_rw,
    L_sc,
    L_ssm,
    L_w,
    L_xa,
    N,
    N_head,
    N_s,
    R_dt,
    T,
    b,
    b_gh,
    d,
    d_e,
    d_ff,
    d_gr,
    d_in,
    d_mk,
    d_mv,
    d_qk,
    d_rl,
    d_rw,
    d_s,
    d_v,
    h,
    h2,
    h_kv,
    i_au,
    i_dm,
    i_fa,
    i_frozen,
    i_full,
    i_gate,
    i_gh,
    i_glu,
    i_go,
    i_head,
    i_hf,
    i_img,
    i_kev,
    i_le,
    i_lr,
    i_oib,
    i_pk,
    i_qh,
    i_rel,
    i_shared_gate,
    i_sink,
    i_sink2,
    i_skp,
    i_srt,
    i_z1,
    i_z2,
    i_z3,
    k,
    n_au,
    n_cp,
    n_dp,
    n_ep,
    n_tp,
    p_le,
    q_a,
    q_f,
    q_g,
    q_gc,
    q_m,
    q_o,
    q_w,
    r_a,
    r_lr,
)

# ---- adapter parameters -----------------------------------------------------------------------
# Each target (calc.spec.finetune.LORA_TARGETS, the modules PEFT's target_modules name) and the
# matrices it adapts: (how many in the model, n_in + n_out of each, how many a token runs
# through). Attention: MHA/GQA/MQA widths of calc.formulas.params (q_proj also yields Qwen3-Next's
# output gate, not a per-head gate's g_proj; MLA is refused in calc.spec.finetune). FFN
# targets: the dense layers' FFN and the shared experts, which transformers builds as one MLP of
# width E_s·d_s (Qwen2MoeSparseMoeBlock, DeepseekV3MoE); `experts`: up, gate and down of each
# routed expert (k of E per token). The other mixers: calc.formulas.mixers's projections
# (Mamba's in_proj d → 2D (+ 2GN + H), x_proj, dt_proj, out_proj; gated DeltaNet's
# in_proj_qkvz, in_proj_ba, out_proj; lightning attention's qkv_proj, output_gate, out_proj; the
# short convolution's in_proj d → 3d and out_proj; RWKV's key, value, receptance of the
# time-mix and of the channel-mix, and the time-mix's output), one of each per layer.
# the MoE layers have a shared-expert MLP of nn.Linear modules (Inkling's, weighed by its
# router, are stacked parameters: InklingSharedExperts)
HAS_SHARED = sympy.Min(E_s, 1) * (1 - i_srt)
SHARED_WIDTH = E_s * d_s


# An FFN target's matrix in the dense layers and in the shared experts' MLP (up and gate are
# d × width, down width × d: n_in + n_out alike).
# ffn.double_wide: L_dw of the dense FFNs are 2·d_ff wide.
# (the dense FFNs of the cross-attention layers run only where there are image tokens)
FFN_MATRICES = ((L_dense - L_dw, d + d_ff, L_dense - L_dw - (1 - i_img) * L_xa),
                (L_dw, d + 2 * d_ff, L_dw),
                (L_moe * HAS_SHARED, d + SHARED_WIDTH, L_moe * HAS_SHARED))


def _attention_matrices(sides: sympy.Expr, on: sympy.Expr = 1) -> tuple[tuple[sympy.Expr, ...],
                                                                          ...]:
    """An attention target's matrix of n_in + n_out `sides` in the attention layers of the
    model's head shapes, and in the L'_att layers of the other kind's (attention.kind_shapes);
    `on`: the layers have it."""
    return ((on * (L_att - L_att2), sides, on * (L_att - L_att2)),
            (on * L_att2, params.of_kind(sides), on * L_att2))


def _kv_matrices(sides: sympy.Expr, on: sympy.Expr = sympy.S.One
                 ) -> tuple[tuple[sympy.Expr, ...], ...]:
    """A key or value projection's matrix of n_in + n_out `sides` in the attention layers with
    keys and values of their own (not the L_kvs kv-shared ones: they have no k_proj or v_proj),
    of each head shape; `on`: the layers have it (no v_proj where the keys are the values)."""
    own, kind = L_att - L_att2 - (L_kvs - L_kvs2), L_att2 - L_kvs2
    return ((on * own, sides, on * own),
            (params.of_kind(on) * kind, params.of_kind(sides), params.of_kind(on) * kind))


# PEFT's q_proj, k_proj, v_proj and o_proj name the cross-attention layers' projections too
# (MllamaTextCrossAttention's): L_xa more of each, which a text token runs through where there
# are image tokens (W_Q, W_O); the adapters on W_K and W_V read the image tokens, once per
# sequence, and are not counted per token.
TARGET_MATRICES: dict[str, tuple[tuple[sympy.Expr, sympy.Expr, sympy.Expr], ...]] = {
    # q, k, v: attention's, then the mLSTM's (xLSTMLayer's q, k, v: PEFT's names select both),
    # then the cross-attention layers' (MllamaTextCrossAttention's q_proj, k_proj, v_proj, o_proj)
    "q": (*_attention_matrices(d + h * d_qk
                               + i_gate * (1 - i_gh) * (1 - b_gh) * (1 - i_go) * h * d_v),
          (L_ml, d + H_ml * d_mk, L_ml), (L_xa, d + h * d_qk, i_img * L_xa)),
    "k": (*_kv_matrices(d + h_kv * d_qk), (L_ml, d + H_ml * d_mk, L_ml),
          (L_xa, d + h_kv * d_qk, sympy.S.Zero)),
    "v": (*_kv_matrices(d + h_kv * d_v, 1 - i_kev), (L_ml, d + H_ml * d_mv, L_ml),
          (L_xa, d + h_kv * d_v, sympy.S.Zero)),
    "o": (*_attention_matrices(h * d_v + d), (L_xa, h * d_v + d, i_img * L_xa)),
    # the output gate's own projection: the per-head g_proj d → h (LFM3, Laguna), and Beam's
    # gate_proj d → h·d_v beside q_proj (the gate with a bias per head, b_gate,head), and
    # HRM-Text's gate_proj d → h·d_v (attention.output_gate_own, 1_gate-own)
    "g": _attention_matrices(d + h * params.GATE_WIDTH, i_gh + (1 - i_gh) * (b_gh + i_go)),
    # Inkling's r_proj d → h·d_rel (attention.relative_logits)
    "r": _attention_matrices(d + h * d_rl),
    # Inkling 2's sink_proj d → h (attention.sink_proj), on the layers with sinks
    "sink": ((i_skp * i_sink * (L_att - L_att2), d + h, i_skp * i_sink * (L_att - L_att2)),
             (i_skp * i_sink2 * L_att2, d + h2, i_skp * i_sink2 * L_att2)),
    "up": FFN_MATRICES,
    "gate": tuple((i_glu * n, sides, i_glu * per) for n, sides, per in FFN_MATRICES),
    "down": FFN_MATRICES,
    "experts": ((L_moe * E * (2 + i_glu), d + d_e, L_moe * k * (2 + i_glu)),),
    "shared_expert_gate": ((i_shared_gate * L_moe, d + 1, i_shared_gate * L_moe),),
    "in_proj": ((L_ssm, d + mixers.IN_WIDTH, L_ssm), (L_sc, d + 3 * d, L_sc)),
    "x_proj": ((M1 * L_ssm, d_in + R_dt + 2 * N_s, M1 * L_ssm),),
    # Mamba's dt_proj R → D, and Doge's dynamic mask's h_kv·d_v → h_kv (DogeAttention.dt_proj)
    "dt_proj": ((M1 * L_ssm, R_dt + d_in, M1 * L_ssm),
                (i_dm * L_att, h_kv * d_v + h_kv, i_dm * L_att)),
    "out_proj": ((L_ssm, d_in + d, L_ssm), (L_dn, mixers.DN_VALUES + d, L_dn),
                 (L_la, mixers.LA_WIDTH + d, L_la), (L_ml, H_ml * d_mv + d, L_ml),
                 (L_sc, d + d, L_sc)),
    "in_proj_qkvz": ((L_dn, d + 2 * mixers.DN_KEYS + 2 * mixers.DN_VALUES, L_dn),),
    "in_proj_ba": ((L_dn, d + 2 * H_v, L_dn),),
    "qkv_proj": ((L_la, d + 3 * mixers.LA_WIDTH, L_la),),
    "output_gate": ((L_la, d + mixers.LA_WIDTH, L_la),),
    # RWKV's modules as PEFT names them: each name is both the time-mix's projection and the
    # channel-mix's (key: d → d_ff, the FFN's first matrix; value: d_ff → d, its second;
    # receptance: d → d); calc.spec.finetune holds adapters on models whose every layer is
    # RWKV's with a dense FFN, so L_rw of each
    "key": ((L_rw, d + d_rw, L_rw), (L_rw, d + d_ff, L_rw)),
    "value": ((L_rw, d + d_rw, L_rw), (L_rw, d_ff + d, L_rw)),
    "receptance": ((L_rw, d + d_rw, L_rw), (L_rw, d + d, L_rw)),
    "output": ((L_rw, d_rw + d, L_rw),),
    # Griffin's recurrent block: linear_y and linear_x d → d_gr, linear_out d_gr → d
    "linear_y": ((L_gr, d + d_gr, L_gr),),
    "linear_x": ((L_gr, d + d_gr, L_gr),),
    "linear_out": ((L_gr, d_gr + d, L_gr),),
    # the mLSTM's gates' projections (xLSTMLayer, weight_mode single): d → H·d_mv, d → H each
    "ogate_preact": ((L_ml, d + H_ml * d_mv, L_ml),),
    "igate_preact": ((L_ml, d + H_ml, L_ml),),
    "fgate_preact": ((L_ml, d + H_ml, L_ml),),
    # per-layer embeddings (Gemma 4): each layer's per_layer_input_gate d → p and
    # per_layer_projection p → d, and the model's per_layer_model_projection d → L·p
    "per_layer_input_gate": ((i_le * L, d + p_le, i_le * L),),
    "per_layer_projection": ((i_le * L, p_le + d, i_le * L),),
    "per_layer_model_projection": ((i_le, d + L * p_le, i_le),),
    # Gemma 3n's LAuReL (linear_left d → r, linear_right r → d a layer) and AltUp
    # (modality_router d → n, run twice a layer; prediction_coefs n → n²; correction_coefs
    # n → n; the model's n − 1 altup_projections and altup_unembed_projections d → d)
    "linear_left": ((i_lr * L, d + r_lr, i_lr * L),),
    "linear_right": ((i_lr * L, r_lr + d, i_lr * L),),
    "modality_router": ((i_au * L, d + n_au, 2 * i_au * L),),
    "prediction_coefs": ((i_au * L, n_au + n_au**2, i_au * L),),
    "correction_coefs": ((i_au * L, 2 * n_au, i_au * L),),
    "altup_projections": ((n_au - i_au, 2 * d, n_au - i_au),),
    "altup_unembed_projections": ((n_au - i_au, 2 * d, n_au - i_au),),
    # a drafter's pre_projection 2·D → d and post_projection d → D, a centroid head's centroids
    # d → C, once each (calc.spec.finetune resolves them only where the model has them)
    "pre_projection": ((1, 2 * D_tg + d, 1),),
    "post_projection": ((1, d + D_tg, 1),),
    "centroids": ((1, d + C_cen, 1),),
}
ON = {target: SYMBOLS[f"a_{target}"] for target in TARGET_MATRICES}

ADAPTERS: dict[str, sympy.Expr] = {
    f"lora/{target}": ON[target] * r_a * sympy.Add(*(n * sides for n, sides, _ in matrices))
    for target, matrices in TARGET_MATRICES.items()}
ADAPTERS_TOTAL = sympy.Add(*ADAPTERS.values())
ADAPTERS_ACTIVE = sympy.Add(*(ON[target] * r_a * sympy.Add(*(per * sides
                                                             for _, sides, per in matrices))
                              for target, matrices in TARGET_MATRICES.items()))
# Adapter pairs (A, B): in the model, and those one token runs through (each keeps its x·A).
ADAPTER_PAIRS = sympy.Add(*(ON[target] * sympy.Add(*(n for n, _, _ in matrices))
                            for target, matrices in TARGET_MATRICES.items()))
ADAPTER_PAIRS_PER_TOKEN = sympy.Add(*(ON[target] * sympy.Add(*(per for _, _, per in matrices))
                                      for target, matrices in TARGET_MATRICES.items()))

# ---- the projections QLoRA stores in 4 bits ---------------------------------------------------
# bitsandbytes quantises the weight of every nn.Linear but the output layer (transformers keeps
# lm_head in 16 bits): each layer's attention projections, Transformer-XL's W_R, FFNs, routers and
# experts, the other mixers' projections (not their conv1d kernels, A, D or Δ biases), and the
# per-layer embeddings' nn.Linear projections (not their table).
# Embeddings, the LM head, norms and biases stay at q_w.
QUANTISED = (params.over_attention_layers(
    sympy.Add(*params.ATTENTION_WEIGHTS.values(), *params.MOA_IDLE.values()) + i_rel * d * h * d_qk)
             - params.over_kv_shared_layers(params.ATTENTION_WEIGHTS["attention/kv"])
             + L_idx * sympy.Add(*params.INDEXER_WEIGHTS.values())
             + params.over_dense_layers(params.ffn_weights(d_ff))
             # product-key experts are nn.Embedding rows, kept at q_w
             + L_moe * (params.ROUTER_WEIGHTS + (1 - i_pk) * E * params.ffn_weights(d_e)
                        + E_s * params.ffn_weights(d_s) + i_shared_gate * d)
             + L_ssm * sympy.Add(*mixers.MAMBA_WEIGHTS.values())
             + L_dn * sympy.Add(*mixers.DELTANET_WEIGHTS.values())
             + L_la * sympy.Add(*mixers.LIGHTNING_WEIGHTS.values())
             + L_rw * sympy.Add(*mixers.RWKV_WEIGHTS.values())
             # Griffin's nn.Linear projections; its gates are plain parameters, left in 16 bits
             + L_gr * (mixers.GRIFFIN_WEIGHTS["griffin/y"] + mixers.GRIFFIN_WEIGHTS["griffin/x"]
                       + mixers.GRIFFIN_WEIGHTS["griffin/out"])
             + L_ml * sympy.Add(*mixers.MLSTM_WEIGHTS.values())  # every one an nn.Linear
             + L_sc * sympy.Add(*mixers.SHORT_CONV_WEIGHTS.values())
             # per-layer embeddings' projection and each layer's gate and projection
             + sympy.Add(*params.PER_LAYER_EMBEDDINGS_WEIGHTS.values())
             # Gemma 3n's AltUp and LAuReL nn.Linear modules (not correct_output_scale)
             + sympy.Add(*params.ALTUP_WEIGHTS.values(), *params.LAUREL_WEIGHTS.values())
             # the cross-attention layers' q_proj, k_proj, v_proj, o_proj
             + L_xa * sympy.Add(*params.CROSS_ATTENTION_WEIGHTS.values()))

# ---- model states of the most loaded GPU ------------------------------------------------------
# The L_w layers the GPU holds (the first stage's L_s; DualPipe's last stage too), split t
# ways, routed experts e ways more, as calc.formulas.memory.PARAMS_PER_GPU holds them (its
# replicated K/V heads are not adapted apart); the adapters and quantised projections all sit
# in layers. ZeRO shards over the N_d·c data- and context-parallel ranks (experts' states over
# N_d·c/e there; here over N_d·c too).
PARAMS_PER_GPU = memory.PARAMS_PER_GPU
EXPERT_ADAPTERS = ADAPTERS["lora/experts"]
ADAPTERS_PER_GPU = (ADAPTERS_TOTAL - EXPERT_ADAPTERS + EXPERT_ADAPTERS / n_ep) * L_w / (L * n_tp)
EXPERT_WEIGHTS = L_moe * E * params.ffn_weights(d_e)
QUANTISED_PER_GPU = (QUANTISED - EXPERT_WEIGHTS + EXPERT_WEIGHTS / n_ep) * L_w / (L * n_tp)
TRAINED_PER_GPU = (1 - i_frozen) * PARAMS_PER_GPU + i_frozen * ADAPTERS_PER_GPU
# A stack that stores its frozen head like the projections (i_qh: LitGPT's QLoRA) holds it at
# q_f too, on the GPU that holds the head.
FROZEN_BYTES = i_frozen * (q_w * PARAMS_PER_GPU + (q_f - q_w) * (
    QUANTISED_PER_GPU + i_qh * i_head * N_head / n_tp))
RANKS = n_dp * n_cp



def _trained(stage: sympy.Expr, full: sympy.Expr, adapter: sympy.Expr) -> sympy.Expr:
    """Bytes of trained parameters per GPU after ZeRO (stage: its 0/1 indicator): the whole
    model as calc.formulas.memory shards it at `full` bytes a parameter, or the adapters at
    `adapter` bytes."""
    return ((1 - i_frozen) * full * memory._sharded(stage)
            + i_frozen * adapter * ADAPTERS_PER_GPU / RANKS**stage)


def _fp32_adapter(recipe_bytes: sympy.Expr) -> sympy.Expr:
    """Bytes per adapter parameter of a recipe piece: the recipe's, or 4 where the stack keeps
    the adapters in fp32 (i_fa: PEFT 0.21.2 get_peft_model(autocast_adapter_dtype=True) casts
    lora_A/lora_B to float32 on a 16-bit base, so their .grad is fp32 too)."""
    return (1 - i_fa) * recipe_bytes + 4 * i_fa


# fp32 adapters are themselves the parameters the optimizer steps: no fp32 gradient copy or
# master copy of them (i_fa zeroes q_gc and q_m on the adapters).
STATES: dict[str, sympy.Expr] = {
    "trained_per_gpu": TRAINED_PER_GPU,
    "frozen": FROZEN_BYTES / RANKS**i_z3,
    "weights": _trained(i_z3, q_w, _fp32_adapter(q_w)),
    # the optimizer in the backward (calc.formulas.memory.ONE_GRADIENT) trains the full model
    # only: calc.plan refuses it on a frozen base
    "gradients": (1 - i_oib) * (_trained(i_z2, q_g, _fp32_adapter(q_g))
                                + _trained(i_z1, q_gc, (1 - i_fa) * q_gc))
                 + i_oib * memory.ONE_GRADIENT,
    "optimizer": _trained(i_z1, q_m + q_o, (1 - i_fa) * q_m + q_o),
}
STATES_TOTAL = STATES["frozen"] + STATES["weights"] + STATES["gradients"] + STATES["optimizer"]

# ---- activations ------------------------------------------------------------------------------
# Each adapter keeps x·A (r per token) for B's gradient; its input x is the projection's input,
# kept through i_keep_* (calc.formulas.memory). Recomputed under full recomputation. Replicated
# across the t ranks (the rank is small); the 1F1B first stage holds L layers' worth, as there.
# PEFT's adapters on transformers' models (i_hf) run in fp32: x·A in 4 bytes.
ADAPTER_ACTIVATIONS = (T * b * (1 - i_full) * r_a * ((1 - i_hf) * q_a + 4 * i_hf)
                       * ADAPTER_PAIRS_PER_TOKEN)

ACTIVATIONS_TOTAL = memory.ACTIVATIONS_TOTAL + ADAPTER_ACTIVATIONS
MEMORY: dict[str, sympy.Expr] = {
    "adapter_activations": ADAPTER_ACTIVATIONS,
    "total": STATES_TOTAL + ACTIVATIONS_TOTAL,
    "micro_batch_room": (memory.GPU_BYTES - STATES_TOTAL) / ACTIVATIONS_TOTAL.xreplace({b: 1}),
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
# Weights: forward + input gradient + (trained only) weight gradient; attention's QKᵀ and A·V
# and the scans' recurrences (their operands are activations): forward + both operands'
# gradients; adapters: trained, 3 × their forward.
ADAPTER_FORWARD_PER_TOKEN = flops.FMA * ADAPTERS_ACTIVE
WEIGHTS_PASSES = 1 + BACKWARD_PER_FORWARD - i_frozen * (
    BACKWARD_PER_FORWARD - FROZEN_BACKWARD_PER_FORWARD)


def _step_flops() -> dict[str, object]:
    """FLOPS and the position scores it subtracts, made on first use (the module's __getattr__):
    sympy.cancel takes a tenth of a second, and only calc.formulas.codegen and the tests read
    them (calc evaluates calc/_compiled.py); `memory --formula` does not."""
    # Transformer-XL's position scores (q + v)·(W_R r)ᵀ: with W_R frozen the position keys take
    # no gradient, so only the query side does (one forward's worth, not two).
    position_scores = i_rel * (h * d_qk * flops.PAIRS + params.of_kind(h * d_qk) * flops.PAIRS2)
    step: dict[str, sympy.Expr] = {
        "adapter_forward_per_token": i_frozen * ADAPTER_FORWARD_PER_TOKEN,
        "train_per_sequence": T * (WEIGHTS_PASSES * (flops.WEIGHT_FLOPS_PER_TOKEN
                                                     - flops.SCANS_PER_TOKEN)
                                   + TRAIN_PER_FORWARD * (flops.SCANS_PER_TOKEN
                                                          + i_frozen * ADAPTER_FORWARD_PER_TOKEN))
        + TRAIN_PER_FORWARD * flops.ATTENTION_SCORES_PER_SEQUENCE
        - i_frozen * (BACKWARD_PER_FORWARD - FROZEN_BACKWARD_PER_FORWARD) * position_scores,
    }
    return {"POSITION_SCORES_PER_SEQUENCE": position_scores, "FLOPS": step}


def __getattr__(name: str) -> object:
    """POSITION_SCORES_PER_SEQUENCE and FLOPS (dict[str, sympy.Expr]), made once (PEP 562)."""
    if name not in ("POSITION_SCORES_PER_SEQUENCE", "FLOPS"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals().update(_step_flops())
    return globals()[name]
