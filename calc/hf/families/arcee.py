"""Arcee (Arcee AI, AFM): arcee."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder_defaults, divides, heads, layernorm_decoder
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import base, divisible, plain
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_arcee.py: LlamaAttention (attention_bias on q, k, v, o) and a plain MLP
    # up_proj → act → down_proj with mlp_bias; validate_architecture as Llama's.
    divides(c)
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), c.flag("attention_bias"),
                             norm={"kind": "rmsnorm", "placement": "pre"},
                             position={"kind": "rope"})
    spec["ffn"]["bias"] = c.flag("mlp_bias")
    return spec


def _write(spec: ModelSpec) -> dict[str, Any]:
    divisible(spec, "arcee")
    return {**base(spec, "arcee"), "num_key_value_heads": spec.n_kv_heads,
            "head_dim": spec.head_dim_qk, "intermediate_size": spec.ffn.d_ff,
            "hidden_act": plain(spec, "arcee"), "max_position_embeddings": spec.context_length,
            "attention_bias": spec.attention.qkv_bias, "mlp_bias": spec.ffn.bias}


ARCEE = ModelType(
    "arcee", _read, write=_write, traits=Traits(gated=False),
    defaults=decoder_defaults(32000, 2560, 18432, 32, 32, None, "relu2", 4096, False,
                              attention_bias=False, mlp_bias=False, head_dim=None))
