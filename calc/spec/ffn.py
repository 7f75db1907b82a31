"""The feed-forward network of a layer: dense (plain or gated) or a mixture of experts.

FFN(x) = W_2 φ(W_1 x) (Vaswani et al. 2017 §3.3), or gated, W_down (φ(W_gate x) ⊙ W_up x)
(Shazeer 2020, GLU Variants); a mixture of experts routes each token to k of E such FFNs
(Shazeer et al. 2017; Fedus et al. 2021), with shared experts every token uses (DeepSeek-MoE).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from calc.spec.base import MAX_EXPERTS, MAX_LAYERS, MAX_WIDTH, Frozen

Activation = Literal["relu", "gelu", "silu", "relu2", "xielu", "swiglu", "geglu", "reglu",
                     "relu2glu"]
# relu2 is squared ReLU (So et al. 2021, Primer §3); relu2glu gates with it (BitNet b1.58 2B4T).
# xielu is xIELU (Huang & Schlag 2024, arXiv:2411.13010), Apertus' activation: a plain FFN whose
# activation learns two scalars, α_p and α_n (transformers' XIELUActivation, shape (1,) each).
GATED: dict[str, bool] = {
    "relu": False, "gelu": False, "silu": False, "relu2": False, "xielu": False,  # W2 φ(W1 x)
    # FFN(x) = W_down (φ(W_gate x) ⊙ W_up x)
    "swiglu": True, "geglu": True, "reglu": True, "relu2glu": True,
}
# Learned parameters of one FFN's activation (the others have none).
ACTIVATION_PARAMS: dict[str, int] = {"xielu": 2}


class FFNSpec(Frozen):
    """The position-wise feed-forward network of a dense layer (and the shape of each expert)."""

    activation: Activation = Field(
        description="relu/gelu/silu/relu2/xielu: two matrices; swiglu/geglu/reglu/relu2glu: "
                    "gated, three matrices; xielu learns α_p and α_n in each FFN")
    d_ff: int = Field(ge=1, le=MAX_WIDTH * 16, description="hidden width of a dense layer's FFN")
    bias: bool = Field(False, description="biases on the FFN (and expert) projections")
    double_wide: bool = Field(
        False, description="the dense FFN of the layers without keys and values of their own "
                           "(attention.kv_shared_layers) is 2·d_ff wide (Gemma 4's "
                           "use_double_wide_mlp)")

    @property
    def gated(self) -> bool:
        return GATED[self.activation]

    @property
    def activation_params(self) -> int:
        return ACTIVATION_PARAMS.get(self.activation, 0)


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
    output_bias: bool = Field(
        False, description="one bias of width d on the layer's combined output, not per "
                           "expert (JetMoE's JetMoeMoE.bias)")
    output_norm: bool = Field(
        False, description="a norm (the model's kind) over the layer's combined output, routed "
                           "and shared experts summed, on the MoE layers only (A.X-K1's "
                           "post_mlp_layernorm)")
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
