"""Normalisation: its kind, its parameters and where it sits around each sublayer."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from calc.spec.base import MAX_WIDTH, Frozen


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
    weights: bool = Field(
        True, description="norms carry a learned γ (and β); false: OLMo 1's LayerNorms "
                          "without parameters (elementwise_affine=False)")
    first_mixer_norm: bool = Field(
        True, description="the norm before layer 0's mixer; false: layer 0's mixer reads the "
                           "embedding (normed by norm.embedding) as it is (ModernBERT "
                           "decoder's attn_norm, nn.Identity on layer 0; Ettin's "
                           "skip_first_prenorm); needs placement 'pre'")
    sub_norms: bool = Field(
        False, description="one more norm inside each sublayer: before W_O (width h·d_v) and "
                           "before the FFN's down projection (width d_ff) (BitNet)")

    gate_rank: int | None = Field(
        None, ge=1, le=MAX_WIDTH,
        description="a low-rank sigmoid gate on the norm before the mixer of every layer and "
                    "on the norm before the FFN of the MoE layers: y = N(x), then y ⊙ "
                    "σ(W_2 SiLU(W_1 y)), W_1 d × r and W_2 r × d without bias (A.X-K2's "
                    "AXK2GatedRMSNorm, gated_norm_rank); needs placement 'pre'")

    @model_validator(mode="after")
    def _bias(self) -> NormSpec:
        if self.kind == "rmsnorm" and self.bias:
            raise ValueError("norm.bias=True is not allowed with norm.kind='rmsnorm' "
                             "(RMSNorm has no β)")
        if not self.weights and self.bias:
            raise ValueError("norm.bias=True is not allowed with norm.weights=False "
                             "(a norm without parameters has no β)")
        if not self.first_mixer_norm and (self.placement != "pre" or self.gate_rank):
            raise ValueError(f"norm.first_mixer_norm=False drops layer 0's pre-norm: it needs "
                             f"norm.placement='pre' (got {self.placement!r}) and no "
                             f"norm.gate_rank")
        if self.gate_rank is not None and self.placement != "pre":
            raise ValueError(f"norm.gate_rank={self.gate_rank} gates the pre-norms: it needs "
                             f"norm.placement='pre', got {self.placement!r}")
        return self

    @property
    def has_bias(self) -> bool:
        return self.kind == "layernorm" and self.bias is not False and self.weights
