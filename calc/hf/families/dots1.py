"""dots.llm1 (rednote hi lab): dots1."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, layer_kinds, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import merge, per_layer
from calc.hf.writing import experts, full_or_sliding, llama_like, one_attention_bias, one_group
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_dots1.py: attention_bias on q, k, v and o, per-head q/k RMSNorms; layer_types,
    # else the sliding window from layer max_window_layers on (configuration_dots1.py); from
    # first_k_dense_replace on, the MoE: a router without bias (e_score_correction_bias is a
    # buffer), n_shared_experts shared experts as one MLP of n_shared × moe_intermediate_size;
    # before it, the dense MLP of intermediate_size.
    layers, first = c.size("num_hidden_layers"), c.size("first_k_dense_replace", minimum=0)
    start, window = c.size("max_window_layers", minimum=0), c["sliding_window"]
    kinds = layer_kinds(c, ["local" if window is not None and i >= start else "global"
                            for i in range(layers)])
    n_experts = c.size("n_routed_experts")
    moe = first < layers and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "n_routed_experts"),
        "n_shared_experts": c.size("n_shared_experts", minimum=0), "first_dense_layers": first}
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), moe=moe or None,
                   attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head"})
    return merge(spec, per_layer(c, attention=kinds))


def _write(spec: ModelSpec) -> dict[str, Any]:
    moe = experts(spec, "dots1")
    bias = one_attention_bias(spec, "dots1")
    return {**llama_like(spec, "dots1"), "attention_bias": bias,
            **full_or_sliding(spec, "dots1"), "n_routed_experts": moe.n_experts,
            "num_experts_per_tok": moe.top_k, "moe_intermediate_size": moe.d_expert,
            "n_shared_experts": moe.n_shared_experts,
            "first_k_dense_replace": moe.first_dense_layers, **one_group(spec, "dots1")}


DOTS1 = ModelType(
    "dots1", _read, write=_write, traits=Traits(moe=True), getattr_fields=("head_dim",),
    aliases={"num_local_experts": "n_routed_experts"},
    defaults={
        "vocab_size": 152064, "hidden_size": 4608, "intermediate_size": 10944,
        "moe_intermediate_size": 1408, "num_hidden_layers": 62, "num_attention_heads": 32,
        "num_key_value_heads": 32, "n_shared_experts": None, "n_routed_experts": None,
        "num_experts_per_tok": None, "first_k_dense_replace": 0, "hidden_act": "silu",
        "max_position_embeddings": 2048, "tie_word_embeddings": False, "attention_bias": False,
        "sliding_window": 4096, "max_window_layers": 62, "layer_types": None,
    })
