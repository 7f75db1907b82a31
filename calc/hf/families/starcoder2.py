"""StarCoder2 (BigCode): starcoder2."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder_defaults, heads, layernorm_decoder
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import plain, rope_decoder
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_starcoder2.py: use_bias on q, k, v, o, c_fc and c_proj; LayerNorms with β; a
    # plain MLP; every layer uses config.sliding_window (None: global).
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), c.flag("use_bias"),
                             position={"kind": "rope"})
    if c.given("sliding_window"):
        spec["attention"]["sliding_window"] = c.size("sliding_window")
    return spec


def _write(spec: ModelSpec) -> dict[str, Any]:
    # Sequential LayerNorm block, plain MLP, one bias switch, GQA, one window for all layers.
    return {**rope_decoder(spec, "starcoder2", plain(spec, "starcoder2")),
            "use_bias": spec.ffn.bias, "sliding_window": spec.attention.sliding_window}


STARCODER2 = ModelType(
    "starcoder2", _read, write=_write, traits=Traits(norm="layernorm", gated=False),
    getattr_fields=("head_dim",),
    defaults=decoder_defaults(49152, 3072, 12288, 30, 24, 2, "gelu_pytorch_tanh", 4096, True,
                              use_bias=True, sliding_window=None))
