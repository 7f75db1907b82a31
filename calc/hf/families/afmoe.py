"""AFMoE (Arcee): afmoe (Trinity), a mixture of experts with gated attention and sandwich norms."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, layer_kinds, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import merge, per_layer
from calc.hf.writing import experts, full_or_sliding, llama_like
from calc.spec import ModelSpec


def _read_afmoe(c: HFConfig) -> dict[str, Any]:
    # modeling_afmoe.py: q_norm/k_norm per head, attention_bias on q, k, v, o, a sigmoid
    # output gate gate_proj d → heads · head_dim without bias; a norm before and after each
    # sublayer; layer_types, else (configuration_afmoe.py) every global_attn_every_n_layers-th
    # layer full and the others sliding. The first num_dense_layers FFNs an MLP of
    # intermediate_size, the others the MoE: a router without bias, num_experts experts of
    # moe_intermediate_size, num_shared_experts shared ones as one MLP of num_shared ×
    # moe_intermediate_size, and expert_bias, a parameter (requires_grad False) of one value
    # per expert: calc's router bias.
    if c.flag("attention_bias"):
        c.fail("attention_bias=true biases q, k, v and o but not AFMoE's output gate; calc's "
               "output gate carries the queries' bias")
    layers = c.size("num_hidden_layers")
    every = c.size("global_attn_every_n_layers")
    kinds = layer_kinds(c, ["local" if (i + 1) % every else "global" for i in range(layers)])
    first = c.size("num_dense_layers", minimum=0)
    n_experts = c.size("num_experts")
    moe = first < layers and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts"),
        "n_shared_experts": c.size("num_shared_experts", minimum=0), "router_bias": True,
        "first_dense_layers": first}
    spec = decoder(c, heads(c), moe=moe or None,
                   attention={"qk_norm": "head", "output_gate": True},
                   norm={"kind": "rmsnorm", "placement": "sandwich"})
    return merge(spec, per_layer(c, attention=kinds))


def _write_afmoe(spec: ModelSpec) -> dict[str, Any]:
    # Gated attention with sandwich norms, sliding layers, dense first layers and experts.
    moe = experts(spec, "afmoe")
    return {**llama_like(spec, "afmoe"), **full_or_sliding(spec, "afmoe"),
            "moe_intermediate_size": moe.d_expert, "num_dense_layers": moe.first_dense_layers,
            "num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "num_shared_experts": moe.n_shared_experts}


AFMOE = ModelType(
    "afmoe", _read_afmoe, write=_write_afmoe, traits=Traits(moe=True),
    defaults={
        "vocab_size": 200192, "hidden_size": 2048, "intermediate_size": 6144,
        "moe_intermediate_size": 1408, "num_hidden_layers": 32, "num_dense_layers": 1,
        "num_attention_heads": 16, "num_key_value_heads": None, "head_dim": 128,
        "hidden_act": "silu", "max_position_embeddings": 16384, "tie_word_embeddings": False,
        "num_experts": 64, "num_experts_per_tok": 6, "num_shared_experts": 2,
        "global_attn_every_n_layers": 4, "sliding_window": 1024, "layer_types": None,
        "attention_bias": False,
    })
