"""Command R (Cohere): cohere (Command R, R+) and cohere2 (Command R7B, Command A; the
multimodal cohere2_vision config is read through it: calc.hf.multimodal).

Logit scales are neither parameters nor matrix products, so they change no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import (
    HFConfig,
    decoder,
    decoder_defaults,
    heads,
    layernorm_decoder,
    no_null_head_dim,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import kinds_or, merge, per_layer
from calc.hf.writing import gated, llama_like, rope_decoder, window_field
from calc.spec import ModelSpec


# ---- cohere -----------------------------------------------------------------------------------
def _read_cohere(c: HFConfig) -> dict[str, Any]:
    # modeling_cohere.py: LayerNorms without β (CohereLayerNorm), attention and a gated MLP in
    # parallel behind one input_layernorm, attention_bias on q, k, v, o; use_qk_norm: a
    # LayerNorm without β whose γ has one row per head, (heads, head_dim) for queries and
    # (kv_heads, head_dim) for keys: the parameters of a norm over each whole projection.
    no_null_head_dim(c)
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=True), c.flag("attention_bias"),
                             position={"kind": "rope"}, parallel_block=True, parallel_norms=1,
                             norm={"kind": "layernorm", "bias": False, "placement": "pre"})
    spec["ffn"]["bias"] = False
    if c.flag("use_qk_norm"):
        spec["attention"]["qk_norm"] = "projection"
    return spec


def _write_cohere(spec: ModelSpec) -> dict[str, Any]:
    return {**rope_decoder(spec, "cohere", gated(spec, "cohere")),
            "attention_bias": spec.attention.qkv_bias,
            "use_qk_norm": spec.attention.qk_norm == "projection"}


COHERE = ModelType(
    "cohere", _read_cohere, write=_write_cohere, traits=Traits(norm="layernorm"),
    getattr_fields=("head_dim",),
    defaults=decoder_defaults(256000, 8192, 22528, 40, 64, None, "silu", 8192, True,
                              attention_bias=False, use_qk_norm=False))


# ---- cohere2 ----------------------------------------------------------------------------------
def _read_cohere2(c: HFConfig) -> dict[str, Any]:
    # modeling_cohere2.py: one LayerNorm (weight, no bias) feeds attention and MLP in parallel;
    # the sliding layers have RoPE, the full ones none; configuration_cohere2.py: layer_types,
    # else every sliding_window_pattern-th layer (default 4) full; head_dim is
    # hidden_size / heads whatever the file says.
    pattern = c.size("sliding_window_pattern") if "sliding_window_pattern" in c.values else 4
    kinds = kinds_or(c, lambda i: "local" if (i + 1) % pattern else "global")
    kinds = ["nope" if k == "global" else k for k in kinds]
    h = heads(c, head_dim_key=None)
    bias = c.flag("attention_bias")
    spec = decoder(c, h, attention={"qkv_bias": bias, "out_bias": bias},
                   norm={"kind": "layernorm", "bias": False, "placement": "pre"},
                   parallel_block=True, parallel_norms=1)
    return merge(spec, per_layer(c, attention=kinds))


def _write_cohere2(spec: ModelSpec) -> dict[str, Any]:
    config = {**llama_like(spec, "cohere2"), "attention_bias": spec.attention.qkv_bias,
              **window_field(spec)}
    config["layer_types"] = ["sliding_attention" if kind == "local" else "full_attention"
                             for kind in spec.attention_kinds]
    config.pop("head_dim")  # cohere2's heads are hidden_size / heads wide, whatever is given
    return config


COHERE2 = ModelType(
    "cohere2", _read_cohere2, write=_write_cohere2, traits=Traits(norm="layernorm"),
    defaults={
        "hidden_act": "silu", "num_key_value_heads": None, "vocab_size": 256000,
        "hidden_size": 8192, "intermediate_size": 22528, "num_hidden_layers": 40,
        "num_attention_heads": 64, "max_position_embeddings": 8192,
        "tie_word_embeddings": True, "attention_bias": False, "sliding_window": 4096,
        "layer_types": None,
    })
