"""ModelSpec: every architecture choice of a decoder-only Transformer that changes a count.

One frozen pydantic model with parts for attention (MHA/GQA/MQA, MLA, QK-norm, sliding windows),
the feed-forward network (plain or gated), mixture-of-experts, normalisation and positions. The
names follow the papers (d_model, d_ff, n_heads: Vaswani et al. 2017 §3; n_layers, context_length
as n_ctx: Kaplan et al. 2020 Table 1) and the Hugging Face config fields they map to. Cross-field
rules are validators whose messages name the fields; derived values (head width, MoE layer count,
...) are plain properties.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from calc.errors import CalcError, one_line

# Generous upper bounds: large enough for a 10T-parameter spec, small enough to catch typos.
MAX_WIDTH = 1 << 22  # 4,194,304
MAX_LAYERS = 100_000
MAX_VOCAB = 1 << 30
MAX_HEADS = 1 << 16
MAX_EXPERTS = 1 << 20
MAX_TOKENS_CONTEXT = 1 << 40

Activation = Literal["relu", "gelu", "silu", "swiglu", "geglu", "reglu"]
GATED: dict[str, bool] = {
    "relu": False, "gelu": False, "silu": False,  # FFN(x) = W2 φ(W1 x)
    "swiglu": True, "geglu": True, "reglu": True,  # FFN(x) = W_down (φ(W_gate x) ⊙ W_up x)
}


class Frozen(BaseModel):
    """Base for every spec: immutable, unknown keys rejected, NaN/inf rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class MLASpec(Frozen):
    """Multi-head latent attention (DeepSeek-V2 §2.1): low-rank queries and a shared KV latent."""

    q_lora_rank: int | None = Field(
        None, ge=1, le=MAX_WIDTH,
        description="rank of the query down-projection; None projects queries directly (V2-Lite)")
    kv_lora_rank: int = Field(ge=1, le=MAX_WIDTH, description="rank of the joint KV latent")
    qk_nope_head_dim: int = Field(ge=0, le=MAX_WIDTH, description="per-head q/k width without RoPE")
    qk_rope_head_dim: int = Field(ge=0, le=MAX_WIDTH,
                                  description="per-head q width with RoPE; its key part is shared")
    v_head_dim: int = Field(ge=1, le=MAX_WIDTH, description="per-head value width")

    @model_validator(mode="after")
    def _qk_width(self) -> MLASpec:
        if self.qk_nope_head_dim + self.qk_rope_head_dim == 0:
            raise ValueError("attention.mla: qk_nope_head_dim + qk_rope_head_dim must be >= 1")
        return self


class AttentionSpec(Frozen):
    """Self-attention: heads, KV sharing, biases, QK-norm, windows, or MLA."""

    n_heads: int = Field(ge=1, le=MAX_HEADS, description="query heads h")
    n_kv_heads: int | None = Field(
        None, ge=1, le=MAX_HEADS,
        description="key/value heads: n_heads for MHA, 1 for MQA, a divisor for GQA; "
                    "default n_heads")
    head_dim: int | None = Field(
        None, ge=1, le=MAX_WIDTH,
        description="width d_h of one head; default d_model / n_heads (Gemma uses 256 instead)")
    qkv_bias: bool = Field(False, description="biases on the Q, K, V projections (Qwen2, GPT-2)")
    out_bias: bool = Field(False, description="bias on the output projection W_O")
    qk_norm: Literal["none", "head", "projection"] = Field(
        "none",
        description="norm on queries and keys: per head over d_h (Qwen3, Gemma 3) or over the "
                    "whole projection h·d_h (OLMo 2)")
    sliding_window: int | None = Field(
        None, ge=1, le=MAX_TOKENS_CONTEXT,
        description="keys a query sees in a local layer, itself included (Mistral: 4096)")
    layer_pattern: tuple[Literal["global", "local"], ...] | None = Field(
        None, min_length=1, max_length=1024,
        description="attention kind of layers 0, 1, ... repeated cyclically; default all local "
                    "when sliding_window is set, else all global (Gemma 2: local, global)")
    mla: MLASpec | None = Field(None, description="multi-head latent attention instead of MHA")

    @model_validator(mode="after")
    def _consistent(self) -> AttentionSpec:
        kv = self.n_kv_heads
        if self.mla is not None:
            if kv is not None and kv != self.n_heads:
                raise ValueError(f"attention.n_kv_heads={kv} has no meaning with attention.mla "
                                 f"(every head has its own keys); leave it unset")
            if self.head_dim is not None:
                raise ValueError("attention.head_dim has no meaning with attention.mla; "
                                 "give attention.mla.qk_nope_head_dim/qk_rope_head_dim/v_head_dim")
            if self.qk_norm != "none":
                raise ValueError("attention.qk_norm is not defined for attention.mla")
        elif kv is not None and self.n_heads % kv:
            raise ValueError(f"attention.n_kv_heads={kv} must divide attention.n_heads="
                             f"{self.n_heads}")
        if self.layer_pattern and "local" in self.layer_pattern and self.sliding_window is None:
            raise ValueError("attention.layer_pattern has local layers but "
                             "attention.sliding_window is not set")
        return self


