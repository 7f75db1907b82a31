"""LFM2 (Liquid AI): lfm2, short convolutions and attention layers (the multimodal lfm2_vl
config is read through it: calc.hf.multimodal), lfm2_moe, the same layers with experts, and
lfm3, LFM2's layers with sliding-window attention, a gate of one value per attention head and
sandwich norms.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, no_null_head_dim, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import LAYER_TYPES, kinds_of, merge, per_layer
from calc.hf.writing import layer_types, llama_like, need, window_field
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


# ---- lfm2_moe ---------------------------------------------------------------------------------
def _read_lfm2_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_lfm2_moe.py: LFM2's attention (per-head q/k RMSNorms, no biases) and short
    # convolutions where layer_types says (Lfm2MoeConfig gives no default: the model indexes
    # it); the first num_dense_layers FFNs an MLP of intermediate_size (SiLU), the others the
    # MoE: a router without bias (expert_bias is a buffer) and num_experts experts of
    # moe_intermediate_size. Lfm2MoeConfig pops tie_embedding, the older name, over
    # tie_word_embeddings.
    if not c.given("layer_types"):
        c.fail("layer_types=None: transformers' Lfm2Moe reads layer_types[i] for every layer "
               "and fails without it")
    mixers, kinds = kinds_of(c)
    if set(kinds) - {"global", ""}:
        c.fail(f"layer_types={c['layer_types']!r}: lfm2_moe builds conv and full_attention")
    first = c.size("num_dense_layers", minimum=0)
    n_experts = c.size("num_experts")
    moe = first < c.size("num_hidden_layers") and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts"),
        "first_dense_layers": first}
    spec = decoder(c, heads(c), act_key=None, attention={"qk_norm": "head"}, moe=moe or None,
                   short_conv={"d_conv": c.size("conv_L_cache"), "bias": c.flag("conv_bias")}
                   if "conv" in mixers else None)
    spec["tie_embeddings"] = c.flag("tie_embedding" if "tie_embedding" in c.values
                                    else "tie_word_embeddings")
    return merge(spec, per_layer(c, mixers=mixers, attention=kinds))


# No writer: no writer holds short convolutions beside experts (calc.hf.export says which).
LFM2_MOE = ModelType(
    "lfm2_moe", _read_lfm2_moe, getattr_fields=("head_dim",),
    defaults={
        "vocab_size": 65536, "hidden_size": 2048, "intermediate_size": 7168,
        "moe_intermediate_size": 1792, "num_hidden_layers": 32, "tie_word_embeddings": True,
        "max_position_embeddings": 128000, "num_attention_heads": 32, "num_key_value_heads": 8,
        "conv_bias": False, "conv_L_cache": 3, "num_dense_layers": 2, "num_experts_per_tok": 4,
        "num_experts": 32, "layer_types": None,
    })


# ---- lfm3 -------------------------------------------------------------------------------------
def _lfm3_layer(i: int) -> str:
    """configuration_lfm3.py without layer_types: full attention at layers 2, 6, 10, ...,
    sliding attention at 4, 8, 12, ..., short convolutions elsewhere."""
    return ("full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0
            else "conv")


def _read_lfm3(c: HFConfig) -> dict[str, Any]:
    # modeling_lfm3.py: Lfm3Attention is LFM2's (per-head q/k RMSNorms, attention_bias on q, k,
    # v and o) with a window on the sliding_attention layers and, when use_attention_gate,
    # g_proj Linear(d, heads) without bias: each head's output times sigmoid(g_proj(x)),
    # broadcast over head_dim, before o_proj. Lfm3ShortConv is LFM2's (conv_bias on the conv,
    # in_proj and out_proj); Lfm3MLP w2(silu(w1 x) · w3 x) of intermediate_size (no 2/3 rule).
    # Each layer: operator_norm and ffn_norm before its sublayers and, when use_sandwich_norm,
    # post_operator_norm and post_ffn_norm on their outputs; embedding_norm is the final norm.
    # head_dim is read through getattr, and a null reaches nn.Linear. The rotary parameters
    # per layer type (partial_rotary_factor, proportional RoPE) change no count.
    no_null_head_dim(c)
    if c.given("layer_types"):
        mixers, kinds = kinds_of(c)
    else:
        types = [LAYER_TYPES[_lfm3_layer(i)] for i in range(c.size("num_hidden_layers"))]
        mixers, kinds = [m for m, _ in types], [k for _, k in types]
    if set(kinds) - {"global", "local", ""}:
        c.fail(f"layer_types={c['layer_types']!r}: lfm3 builds conv, full_attention and "
               f"sliding_attention")
    bias = c.flag("attention_bias")
    gate = {"output_gate": True, "output_gate_per": "head"} if c.flag("use_attention_gate") \
        else {}
    spec = decoder(c, heads(c), act_key=None,  # Lfm3MLP: F.silu
                   attention={"qk_norm": "head", "qkv_bias": bias, "out_bias": bias, **gate},
                   norm={"kind": "rmsnorm", "placement":
                         "sandwich" if c.flag("use_sandwich_norm") else "pre"},
                   short_conv={"d_conv": c.size("conv_L_cache"), "bias": c.flag("conv_bias")}
                   if "conv" in mixers else None)
    return merge(spec, per_layer(c, mixers=mixers, attention=kinds))


def _write_lfm3(spec: ModelSpec) -> dict[str, Any]:
    ffn, conv, att = spec.ffn, spec.short_conv, spec.attention
    need(ffn is not None and ffn.activation == "swiglu",
         f"ffn.activation={ffn.activation if ffn else None} (lfm3's MLP is SwiGLU)")
    need(att.qkv_bias == att.out_bias, "attention.qkv_bias != attention.out_bias (lfm3's "
                                       "attention_bias sets both)")
    need(not att.output_gate or att.output_gate_per == "head",
         "attention.output_gate_per='channel' (lfm3's gate is one value per head)")
    config = {**llama_like(spec, "lfm3"), **window_field(spec),
              "layer_types": layer_types(spec, "lfm3", "full_attention", "sliding_attention",
                                         "conv"),
              "attention_bias": att.qkv_bias, "use_attention_gate": att.output_gate,
              "use_sandwich_norm": spec.norm.placement == "sandwich"}
    config.pop("hidden_act")  # not read: Lfm3MLP applies silu
    if conv is not None:
        config.update({"conv_L_cache": conv.d_conv, "conv_bias": conv.bias})
    return config


LFM3 = ModelType(
    "lfm3", _read_lfm3, write=_write_lfm3, traits=Traits(),
    defaults={
        "vocab_size": 128000, "hidden_size": 2048, "intermediate_size": 7680,
        "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 4,
        "max_position_embeddings": 128000, "tie_word_embeddings": True, "conv_bias": False,
        "conv_L_cache": 7, "layer_types": None, "head_dim": 128, "sliding_window": 256,
        "use_sandwich_norm": True, "use_attention_gate": True, "attention_bias": False,
    })
