"""The feed-forward network of a layer: dense (plain or gated) or a mixture of experts.

FFN(x) = W_2 φ(W_1 x) (Vaswani et al. 2017 §3.3), or gated, W_down (φ(W_gate x) ⊙ W_up x)
(Shazeer 2020, GLU Variants); a mixture of experts routes each token to k of E such FFNs
(Shazeer et al. 2017; Fedus et al. 2021), with shared experts every token uses (DeepSeek-MoE).
LongCat-Flash (Meituan LongCat Team 2025, arXiv 2509.01322, §2.1 and §2.2) adds zero-computation
experts, identities the router scores beside the FFN experts, and the shortcut-connected MoE
(ScMoE), whose experts read one layer's FFN input and join the residual stream a layer later.
DeepSeek-V4's first MoE layers route by hash (moe.hash_layers): a fixed token-id → experts table
picks each token's experts, the router's scores still weigh them.
Doge's cross-domain MoE (moe.product_keys; Shi et al. 2024, arXiv 2412.11834) routes over
single-neuron experts by product keys (Lample et al. 2019, "Large Memory Layers with Product
Keys", §3.2): two sets of ⌊√E⌋ sub-key scores, the best pairs' sums picking k experts.
"""

from __future__ import annotations

import math
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
    output_scale: bool = Field(
        False, description="one learned scalar multiplies a dense FFN's output (Inkling's "
                           "InklingMLP.global_scale)")
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


class RouterMLPSpec(Frozen):
    """ZAYA1's router (transformers 5.24.0 modeling_zaya.py ZayaRouter, ZayaRouterMLP): the
    input down-projected d → r with bias; on every MoE layer but the first, plus the previous
    layer's r-wide router state times a learned scale of r values (EDA, router_states_scale);
    then a norm over r (the model's kind), fc1 and fc2 r → r with bias and GELU, and out_proj
    r → E + 1 without bias: the experts and one skip class, whose token transformers runs
    through expert 0 at weight 0 (the routes masked to index 0) in its grouped and batched
    paths; balancing_biases, E + 1 values, is a buffer."""

    width: int = Field(ge=1, le=MAX_WIDTH, description="router width r (router_hidden_size)")


