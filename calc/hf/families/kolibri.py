"""Kolibri (Aleph Alpha): kolibri1, a mixture of experts with sandwich norms and sliding layers."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, layer_kinds, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import merge, per_layer
from calc.hf.writing import experts, full_or_sliding, llama_like, need
from calc.spec import ModelSpec


def _read_kolibri1(c: HFConfig) -> dict[str, Any]:
    # modeling_kolibri1.py: no biases, q_norm/k_norm per head, a norm before and after each
    # sublayer (post_self_attn_layernorm, post_mlp_layernorm); layer_types, else
    # (configuration_kolibri1.py) every fifth layer full and the others sliding; every FFN the
    # MoE: a router without bias, num_experts experts of moe_intermediate_size and one shared
    # MLP of shared_expert_intermediate_size added without a gate (no dense MLP: the spec's
    # unused d_ff is the experts' width).
    layers = c.size("num_hidden_layers")
    kinds = layer_kinds(c, ["global" if (i + 1) % 5 == 0 else "local" for i in range(layers)])
    n_experts = c.size("num_experts")
    width = c.size("moe_intermediate_size")
    spec = decoder(c, heads(c), d_ff=width, attention={"qk_norm": "head"},
                   norm={"kind": "rmsnorm", "placement": "sandwich"},
                   moe={"n_experts": n_experts, "d_expert": width,
                        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts"),
                        "n_shared_experts": 1,
                        "d_shared": c.size("shared_expert_intermediate_size")})
    return merge(spec, per_layer(c, attention=kinds))


def _write_kolibri1(spec: ModelSpec) -> dict[str, Any]:
    # Sandwich norms with experts and one ungated shared MLP on every layer, full and sliding.
    moe = experts(spec, "kolibri1")
    need(moe.n_shared_experts == 1 and not moe.shared_expert_gate,
         "moe without one ungated shared MLP (kolibri1's)")
    return {**llama_like(spec, "kolibri1"), **full_or_sliding(spec, "kolibri1"),
            "num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert,
            "shared_expert_intermediate_size": moe.shared_width}


KOLIBRI1 = ModelType(
    "kolibri1", _read_kolibri1, write=_write_kolibri1, traits=Traits(moe=True),
    aliases={"num_local_experts": "num_experts"},
    defaults={
        "vocab_size": 128000, "hidden_size": 2560, "num_hidden_layers": 50,
        "num_attention_heads": 48, "num_key_value_heads": 4, "hidden_act": "silu",
        "max_position_embeddings": 262144, "tie_word_embeddings": False, "sliding_window": 513,
        "moe_intermediate_size": 512, "num_experts_per_tok": 6, "num_experts": 384,
        "head_dim": 128, "shared_expert_intermediate_size": 512, "layer_types": None,
    })
