"""Numbers for a spec: map a ModelSpec onto the formulas' symbols and run the compiled functions.

No sympy here (calc._compiled is generated plain Python), so the report's hot path stays fast.
Parameter counts and per-sequence FLOPs are exact Python integers; a per-token attention cost is
a per-sequence integer divided by T, kept integral when it divides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from calc import _compiled
from calc.counting import BACKWARD_PER_FORWARD, TRAIN_PER_FORWARD
from calc.spec import ModelSpec


def symbol_values(spec: ModelSpec) -> dict[str, int]:
    """The value of every architecture symbol (calc.symbols) for `spec`."""
    att, ffn, moe, norm = spec.attention, spec.ffn, spec.moe, spec.norm
    mla = att.mla
    return {
        "V": spec.vocab_size, "d": spec.d_model, "L": spec.n_layers,
        "h": att.n_heads, "h_kv": spec.n_kv_heads,
        "d_qk": spec.head_dim_qk, "d_v": spec.head_dim_v, "d_ff": ffn.d_ff,
        "P": spec.position_table, "n_norm": spec.norms_per_layer,
        "L_loc": spec.n_local_layers, "w": att.sliding_window or 1,
        "L_moe": spec.n_moe_layers,
        "E": moe.n_experts if moe else 0, "k": moe.top_k if moe else 0,
        "d_e": moe.d_expert if moe else 0,
        "E_s": moe.n_shared_experts if moe else 0, "d_s": moe.shared_width if moe else 0,
        "r_q": (mla.q_lora_rank or 0) if mla else 0, "r_kv": mla.kv_lora_rank if mla else 0,
        "d_rope": mla.qk_rope_head_dim if mla else 0, "M": spec.mtp_modules,
        "i_glu": int(ffn.gated), "i_mla": int(mla is not None),
        "i_qlora": int(mla is not None and mla.q_lora_rank is not None),
        "i_tied": int(spec.tie_embeddings),
        "i_qk_head": int(att.qk_norm == "head"), "i_qk_proj": int(att.qk_norm == "projection"),
        "i_norm_emb": int(norm.embedding), "i_norm_final": int(norm.final),
        "i_shared_gate": int(bool(moe and moe.shared_expert_gate)),
        "i_moe": int(moe is not None), "i_rel": int(spec.position.kind == "relative"),
        "b_qkv": int(att.qkv_bias), "b_o": int(att.out_bias), "b_ff": int(ffn.bias),
        "b_norm": int(norm.has_bias), "b_lm": int(spec.lm_head_bias),
        "b_router": int(bool(moe and moe.router_bias)),
    }


@dataclass(frozen=True)
class ParamCounts:
    """Exact parameter counts: per layer, per component (whole model) and the summary."""

    per_layer: dict[str, int]  # one layer's attention and norms
    per_dense_ffn: dict[str, int]  # one dense layer's FFN
    per_moe_ffn: dict[str, int]  # one MoE layer's router, experts, shared experts
    components: dict[str, int]  # whole model, by component; sums to total
    total: int
    embedding: int
    non_embedding: int
    active: int
    mtp: int  # multi-token-prediction modules, not part of total


def count_params(spec: ModelSpec, symbols: Mapping[str, int] | None = None) -> ParamCounts:
    """`symbols`: symbol_values(spec) when the caller has it already (calc.estimate)."""
    s = symbol_values(spec) if symbols is None else symbols
    summary = _compiled.params_summary(s)
    return ParamCounts(
        per_layer=_compiled.params_per_layer(s),
        per_dense_ffn=_compiled.params_dense_ffn(s),
        per_moe_ffn=_compiled.params_moe_ffn(s),
        components=_compiled.params_components(s),
        **summary,
    )


def _exact(numerator: int, denominator: int) -> int | float:
    """numerator / denominator: an int when it divides, else the nearest float (Python's int
    division rounds correctly, as float(Fraction(...)) does, without building a Fraction)."""
    whole, rest = divmod(numerator, denominator)
    return whole if rest == 0 else numerator / denominator


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


def count_flops(spec: ModelSpec, seq_len: int, attention: str = "causal",
                symbols: Mapping[str, int] | None = None) -> FlopCounts:
    """`symbols`: symbol_values(spec) when the caller has it already (calc.estimate)."""
    s = {**(symbol_values(spec) if symbols is None else symbols), "T": seq_len,
         "i_causal": int(attention == "causal")}
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


def rule_flops(spec: ModelSpec, seq_len: int,
               symbols: Mapping[str, int] | None = None) -> dict[str, float]:
    """Training FLOPs per token under each published rule (calc.formulas.rules)."""
    s = {**(symbol_values(spec) if symbols is None else symbols), "T": seq_len}
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