class MoESpec(Frozen):
    """Mixture-of-experts FFN (Switch/GShard style) with optional shared experts."""

    n_experts: int = Field(ge=1, le=MAX_EXPERTS, description="routed experts E per MoE layer")
    top_k: int = Field(ge=1, le=MAX_EXPERTS,
                       description="routed experts each token picks (zero experts included)")
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
    branch_norms: bool = Field(
        False, description="the shared experts and the routed experts each normed on their "
                           "own, three norms (the model's kind) on each MoE layer: one before "
                           "the routed experts and one after each branch, before their sum "
                           "(Gemma 4's pre_feedforward_layernorm_2, post_feedforward_layernorm_1 "
                           "and _2)")
    router_scales: bool = Field(
        False, description="learned scales in the router: one per channel of its input "
                           "(width d, after a norm without weights) and one per routed expert "
                           "on the chosen experts' weights, d + E values (Gemma 4's "
                           "Gemma4TextRouter.scale and per_expert_scale)")
    shared_in_router: bool = Field(
        False, description="the router scores the shared experts beside the routed ones: its "
                           "weight has n_experts + n_shared_experts rows and one softmax over "
                           "the top_k routed and the shared scores weighs both (Inkling's "
                           "InklingTopkRouter, shared_expert_sink)")
    router_global_scale: bool = Field(
        False, description="one learned scalar multiplies every routing weight (Inkling's "
                           "InklingTopkRouter.global_scale)")
    n_zero_experts: int = Field(
        0, ge=0, le=MAX_EXPERTS,
        description="zero-computation experts: identities the router scores beside the E FFN "
                    "experts (LongCat-Flash's zero_expert_num); a token routed to one costs no "
                    "FFN work, so a token uses top_k·E/(E + n_zero_experts) FFN experts in "
                    "expectation (routing uniform over the pool)")
    shortcut: bool = Field(
        False, description="shortcut-connected MoE (LongCat-Flash's ScMoE): the experts of an "
                           "MoE layer read that layer's FFN input and their output joins the "
                           "residual stream after the next layer's FFN, so each MoE layer is "
                           "followed by a dense one (transformers' LongcatFlashDecoderLayer: "
                           "two attention blocks and two dense MLPs beside one MoE)")
    hash_layers: tuple[int, ...] = Field(
        (), max_length=MAX_LAYERS,
        description="0-based MoE layers whose top_k experts per token a fixed table of token "
                    "ids picks (DeepSeek-V4's hash_moe layers: tid2eid, vocab_size × top_k, a "
                    "buffer, not a parameter); the router's weight still scores the experts "
                    "and weighs the picked ones, so parameters and FLOPs are the learned "
                    "router's")
    product_keys: bool = Field(
        False, description="Doge's cross-domain MoE (transformers 5.24.0 modeling_doge.py "
                           "DogeCDMoE): each routed expert is one neuron, a row of down_embed "
                           "and one of up_embed (2·d values, no gate, no bias; d_expert 1), "
                           "picked by product keys: the router d → 2·⌊√E⌋ scores two halves of "
                           "sub-keys, the top ⌊√E⌋ of each half are paired and the top_k of "
                           "the ⌊√E⌋² sums chosen (the sums and choices count 0)")
    router_mlp: RouterMLPSpec | None = Field(
        None, description="ZAYA1's router in place of Linear(d, E): d → r with bias, the "
                          "previous layer's router state through a learned scale, a norm, "
                          "two r → r layers with bias and GELU, r → E + 1 (a skip class)")
    first_dense_layers: int = Field(0, ge=0, le=MAX_LAYERS,
                                    description="leading layers with a dense FFN (DeepSeek: 3)")
    every: int = Field(1, ge=1, le=MAX_LAYERS,
                       description="after those, MoE on every k-th layer (layers k-1, 2k-1, ...)")

    @model_validator(mode="after")
    def _top_k(self) -> MoESpec:
        pool = self.n_experts + self.n_zero_experts
        if self.top_k > pool:
            zero = f" + moe.n_zero_experts={self.n_zero_experts}" if self.n_zero_experts else ""
            raise ValueError(f"moe.top_k={self.top_k} must not exceed moe.n_experts="
                             f"{self.n_experts}{zero}")
        if self.n_zero_experts and (self.top_k * self.n_experts) % pool:
            raise ValueError(
                f"moe.n_zero_experts={self.n_zero_experts}: a token's expected FFN experts "
                f"top_k·E/(E + n_zero_experts) = {self.top_k}·{self.n_experts}/{pool} must be "
                f"a whole number (calc counts that expectation; docs/custom-models.md)")
        if self.hash_layers and self.n_zero_experts:
            raise ValueError("moe.hash_layers is not defined with moe.n_zero_experts: the "
                             "table picks FFN experts only (DeepseekV4HashRouter)")
        if list(self.hash_layers) != sorted(set(self.hash_layers)):
            raise ValueError(f"moe.hash_layers={list(self.hash_layers)} must be increasing "
                             f"layer indices, each once")
        if self.product_keys:
            self._check_product_keys()
        if self.router_mlp is not None:
            self._check_router_mlp()
        if self.branch_norms and not self.n_shared_experts:
            raise ValueError("moe.branch_norms=True needs moe.n_shared_experts >= 1 (a norm "
                             "after the shared experts' branch)")
        if self.shared_in_router and (not self.n_shared_experts or self.shared_expert_gate
                                      or self.n_zero_experts):
            raise ValueError("moe.shared_in_router=True needs moe.n_shared_experts >= 1, "
                             "without moe.shared_expert_gate or moe.n_zero_experts (the "
                             "router weighs the shared experts itself)")
        if self.shared_expert_gate and not self.n_shared_experts:
            raise ValueError("moe.shared_expert_gate=True needs moe.n_shared_experts >= 1 "
                             "(it gates the shared experts' output)")
        return self

    def _check_product_keys(self) -> None:
        """A product-key expert is one neuron, and top_k of the ⌊√E⌋² paired sub-keys are
        chosen (DogeCDMoE: indices only below ⌊√E⌋², num_keys = floor(sqrt(num_experts)))."""
        if self.d_expert != 1:
            raise ValueError(f"moe.product_keys: each expert is one neuron, so moe.d_expert "
                             f"must be 1, not {self.d_expert}")
        pairs = self.sub_keys ** 2
        if self.top_k > pairs:
            raise ValueError(f"moe.top_k={self.top_k} exceeds the {pairs} product keys "
                             f"⌊√moe.n_experts⌋² (moe.product_keys)")
        parts = [name for name, on in (
            ("moe.n_zero_experts", self.n_zero_experts), ("moe.router_bias", self.router_bias),
            ("moe.router_scales", self.router_scales), ("moe.hash_layers", self.hash_layers),
            ("moe.shortcut", self.shortcut), ("moe.branch_norms", self.branch_norms),
            ("moe.shared_expert_gate", self.shared_expert_gate),
            ("moe.shared_in_router", self.shared_in_router),
            ("moe.router_global_scale", self.router_global_scale),
            ("moe.router_mlp", self.router_mlp is not None)) if on]
        if parts:
            raise ValueError(f"moe.product_keys is not defined with {', '.join(parts)}")

    @property
    def sub_keys(self) -> int:
        """Sub-keys of each half of a product-key router: ⌊√E⌋ (0 without product keys)."""
        return math.isqrt(self.n_experts) if self.product_keys else 0

    def _check_router_mlp(self) -> None:
        """ZAYA1's router carries its state from each layer to the next: every layer has one
        (ZayaSparseMoeBlock), and it replaces the linear router's variants."""
        parts = [name for name, on in (
            ("moe.first_dense_layers", self.first_dense_layers), ("moe.every", self.every > 1),
            ("moe.n_zero_experts", self.n_zero_experts), ("moe.router_bias", self.router_bias),
            ("moe.router_scales", self.router_scales), ("moe.hash_layers", self.hash_layers),
            ("moe.shortcut", self.shortcut), ("moe.shared_in_router", self.shared_in_router),
            ("moe.router_global_scale", self.router_global_scale)) if on]
        if parts:
            raise ValueError(f"moe.router_mlp is not defined with {', '.join(parts)} (ZAYA1's "
                             f"router is on every layer and carries its state to the next)")

    @property
    def shared_width(self) -> int:
        return self.d_shared if self.d_shared is not None else self.d_expert

    @property
    def experts_per_token(self) -> int:
        """FFN experts a token uses: top_k, or with zero-computation experts the expected
        top_k·E/(E + E_0) under routing uniform over the E + E_0 experts of the pool (calc's
        convention, which the spec's rule keeps whole; LongCat-Flash-Chat: 12·512/768 = 8)."""
        return self.top_k * self.n_experts // (self.n_experts + self.n_zero_experts)

    @property
    def router_width(self) -> int:
        """The router's outputs: the FFN experts and the zero-computation ones it scores, or
        with product keys the 2·⌊√E⌋ sub-keys."""
        if self.product_keys:
            return 2 * self.sub_keys
        return self.n_experts + self.n_zero_experts

    def is_moe_layer(self, index: int) -> bool:
        """Whether layer `index` (0-based) has an MoE FFN rather than a dense one."""
        return index >= self.first_dense_layers and (index + 1) % self.every == 0
