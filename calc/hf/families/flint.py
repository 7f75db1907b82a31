"""Flint: flint (attention sinks, sliding layers, and MoE layers with a shared MLP)."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, layer_kinds, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import ffn_kinds, merge, per_layer
from calc.hf.writing import layer_types, llama_like, need, one_attention_bias, window_field
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_flint.py: attention_bias on q, k, v, o, RMSNorm over each head's q and k, one
    # sink logit per head; configuration_flint.py: layer_types, else full on the first two
    # layers, every fourth from layer 1 and the last, sliding elsewhere. A layer is the MoE
    # unless in mlp_only_layers (default [0, 1]), and only every decoder_sparse_step-th one
    # when num_experts > 0 (Qwen3-MoE's rule): a router Linear(d, E) without bias, experts of
    # moe_intermediate_size and one shared MLP of shared_expert_intermediate_size added
    # ungated; the other layers a dense MLP of intermediate_size.
    layers = c.size("num_hidden_layers")
    kinds = layer_kinds(c, ["global" if i < 2 or i % 4 == 1 or i == layers - 1 else "local"
                            for i in range(layers)])
    only = [0, 1] if c["mlp_only_layers"] is None else c["mlp_only_layers"]
    if not isinstance(only, list):
        c.fail(f"mlp_only_layers={only!r} must be a list of layer indices")
    step, n_experts = c.size("decoder_sparse_step"), c.size("num_experts", minimum=0)
    sparse = [i not in only and n_experts > 0 and (i + 1) % step == 0 for i in range(layers)]
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias,
                                           "qk_norm": "head", "sinks": True},
                   moe={"n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts"),
                        "n_shared_experts": 1,
                        "d_shared": c.size("shared_expert_intermediate_size")}
                   if any(sparse) else None)
    return merge(spec, per_layer(c, attention=kinds, ffn=ffn_kinds(sparse)))


def _write(spec: ModelSpec) -> dict[str, Any]:
    # Per-head q/k norms with weights, a sink logit per head, full and sliding layers, and MoE
    # layers with one ungated shared MLP wherever mlp_only_layers leaves them.
    att, moe = spec.attention, spec.moe
    need(att.sinks, "attention.sinks=False (flint has a sink logit per head)")
    need(att.qk_norm == "head" and att.qk_norm_weights, f"attention.qk_norm={att.qk_norm!r} "
         f"(flint normalises each head's queries and keys with weights)")
    bias = one_attention_bias(spec, "flint")
    config = {**llama_like(spec, "flint"), **window_field(spec), "attention_bias": bias,
              "layer_types": layer_types(spec, "flint", "full_attention", "sliding_attention"),
              "decoder_sparse_step": 1,
              "mlp_only_layers": [i for i, sparse in enumerate(spec.moe_layers) if not sparse]}
    if moe is None:
        return {**config, "num_experts": 0}
    need(moe.n_shared_experts == 1, f"moe.n_shared_experts={moe.n_shared_experts} (flint adds "
                                    f"one shared MLP)")
    return {**config, "num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert,
            "shared_expert_intermediate_size": moe.shared_width}


FLINT = ModelType(
    "flint", _read, write=_write, traits=Traits(moe=True),
    defaults={
        "vocab_size": 150144, "hidden_size": 2048, "intermediate_size": 6144,
        "num_hidden_layers": 49, "num_attention_heads": 32, "num_key_value_heads": 4,
        "hidden_act": "silu", "max_position_embeddings": 262144, "tie_word_embeddings": False,
        "sliding_window": 513, "decoder_sparse_step": 1, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 1024, "num_experts_per_tok": 6, "num_experts": 256,
        "mlp_only_layers": None, "layer_types": None, "head_dim": 128, "attention_bias": False,
    })