class FFNSpec(Frozen):
    """The position-wise feed-forward network of a dense layer (and the shape of each expert)."""

    activation: Activation = Field(
        description="relu/gelu/silu: two matrices; swiglu/geglu/reglu: gated, three matrices")
    d_ff: int = Field(ge=1, le=MAX_WIDTH * 16, description="hidden width of a dense layer's FFN")
    bias: bool = Field(False, description="biases on the FFN (and expert) projections")

    @property
    def gated(self) -> bool:
        return GATED[self.activation]


class MoESpec(Frozen):
    """Mixture-of-experts FFN (Switch/GShard style) with optional shared experts."""

    n_experts: int = Field(ge=1, le=MAX_EXPERTS, description="routed experts E per MoE layer")
    top_k: int = Field(ge=1, le=MAX_EXPERTS, description="routed experts each token uses")
    d_expert: int = Field(ge=1, le=MAX_WIDTH * 16, description="hidden width of one expert")
    n_shared_experts: int = Field(0, ge=0, le=MAX_EXPERTS,
                                  description="experts every token uses (DeepSeek, Qwen2-MoE)")
    d_shared: int | None = Field(None, ge=1, le=MAX_WIDTH * 16,
                                 description="hidden width of one shared expert; default d_expert")
    shared_expert_gate: bool = Field(
        False, description="a learned scalar gate Linear(d, 1) on the shared experts (Qwen2-MoE)")
    router_bias: bool = Field(
        False, description="one learned bias per routed expert (DeepSeek-V3 "
                           "e_score_correction_bias, which its release counts as parameters)")
    first_dense_layers: int = Field(0, ge=0, le=MAX_LAYERS,
                                    description="leading layers with a dense FFN (DeepSeek: 3)")
    every: int = Field(1, ge=1, le=MAX_LAYERS,
                       description="after those, MoE on every k-th layer (layers k-1, 2k-1, ...)")

    @model_validator(mode="after")
    def _top_k(self) -> MoESpec:
        if self.top_k > self.n_experts:
            raise ValueError(f"moe.top_k={self.top_k} must not exceed moe.n_experts="
                             f"{self.n_experts}")
        if self.shared_expert_gate and not self.n_shared_experts:
            raise ValueError("moe.shared_expert_gate=True needs moe.n_shared_experts >= 1 "
                             "(it gates the shared experts' output)")
        return self

    @property
    def shared_width(self) -> int:
        return self.d_shared if self.d_shared is not None else self.d_expert

    def is_moe_layer(self, index: int) -> bool:
        """Whether layer `index` (0-based) has an MoE FFN rather than a dense one."""
        return index >= self.first_dense_layers and (index + 1) % self.every == 0


