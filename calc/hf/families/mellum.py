"""Mellum (JetBrains): mellum, a mixture of experts with sliding and full attention layers."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, layer_kinds, top_k
from calc.hf.model_type import ModelType
from calc.hf.per_layer import ffn_kinds, merge, per_layer, sparse_layers


def _read_mellum(c: HFConfig) -> dict[str, Any]:
    # modeling_mellum.py: attention_bias on q, k, v, o, q_norm/k_norm per head, sliding_window
    # on the layers layer_types calls sliding (configuration_mellum.py: default all full); the
    # MoE where mlp_layer_types says "sparse" (default every layer): a router without bias and
    # num_experts experts of moe_intermediate_size; the dense MLP of intermediate_size. The
    # num_mtp_layers MTP layer of a release is not built by transformers (its weights are
    # ignored on load) and not counted.
    layers = c.size("num_hidden_layers")
    kinds = layer_kinds(c, ["global"] * layers)
    sparse = sparse_layers(c, [True] * layers)
    n_experts = c.size("num_experts")
    moe = any(sparse) and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts")}
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), moe=moe or None,
                   attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head"})
    return merge(spec, per_layer(c, attention=kinds, ffn=ffn_kinds(sparse)))


# No writer: exaone_moe's holds its specs without attention biases.
MELLUM = ModelType(
    "mellum", _read_mellum,
    aliases={"num_local_experts": "num_experts", "num_nextn_predict_layers": "num_mtp_layers"},
    defaults={
        "vocab_size": 98304, "hidden_size": 2304, "intermediate_size": 7168,
        "num_hidden_layers": 28, "num_attention_heads": 32, "num_key_value_heads": 4,
        "hidden_act": "silu", "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "attention_bias": False, "sliding_window": 1024, "moe_intermediate_size": 896,
        "num_experts_per_tok": 8, "num_experts": 64, "head_dim": 128, "layer_types": None,
        "mlp_layer_types": None,
    })
