"""BitNet (Microsoft): bitnet."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import llama_like
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_bitnet.py: Llama's layout plus attn_sub_norm (hidden_size, before o_proj) and
    # ffn_sub_norm (intermediate_size, before down_proj); hidden_act relu2 gates the MLP;
    # attention_bias on q, k, v, o. quantization_config (ternary BitLinear) changes no count.
    # attn_sub_norm spans hidden_size, so the heads must tile it.
    bias = c.flag("attention_bias")
    h = heads(c)
    if h["head_dim"] is not None and h["head_dim"] * h["n_heads"] != c.size("hidden_size"):
        c.fail(f"head_dim={h['head_dim']}: attn_sub_norm spans hidden_size={c['hidden_size']}, "
               f"not num_attention_heads × head_dim")
    return decoder(c, h, attention={"qkv_bias": bias, "out_bias": bias},
                   norm={"kind": "rmsnorm", "placement": "pre", "sub_norms": True})


def _write(spec: ModelSpec) -> dict[str, Any]:
    config = {**llama_like(spec, "bitnet"), "attention_bias": spec.attention.qkv_bias}
    config.pop("head_dim")  # attn_sub_norm spans hidden_size: heads × head_dim must be it
    return config


BITNET = ModelType(
    "bitnet", _read, write=_write, traits=Traits(), getattr_fields=("head_dim",),
    defaults={
        "vocab_size": 128256, "hidden_size": 2560, "intermediate_size": 6912,
        "num_hidden_layers": 30, "num_attention_heads": 20, "num_key_value_heads": 5,
        "hidden_act": "relu2", "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "attention_bias": False,
    })
