"""Numbers for a spec: map a ModelSpec onto the formulas' symbols and run the compiled functions.

No sympy here (calc._compiled is generated plain Python), so the report's hot path stays fast.
Parameter counts and per-sequence FLOPs are exact Python integers; a per-token attention cost is
a per-sequence integer divided by T, kept integral when it divides.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from calc import _compiled
from calc.counting import BACKWARD_PER_FORWARD, TRAIN_PER_FORWARD
from calc.spec import ModelSpec

# The symbol of each layer count (calc.formulas.params, PARTS) and the spec's name for it.
LAYER_COUNTS = {"L_att": "attention", "L_loc": "local", "L_chk": "chunked", "L_ssm": "mamba",
                "L_dn": "deltanet", "L_sc": "conv", "L_dense": "dense", "L_moe": "moe"}


def layer_count_values(spec: ModelSpec) -> dict[str, int]:
    """The layers of each kind (calc.spec.layers), keyed by their symbols."""
    counts = spec.layer_counts
    return {symbol: counts[kind] for symbol, kind in LAYER_COUNTS.items()}


def _mixer_values(spec: ModelSpec) -> dict[str, int]:
    """The sizes and indicators of the Mamba, gated DeltaNet and short-convolution mixers (0
    for a mixer the model does not have)."""
    mamba, dn, sc = spec.mamba, spec.deltanet, spec.short_conv
    v2 = mamba is not None and mamba.version == 2
    return {
        "d_in": mamba.d_inner if mamba else 0, "N_s": mamba.d_state if mamba else 0,
        "k_s": mamba.d_conv if mamba else 0, "R_dt": (mamba.dt_rank or 0) if mamba else 0,
        "H_s": (mamba.n_heads or 0) if mamba else 0, "G_s": mamba.n_groups if mamba else 0,
        "i_m2": int(v2), "i_gn": int(bool(mamba and mamba.has_gated_norm)),
        "i_dtn": int(bool(mamba and mamba.dt_norms)),
        "b_ssm": int(bool(mamba and mamba.bias)), "b_cs": int(bool(mamba and mamba.conv_bias)),
        "H_k": dn.n_k_heads if dn else 0, "H_v": dn.n_v_heads if dn else 0,
        "d_lk": dn.d_k if dn else 0, "d_lv": dn.d_v if dn else 0,
        "k_dn": dn.d_conv if dn else 0,
        "k_sc": sc.d_conv if sc else 0, "b_sc": int(bool(sc and sc.bias)),
    }


def symbol_values(spec: ModelSpec) -> dict[str, int]:
    """The value of every architecture symbol (calc.symbols) for `spec`."""
    att, ffn, moe, norm = spec.attention, spec.ffn, spec.moe, spec.norm
    mla = att.mla
    qk_weights = att.qk_norm_weights
    return {
        "V": spec.vocab_size, "d": spec.d_model, "L": spec.n_layers,
        "h": att.n_heads, "h_kv": spec.n_kv_heads,
        "d_qk": spec.head_dim_qk, "d_v": spec.head_dim_v, "d_ff": ffn.d_ff if ffn else 0,
        "P": spec.position_table, "n_norm": spec.norms_per_layer,
        **layer_count_values(spec),
        "w": att.sliding_window or 1, "c": att.chunk_size or 1,
        "E": moe.n_experts if moe else 0, "k": moe.top_k if moe else 0,
        "d_e": moe.d_expert if moe else 0,
        "E_s": moe.n_shared_experts if moe else 0, "d_s": moe.shared_width if moe else 0,
        "r_q": (mla.q_lora_rank or 0) if mla else 0, "r_kv": mla.kv_lora_rank if mla else 0,
        "d_rope": mla.qk_rope_head_dim if mla else 0, "M": spec.mtp_modules,
        "d_emb": spec.embedding_width, "i_proj": int(spec.embedding_width != spec.d_model),
        **_mixer_values(spec),
        "i_glu": int(bool(ffn and ffn.gated)), "i_mla": int(mla is not None),
        "i_qlora": int(mla is not None and mla.q_lora_rank is not None),
        "i_tied": int(spec.tie_embeddings),
        "i_qk_head": int(att.qk_norm == "head" and qk_weights),
        "i_qk_proj": int(att.qk_norm == "projection" and qk_weights),
        "i_norm_emb": int(norm.embedding), "i_norm_final": int(norm.final),
        "i_shared_gate": int(bool(moe and moe.shared_expert_gate)),
        "i_moe": int(moe is not None), "i_rel": int(spec.position.kind == "relative"),
        "i_sink": int(att.sinks), "i_gate": int(att.output_gate), "i_sub": int(norm.sub_norms),
        "g_norm": int(norm.weights),
        "b_qkv": int(att.qkv_bias), "b_o": int(att.out_bias), "b_ff": int(bool(ffn and ffn.bias)),
        "b_norm": int(norm.has_bias), "b_lm": int(spec.lm_head_bias),
        "b_router": int(bool(moe and moe.router_bias)),
    }


@dataclass(frozen=True)
class ParamCounts:
    """Exact parameter counts: per layer, per component (whole model) and the summary."""

    per_layer: dict[str, int]  # one attention layer's attention, and one layer's norms
    per_dense_ffn: dict[str, int]  # one dense layer's FFN
    per_moe_ffn: dict[str, int]  # one MoE layer's router, experts, shared experts
    per_mixer: dict[str, int]  # one Mamba, gated DeltaNet or short-convolution layer's mixer
    components: dict[str, int]  # whole model, by component; sums to total
    total: int
    embedding: int
    non_embedding: int
    active: int
    mtp: int  # multi-token-prediction modules, not part of total


def count_params(spec: ModelSpec) -> ParamCounts:
    s = symbol_values(spec)
    summary = _compiled.params_summary(s)
    return ParamCounts(
        per_layer=_compiled.params_per_layer(s),
        per_dense_ffn=_compiled.params_dense_ffn(s),
        per_moe_ffn=_compiled.params_moe_ffn(s),
        per_mixer={**_compiled.params_mamba(s), **_compiled.params_deltanet(s),
                   **_compiled.params_short_conv(s)},
        components=_compiled.params_components(s),
        **summary,
    )


def _exact(numerator: int, denominator: int) -> int | float:
    """numerator / denominator: an int when it divides, else the nearest float."""
    q = Fraction(numerator, denominator)
    return q.numerator if q.denominator == 1 else float(q)


@dataclass(frozen=True)
class FlopCounts:
    """FLOPs per token at sequence length `seq_len` under an attention convention."""

    seq_len: int
    attention: str  # "causal" | "full"
    components: dict[str, int | float]  # forward FLOPs per token by component
    attention_per_sequence: int  # QKᵀ and A·V over one whole sequence, all layers
    forward: int | float  # per token, the sum of the components
    inference_per_token: int  # one generated token at context seq_len (KV cache)

    @property
    def backward(self) -> int | float:
        return BACKWARD_PER_FORWARD * self.forward

    @property
    def train(self) -> int | float:
        return TRAIN_PER_FORWARD * self.forward

    @property
    def attention_share(self) -> float:
        return float(self.components["attention/scores"] / self.forward)


def count_flops(spec: ModelSpec, seq_len: int, attention: str = "causal") -> FlopCounts:
    s = {**symbol_values(spec), "T": seq_len, "i_causal": int(attention == "causal")}
    flops = _compiled.flops(s)
    per_sequence = flops["attention_per_sequence"]
    weights = flops["weights_per_token"]
    components = {}
    for key, value in _compiled.flops_forward_components(s).items():
        components[key] = value
        if key == "attention/o":  # QKᵀ and A·V sit between the projections
            components["attention/scores"] = _exact(per_sequence, seq_len)
    return FlopCounts(
        seq_len=seq_len,
        attention=attention,
        components=components,
        attention_per_sequence=per_sequence,
        forward=_exact(weights * seq_len + per_sequence, seq_len),
        inference_per_token=weights + flops["inference_attention_per_token"],
    )


def rule_flops(spec: ModelSpec, seq_len: int) -> dict[str, float]:
    """Training FLOPs per token under each published rule (calc.formulas.rules)."""
    s = {**symbol_values(spec), "T": seq_len}
    return {key: float(value) for key, value in _compiled.rules_train_per_token(s).items()}


@dataclass(frozen=True)
class TrainingCost:
    flops: float
    gpu_hours: float | None  # None without a GPU peak
    days: float | None


def training_cost(train_per_token: float, tokens: float, peak_flops: float | None,
                  mfu: float, gpus: int) -> TrainingCost:
    """Training FLOPs, GPU-hours and days on `gpus` GPUs (calc.formulas.training)."""
    s = {"F": train_per_token, "D": float(tokens), "R": peak_flops or 1.0, "u": mfu, "K": gpus}
    cost = _compiled.training(s)
    if peak_flops is None:
        return TrainingCost(flops=float(cost["flops"]), gpu_hours=None, days=None)
    return TrainingCost(float(cost["flops"]), float(cost["gpu_hours"]), float(cost["days"]))