class NormSpec(Frozen):
    """Normalisation kind and where it sits around each sublayer."""

    kind: Literal["layernorm", "rmsnorm"] = Field(
        "layernorm", description="LayerNorm (γ, β) or RMSNorm (γ only)")
    bias: bool | None = Field(
        None, description="LayerNorm's β; default True for layernorm; rmsnorm has none")
    placement: Literal["pre", "post", "sandwich", "reordered"] = Field(
        "pre",
        description="pre: x + F(N(x)) (GPT-2); post: N(x + F(x)) (Vaswani 2017); sandwich: "
                    "x + N(F(N(x))) (Gemma 2); reordered: x + N(F(x)) (OLMo 2)")
    final: bool = Field(True, description="a norm after the last layer, before the LM head")
    embedding: bool = Field(False, description="a norm right after the embedding (BLOOM)")

    @model_validator(mode="after")
    def _bias(self) -> NormSpec:
        if self.kind == "rmsnorm" and self.bias:
            raise ValueError("norm.bias=True is not allowed with norm.kind='rmsnorm' "
                             "(RMSNorm has no β)")
        return self

    @property
    def has_bias(self) -> bool:
        return self.kind == "layernorm" and self.bias is not False


class PositionSpec(Frozen):
    """How token order enters the model."""

    kind: Literal["learned", "sinusoidal", "rope", "alibi", "relative", "none"] = Field(
        description="learned table (GPT-2), fixed sinusoids (Vaswani), RoPE, ALiBi, relative "
                    "(Transformer-XL, Dai et al. 2019 §3.3: per layer a projection W_R of the "
                    "sinusoidal relative positions and biases u, v; Gopher, Chinchilla) or none")
    max_positions: int | None = Field(
        None, ge=1, le=MAX_TOKENS_CONTEXT,
        description="rows of the learned position table; default context_length "
                    "(OPT stores 2 more)")

    @model_validator(mode="after")
    def _table(self) -> PositionSpec:
        if self.max_positions is not None and self.kind != "learned":
            raise ValueError(f"position.max_positions is only for position.kind='learned', "
                             f"not {self.kind!r}")
        return self


