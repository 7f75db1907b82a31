"""StableLM (Stability AI): stablelm.

Partial rotary embeddings (partial_rotary_factor) change no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder_defaults, divides, heads, layernorm_decoder
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import gated, rope_decoder, same_width
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_stablelm.py: use_qkv_bias on q, k, v (o_proj has none), a gated MLP without
    # bias, LayerNorms with β; use_parallel_residual shares input_layernorm between attention
    # and MLP. qk_layernorm adds one LayerNorm without β per head (StableLmLayerNormPerHead)
    # while the block's norms have β: calc's norms share one bias switch.
    divides(c)
    if c.flag("qk_layernorm"):
        c.fail("qk_layernorm=true adds per-head LayerNorms without β beside the block's "
               "LayerNorms with β; calc's spec has one norm bias for both")
    spec = layernorm_decoder(c, heads(c, head_dim_key=None), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=True), False,
                             position={"kind": "rope"})
    spec["attention"]["qkv_bias"] = c.flag("use_qkv_bias")
    if c.flag("use_parallel_residual"):
        spec.update(parallel_block=True, parallel_norms=1)
    return spec


def _write(spec: ModelSpec) -> dict[str, Any]:
    # A gated MLP behind LayerNorms with β, in sequence or in parallel behind one norm.
    same_width(spec, "stablelm")
    config = rope_decoder(spec, "stablelm", gated(spec, "stablelm"))
    del config["head_dim"]
    return {**config, "use_qkv_bias": spec.attention.qkv_bias,
            "use_parallel_residual": spec.parallel_block, "qk_layernorm": False}


STABLELM = ModelType(
    "stablelm", _read, write=_write, traits=Traits(norm="layernorm"),
    defaults=decoder_defaults(50304, 2560, 6912, 32, 32, 32, "silu", 4096, False,
                              use_qkv_bias=False, qk_layernorm=False,
                              use_parallel_residual=False))
