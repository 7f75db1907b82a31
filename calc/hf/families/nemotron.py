"""Nemotron (NVIDIA): nemotron (Nemotron-4, Minitron).

Partial rotary embeddings (partial_rotary_factor) change no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder_defaults, heads, layernorm_decoder
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import plain, rope_decoder
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_nemotron.py: LayerNorm1P (γ stored as γ − 1, and β), attention_bias on q, k,
    # v, o, a plain MLP up_proj → act → down_proj with mlp_bias; the attention divides by
    # num_key_value_heads, so the file must give it.
    if not c.given("num_key_value_heads"):
        c.fail("num_key_value_heads=None: transformers' Nemotron attention divides by it and "
               "its config leaves it None")
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), c.flag("attention_bias"),
                             position={"kind": "rope"})
    spec["ffn"]["bias"] = c.flag("mlp_bias")
    return spec


def _write(spec: ModelSpec) -> dict[str, Any]:
    # As StarCoder2 without windows, with separate attention and MLP bias switches.
    return {**rope_decoder(spec, "nemotron", plain(spec, "nemotron")),
            "attention_bias": spec.attention.qkv_bias, "mlp_bias": spec.ffn.bias}


NEMOTRON = ModelType(
    "nemotron", _read, write=_write, traits=Traits(norm="layernorm", gated=False),
    defaults=decoder_defaults(256000, 6144, 24576, 32, 48, None, "relu2", 4096, False,
                              attention_bias=False, mlp_bias=False, head_dim=None))
