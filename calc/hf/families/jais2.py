"""Jais 2 (Inception): jais2, a rotary decoder with LayerNorms and a plain MLP."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, biased_decoder, decoder_defaults
from calc.hf.model_type import ModelType


def _read_jais2(c: HFConfig) -> dict[str, Any]:
    # modeling_jais2.py: nn.LayerNorm (with β) before each sublayer and at the end;
    # attention_bias on q, k, v, o; a plain MLP up_proj → hidden_act → down_proj with
    # mlp_bias; RoPE. head_dim None is hidden_size / heads (configuration_jais2.py).
    bias = c.flag("attention_bias")
    spec = biased_decoder(c, bias, bias, c.flag("mlp_bias"))
    spec["ffn"]["activation"] = c.activation("hidden_act", gated=False)
    spec["norm"] = {"kind": "layernorm", "placement": "pre"}
    return spec


# No writer: stablelm's holds its specs (a rotary LayerNorm decoder).
JAIS2 = ModelType(
    "jais2", _read_jais2,
    defaults=decoder_defaults(150272, 3328, 26624, 32, 26, None, "relu2", 8192, False,
                              attention_bias=True, mlp_bias=True, head_dim=None))
