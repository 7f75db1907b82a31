"""Attention's spec: heads, KV sharing, biases, QK-norm, windows and chunks, sinks, MLA."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from calc.spec.base import MAX_HEADS, MAX_TOKENS_CONTEXT, MAX_WIDTH, Frozen
from calc.spec.layers import AttentionKind


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
    qk_norm_weights: bool = Field(
        True, description="the q/k norms carry a weight γ (false: Llama 4's L2 norm)")
    sliding_window: int | None = Field(
        None, ge=1, le=MAX_TOKENS_CONTEXT,
        description="keys a query sees in a local layer, itself included (Mistral: 4096)")
    chunk_size: int | None = Field(
        None, ge=1, le=MAX_TOKENS_CONTEXT,
        description="tokens per chunk of a chunked layer: a query sees the keys of its own "
                    "chunk only (Llama 4: attention_chunk_size 8192)")
    layer_pattern: tuple[AttentionKind, ...] | None = Field(
        None, min_length=1, max_length=1024,
        description="attention kind of layers 0, 1, ... repeated cyclically: global, local, "
                    "chunked or nope (global without position encoding); default all local "
                    "when sliding_window is set, all chunked when chunk_size is, else all "
                    "global (Gemma 2: local, global)")
    sinks: bool = Field(
        False, description="one learned logit per head joins every softmax as an extra key "
                           "without value (gpt-oss: attention sinks)")
    output_gate: bool = Field(
        False, description="each head's output is gated by sigmoid(x W_G), W_G d × h·d_v, "
                           "projected together with W_Q (Qwen3-Next)")
    mla: MLASpec | None = Field(None, description="multi-head latent attention instead of MHA")
    experts: int | None = Field(
        None, ge=1, le=MAX_HEADS,
        description="mixture of attention heads (JetMoE: Shen et al. 2024 §2.2, after "
                    "ModuleFormer): W_Q and W_O are `experts` experts of n_kv_heads heads "
                    "each, sharing one K/V projection; a router Linear(d, experts) without bias "
                    "picks n_heads / n_kv_heads of them per token")

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
            if self.output_gate:
                raise ValueError("attention.output_gate is not defined for attention.mla")
        elif kv is not None and self.n_heads % kv:
            raise ValueError(f"attention.n_kv_heads={kv} must divide attention.n_heads="
                             f"{self.n_heads}")
        if self.experts is not None:
            self._check_experts()
        if self.layer_pattern is None and self.sliding_window and self.chunk_size:
            raise ValueError("attention.sliding_window and attention.chunk_size are both set: "
                             "give attention.layer_pattern to say which layers use which")
        for kind, size in (("local", "sliding_window"), ("chunked", "chunk_size")):
            if self.layer_pattern and kind in self.layer_pattern and getattr(self, size) is None:
                raise ValueError(f"attention.layer_pattern has {kind} layers but "
                                 f"attention.{size} is not set")
        return self

    def _check_experts(self) -> None:
        """A mixture of attention heads: each expert holds n_kv_heads query heads."""
        if self.mla is not None or self.output_gate or self.qkv_bias:
            raise ValueError("attention.experts (a mixture of attention heads) is not defined "
                             "with attention.mla, attention.output_gate or attention.qkv_bias")
        if self.n_kv_heads is None:
            raise ValueError("attention.experts needs attention.n_kv_heads: the query heads of "
                             "one expert")
        if self.n_heads // self.n_kv_heads > self.experts:
            raise ValueError(f"attention.n_heads / n_kv_heads = "
                             f"{self.n_heads // self.n_kv_heads} experts per token exceed "
                             f"attention.experts={self.experts}")

    @property
    def pattern(self) -> tuple[AttentionKind, ...]:
        """layer_pattern, or its default (all local, all chunked or all global)."""
        if self.layer_pattern:
            return self.layer_pattern
        return (("local",) if self.sliding_window else ("chunked",) if self.chunk_size
                else ("global",))