class ModelSpec(Frozen):
    """A decoder-only Transformer language model, as far as parameters and FLOPs can tell."""

    name: str = Field("custom", min_length=1, max_length=200, description="a label for reports")
    vocab_size: int = Field(ge=1, le=MAX_VOCAB, description="vocabulary size V")
    d_model: int = Field(ge=1, le=MAX_WIDTH, description="residual width d")
    n_layers: int = Field(ge=1, le=MAX_LAYERS, description="Transformer blocks L")
    context_length: int = Field(ge=1, le=MAX_TOKENS_CONTEXT,
                                description="training context T; the default sequence length")
    attention: AttentionSpec
    ffn: FFNSpec
    moe: MoESpec | None = Field(None, description="mixture-of-experts FFN on some layers")
    norm: NormSpec = Field(default_factory=NormSpec)
    position: PositionSpec
    tie_embeddings: bool = Field(False, description="LM head shares the token embedding matrix")
    lm_head_bias: bool = Field(False, description="a bias on the LM head (V values)")
    parallel_block: bool = Field(
        False, description="attention and FFN read the same input: x + Attn(N(x)) + FFN(N(x)) "
                           "(GPT-J, PaLM, Falcon)")
    parallel_norms: Literal[1, 2] = Field(
        1, description="norms per parallel block: 1 shared (GPT-J, Falcon-7B) or 2 "
                       "(GPT-NeoX, Falcon-40B)")
    mtp_modules: int = Field(
        0, ge=0, le=64,
        description="multi-token-prediction modules (DeepSeek-V3 §2.2), counted apart from the "
                    "main model: each a projection 2d→d, three norms and one more block")

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
        att = self.attention
        if att.mla is None and att.head_dim is None and self.d_model % att.n_heads:
            raise ValueError(
                f"attention.n_heads={att.n_heads} does not divide d_model={self.d_model}; "
                f"use a divisor or give attention.head_dim")
        if self.moe is not None and self.n_moe_layers == 0:
            raise ValueError(
                f"moe.first_dense_layers={self.moe.first_dense_layers} and moe.every="
                f"{self.moe.every} leave no MoE layer among n_layers={self.n_layers}")
        if self.position.kind == "learned" and self.position_table < self.context_length:
            raise ValueError(
                f"context_length={self.context_length} exceeds the learned position table "
                f"(position.max_positions={self.position_table})")
        if self.parallel_block and self.norm.placement != "pre":
            raise ValueError(f"parallel_block=True needs norm.placement='pre', not "
                             f"{self.norm.placement!r}")
        if self.position.kind == "relative" and att.mla is not None:
            raise ValueError("position.kind='relative' is not defined for attention.mla "
                             "(MLA carries its own decoupled RoPE)")
        if self.parallel_norms == 2 and not self.parallel_block:
            raise ValueError("parallel_norms=2 needs parallel_block=True")
        return self

    # ---- derived values -------------------------------------------------------------------
    @property
    def n_kv_heads(self) -> int:
        att = self.attention
        if att.mla is not None:
            return att.n_heads
        return att.n_kv_heads if att.n_kv_heads is not None else att.n_heads

    @property
    def head_dim_qk(self) -> int:
        """Query/key width per head (MLA: the no-RoPE and RoPE parts together)."""
        att = self.attention
        if att.mla is not None:
            return att.mla.qk_nope_head_dim + att.mla.qk_rope_head_dim
        return att.head_dim if att.head_dim is not None else self.d_model // att.n_heads

    @property
    def head_dim_v(self) -> int:
        att = self.attention
        return att.mla.v_head_dim if att.mla is not None else self.head_dim_qk

    @property
    def position_table(self) -> int:
        """Rows of the learned position table (0 without one)."""
        if self.position.kind != "learned":
            return 0
        rows = self.position.max_positions
        return rows if rows is not None else self.context_length

    @property
    def layer_kinds(self) -> tuple[str, ...]:
        """'global' or 'local' for every layer."""
        att = self.attention
        pattern = att.layer_pattern or (("local",) if att.sliding_window else ("global",))
        return tuple(pattern[i % len(pattern)] for i in range(self.n_layers))

    @property
    def n_local_layers(self) -> int:
        """layer_kinds.count("local"), counted per repeat of the pattern (no per-layer tuple:
        calc.estimate reads it on every call)."""
        att = self.attention
        pattern = att.layer_pattern or (("local",) if att.sliding_window else ("global",))
        whole, rest = divmod(self.n_layers, len(pattern))
        return whole * pattern.count("local") + pattern[:rest].count("local")

    @property
    def moe_layers(self) -> tuple[bool, ...]:
        """For every layer, whether its FFN is a mixture of experts."""
        moe = self.moe
        return tuple(moe is not None and moe.is_moe_layer(i) for i in range(self.n_layers))

    @property
    def n_moe_layers(self) -> int:
        """sum(moe_layers) without the per-layer tuple: layer i is MoE when i >= first_dense_layers
        and every divides i + 1, so the MoE layers are the multiples of `every` in
        (first_dense_layers, n_layers]."""
        moe = self.moe
        if moe is None:
            return 0
        return max(0, self.n_layers // moe.every - moe.first_dense_layers // moe.every)

    @property
    def norms_per_layer(self) -> int:
        """Norm modules in one block: 2 (pre/post/reordered), 4 (sandwich), 1 or 2 (parallel)."""
        if self.parallel_block:
            return self.parallel_norms
        return 4 if self.norm.placement == "sandwich" else 2

    def updated(self, **changes: Any) -> ModelSpec:
        """A re-validated copy with top-level or dotted (`attention.n_heads`) fields changed.

        `model_copy(update=...)` would skip validation; this does not.
        """
        data = self.model_dump(exclude_unset=False)
        for key, value in changes.items():
            *parents, leaf = key.split(".")
            node = data
            for part in parents:
                if not isinstance(node.get(part), dict):
                    raise CalcError(f"{key}: {part!r} is not a part of the spec")
                node = node[part]
            node[leaf] = value
        try:
            return ModelSpec.model_validate(data)
        except ValidationError as error:
            raise CalcError(one_line(error, "spec")) from None
