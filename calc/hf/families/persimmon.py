"""Persimmon (Adept): persimmon.

Partial rotary embeddings (partial_rotary_factor) change no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, divides, heads, layernorm_decoder
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import plain, rope_decoder, same_width
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_persimmon.py: one fused query_key_value (3 × hidden) and dense, both with bias;
    # a plain MLP with biases; qk_layernorm: one LayerNorm (γ, β) over head_dim for all
    # query heads and one for all key heads.
    divides(c)
    spec = layernorm_decoder(c, heads(c, None, head_dim_key=None),
                             c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), True,
                             position={"kind": "rope"})
    if c.flag("qk_layernorm"):
        spec["attention"]["qk_norm"] = "head"
    return spec


def _write(spec: ModelSpec) -> dict[str, Any]:
    same_width(spec, "persimmon")
    config = rope_decoder(spec, "persimmon", plain(spec, "persimmon"))
    del config["head_dim"], config["num_key_value_heads"]
    return {**config, "qk_layernorm": spec.attention.qk_norm == "head"}


PERSIMMON = ModelType(
    "persimmon", _read, write=_write, traits=Traits(norm="layernorm", gated=False),
    defaults={
        "vocab_size": 262144, "hidden_size": 4096, "intermediate_size": 16384,
        "num_hidden_layers": 36, "num_attention_heads": 64, "hidden_act": "relu2",
        "max_position_embeddings": 16384, "tie_word_embeddings": False, "qk_layernorm": True,
    })
