"""LFM2 (Liquid AI): lfm2, short convolutions and attention layers (the multimodal lfm2_vl
config is read through it: calc.hf.multimodal).
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import kinds_of, merge, per_layer
from calc.hf.writing import layer_types, llama_like, need
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # configuration_lfm2.py: layer_types, else full attention at full_attn_idxs (default all)
    # and short convolutions elsewhere; block_ff_dim and tie_embedding are the older names of
    # intermediate_size and tie_word_embeddings. modeling_lfm2.py: attention without biases
    # and with per-head q/k RMSNorms; the MLP's width is 2/3 of intermediate_size, times
    # block_ffn_dim_multiplier and rounded up to a multiple of block_multiple_of, when
    # block_auto_adjust_ff_dim; operator and FFN RMSNorms; embedding_norm is the final norm.
    layers = c.size("num_hidden_layers")
    if c.given("layer_types"):
        mixers, kinds = kinds_of(c)
        if set(kinds) - {"global", ""}:
            c.fail(f"layer_types={c['layer_types']!r}: lfm2 builds conv and full_attention")
    else:
        full = c["full_attn_idxs"]
        if full is not None and (not isinstance(full, list)
                                 or not all(isinstance(i, int) for i in full)):
            c.fail(f"full_attn_idxs={full!r} must list layer indices")
        full = list(range(layers)) if full is None else full
        mixers = ["attention" if i in full else "conv" for i in range(layers)]
        kinds = ["global" if m == "attention" else "" for m in mixers]
    # Lfm2Config pops the old names over the new ones
    width = c.size("block_ff_dim" if "block_ff_dim" in c.values else "intermediate_size")
    if c.flag("block_auto_adjust_ff_dim"):
        width = int(2 * width / 3)
        multiplier = c["block_ffn_dim_multiplier"]  # Lfm2Config types it float | int
        if isinstance(multiplier, bool) or not isinstance(multiplier, int | float):
            c.fail(f"block_ffn_dim_multiplier={multiplier!r} must be a number")
        step = c.size("block_multiple_of")
        width = step * ((int(multiplier * width) + step - 1) // step)
        if width < 1:
            c.fail(f"the MLP width block_auto_adjust_ff_dim gives is {width}; it must be >= 1")
    tie = c.flag("tie_embedding" if "tie_embedding" in c.values else "tie_word_embeddings")
    spec = decoder(c, heads(c), act_key=None,  # Lfm2MLP: F.silu
                   attention={"qk_norm": "head"},
                   short_conv={"d_conv": c.size("conv_L_cache"), "bias": c.flag("conv_bias")}
                   if "conv" in mixers else None)
    spec["ffn"]["d_ff"] = width
    spec["tie_embeddings"] = tie
    return merge(spec, per_layer(c, mixers=mixers, attention=kinds))


def _write(spec: ModelSpec) -> dict[str, Any]:
    ffn, conv = spec.ffn, spec.short_conv
    need(ffn is not None and ffn.activation == "swiglu",
         f"ffn.activation={ffn.activation if ffn else None} (lfm2's MLP is SwiGLU)")
    config = {**llama_like(spec, "lfm2"), "block_auto_adjust_ff_dim": False,
              "layer_types": layer_types(spec, "lfm2", "full_attention", "conv")}
    config.pop("hidden_act")  # not read: Lfm2MLP applies silu
    if conv is not None:
        config.update({"conv_L_cache": conv.d_conv, "conv_bias": conv.bias})
    return config


LFM2 = ModelType(
    "lfm2", _read, write=_write, traits=Traits(), getattr_fields=("head_dim",),
    defaults={
        "vocab_size": 65536, "hidden_size": 2560, "intermediate_size": 12288,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 128000, "tie_word_embeddings": True, "conv_bias": False,
        "conv_L_cache": 3, "block_multiple_of": 256, "block_ffn_dim_multiplier": 1.0,
        "block_auto_adjust_ff_dim": True, "full_attn_idxs": None, "layer_types": None,
    })
