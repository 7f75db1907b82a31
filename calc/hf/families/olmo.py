"""OLMo (Allen Institute for AI): olmo, olmo2, olmo3 and olmoe (OLMoE)."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import (
    HFConfig,
    decoder,
    decoder_defaults,
    heads,
    layernorm_decoder,
    no_null_head_dim,
    top_k,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import kinds_of, kinds_or, merge, per_layer
from calc.hf.writing import (
    experts,
    full_or_sliding,
    gated,
    layer_types,
    llama_like,
    rope_decoder,
)
from calc.spec import ModelSpec

_LLAMA = {"hidden_act": "silu", "num_key_value_heads": None}


# ---- olmo -------------------------------------------------------------------------------------
def _read_olmo(c: HFConfig) -> dict[str, Any]:
    # modeling_olmo.py: OlmoLayerNorm is F.layer_norm without γ or β (Groeneveld et al. 2024,
    # OLMo, §2.1 "non-parametric layer norm") before each sublayer and after the last layer;
    # Llama's attention (attention_bias on q, k, v, o) and SwiGLU-style MLP without bias.
    # clip_qkv clamps the projections' outputs: no parameter, no matrix product.
    no_null_head_dim(c)
    bias = c.flag("attention_bias")
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=True), bias,
                             position={"kind": "rope"},
                             norm={"kind": "layernorm", "weights": False, "bias": False,
                                   "placement": "pre"})
    spec["ffn"]["bias"] = False
    return spec


def _write_olmo(spec: ModelSpec) -> dict[str, Any]:
    # The one rotary type whose LayerNorms have no parameters (the round trip refuses others).
    return {**rope_decoder(spec, "olmo", gated(spec, "olmo")),
            "attention_bias": spec.attention.qkv_bias}


OLMO = ModelType(
    "olmo", _read_olmo, write=_write_olmo, traits=Traits(norm="layernorm"),
    getattr_fields=("head_dim",),
    defaults=decoder_defaults(50304, 4096, 11008, 32, 32, None, "silu", 2048, False,
                              attention_bias=False))


# ---- olmo2 ------------------------------------------------------------------------------------
def _read_olmo2(c: HFConfig) -> dict[str, Any]:
    # modeling_olmo2.py: norms after each sublayer (post_attention_layernorm,
    # post_feedforward_layernorm), and q_norm / k_norm over the whole projections.
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias,
                                           "qk_norm": "projection"},
                   norm={"kind": "rmsnorm", "placement": "reordered"})


def _write_olmo2(spec: ModelSpec) -> dict[str, Any]:
    return {**llama_like(spec, "olmo2"), "attention_bias": spec.attention.qkv_bias}


OLMO2 = ModelType(
    "olmo2", _read_olmo2, write=_write_olmo2, traits=Traits(), getattr_fields=("head_dim",),
    defaults={
        **_LLAMA, "tie_word_embeddings": False, "vocab_size": 50304, "hidden_size": 4096,
        "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
        "max_position_embeddings": 2048, "attention_bias": False, "head_dim": None,
    })


# ---- olmo3 ------------------------------------------------------------------------------------
def _read_olmo3(c: HFConfig) -> dict[str, Any]:
    # modeling_olmo3.py: OLMo 2's norms after each sublayer and q_norm/k_norm over the whole
    # projections; configuration_olmo3.py: every 4th layer full attention, the others sliding.
    kinds = kinds_or(c, lambda i: "local" if (i + 1) % 4 else "global")
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias,
                                           "qk_norm": "projection"},
                   norm={"kind": "rmsnorm", "placement": "reordered"})
    return merge(spec, per_layer(c, attention=kinds))


def _write_olmo3(spec: ModelSpec) -> dict[str, Any]:
    return {**llama_like(spec, "olmo3"), **full_or_sliding(spec, "olmo3"),
            "attention_bias": spec.attention.qkv_bias}


OLMO3 = ModelType(
    "olmo3", _read_olmo3, write=_write_olmo3, traits=Traits(), getattr_fields=("head_dim",),
    defaults={
        **_LLAMA, "vocab_size": 50304, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
        "tie_word_embeddings": False, "attention_bias": False, "sliding_window": 4096,
        "layer_types": None,
    })


# ---- olmoe ------------------------------------------------------------------------------------
def _read_olmoe(c: HFConfig) -> dict[str, Any]:
    # modeling_olmoe.py: q_norm over hidden_size and k_norm over (hidden_size / heads) · KV
    # heads (the whole projections, as OLMo 2), pre-norm; every FFN is the MoE: a router
    # without bias, experts of intermediate_size; attention_bias on q, k, v, o.
    h = heads(c)
    if h["head_dim"] is not None and h["head_dim"] * h["n_heads"] != c.size("hidden_size"):
        c.fail(f"head_dim={h['head_dim']}: OLMoE's q_norm spans hidden_size="
               f"{c['hidden_size']}, not num_attention_heads × head_dim")
    bias = c.flag("attention_bias")
    n_experts = c.size("num_experts")
    return decoder(c, h, attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "projection"},
                   moe={"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts")})


def _write_olmoe(spec: ModelSpec) -> dict[str, Any]:
    moe = experts(spec, "olmoe")
    config = {**llama_like(spec, "olmoe"), "intermediate_size": moe.d_expert,
              "num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
              "attention_bias": spec.attention.qkv_bias}
    config.pop("head_dim")  # not an OLMoE field: its heads are hidden_size / heads wide
    return config


OLMOE = ModelType(
    "olmoe", _read_olmoe, write=_write_olmoe, traits=Traits(moe=True),
    getattr_fields=("head_dim",), aliases={"num_local_experts": "num_experts"},
    defaults={
        "vocab_size": 50304, "hidden_size": 2048, "intermediate_size": 2048,
        "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": None,
        "hidden_act": "silu", "max_position_embeddings": 4096, "tie_word_embeddings": False,
        "attention_bias": False, "num_experts": 64, "num_experts_per_tok": 8,
    })


# ---- flex_olmo --------------------------------------------------------------------------------
def _read_flex_olmo(c: HFConfig) -> dict[str, Any]:
    # modeling_flex_olmo.py: OLMo 2's layers (norms after each sublayer, q_norm/k_norm over the
    # whole projections, attention_bias on q, k, v, o) with OLMoE's MoE on every FFN: a router
    # without bias, num_experts experts of intermediate_size.
    bias = c.flag("attention_bias")
    n_experts = c.size("num_experts")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias,
                                           "qk_norm": "projection"},
                   norm={"kind": "rmsnorm", "placement": "reordered"},
                   moe={"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts")})


def _write_flex_olmo(spec: ModelSpec) -> dict[str, Any]:
    # The one writer of OLMo 2's reordered norms with experts on every layer.
    moe = experts(spec, "flex_olmo")
    return {**llama_like(spec, "flex_olmo"), "intermediate_size": moe.d_expert,
            "num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "attention_bias": spec.attention.qkv_bias}


FLEX_OLMO = ModelType(
    "flex_olmo", _read_flex_olmo, write=_write_flex_olmo, traits=Traits(moe=True),
    getattr_fields=("head_dim",),
    aliases={"num_local_experts": "num_experts"},
    defaults={
        "vocab_size": 100352, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
        "hidden_act": "silu", "max_position_embeddings": 4096, "tie_word_embeddings": False,
        "attention_bias": False, "num_experts_per_tok": 5, "num_experts": 7,
    })


# ---- olmo_hybrid ------------------------------------------------------------------------------
def _read_olmo_hybrid(c: HFConfig) -> dict[str, Any]:
    # configuration_olmo_hybrid.py: layer_types, else every fourth layer (i % 4 == 3) full
    # attention and the rest linear_attention (the last layer full when none is); the linear
    # widths default to num_attention_heads heads, keys 0.75 · hidden_size / heads wide,
    # values twice that. modeling_olmo_hybrid.py: full attention as OLMo 2's (q_norm/k_norm over
    # the projections, attention_bias on q, k, v, o, norms after the sublayers); gated DeltaNet
    # elsewhere (q, k, v, a, b, g and o projections, a conv over q, k, v without bias, the
    # gated norm per value head: Qwen3-Next's weights, split), with norms before the
    # sublayers. Both placements hold one d-wide RMSNorm per sublayer: the counts are the
    # same, and the spec's one placement is OLMo 2's.
    layers = c.size("num_hidden_layers")
    if c.given("layer_types"):
        mixers, kinds = kinds_of(c)
    else:
        full = [i % 4 == 3 for i in range(layers)]
        full[-1] = full[-1] or not any(full)
        mixers = ["attention" if f else "deltanet" for f in full]
        kinds = ["global" if f else "" for f in full]
    if {"attention", "deltanet"} - set(mixers):  # OlmoHybridConfig.validate_architecture
        c.fail(f"layer_types={c['layer_types']!r}: transformers' OlmoHybrid needs at least one "
               f"full_attention and one linear_attention layer")
    h = c.size("num_attention_heads")
    k_heads = c.size("linear_num_key_heads") if c.given("linear_num_key_heads") else h
    v_heads = c.size("linear_num_value_heads") if c.given("linear_num_value_heads") else h
    d_k = (c.size("linear_key_head_dim") if c.given("linear_key_head_dim")
           else int(0.75 * c.size("hidden_size") / k_heads))
    d_v = c.size("linear_value_head_dim") if c.given("linear_value_head_dim") else 2 * d_k
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias,
                                           "qk_norm": "projection"},
                   norm={"kind": "rmsnorm", "placement": "reordered"},
                   deltanet={"n_k_heads": k_heads, "n_v_heads": v_heads, "d_k": d_k, "d_v": d_v,
                             "d_conv": c.size("linear_conv_kernel_dim")}
                   if "deltanet" in mixers else None)
    return merge(spec, per_layer(c, mixers=mixers, attention=kinds))


def _write_olmo_hybrid(spec: ModelSpec) -> dict[str, Any]:
    # Gated DeltaNet beside OLMo 2's attention (qwen3_next's has per-head QK-norm and a gate).
    n = spec.deltanet
    config = {**llama_like(spec, "olmo_hybrid"), "attention_bias": spec.attention.qkv_bias,
              "layer_types": layer_types(spec, "olmo_hybrid", "full_attention",
                                         "linear_attention")}
    if n is not None:
        config.update(linear_num_key_heads=n.n_k_heads, linear_num_value_heads=n.n_v_heads,
                      linear_key_head_dim=n.d_k, linear_value_head_dim=n.d_v,
                      linear_conv_kernel_dim=n.d_conv)
    return config


OLMO_HYBRID = ModelType(
    "olmo_hybrid", _read_olmo_hybrid, write=_write_olmo_hybrid, traits=Traits(),
    getattr_fields=("head_dim",),
    defaults={
        "vocab_size": 100352, "hidden_size": 3840, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 30, "num_key_value_heads": None,
        "hidden_act": "silu", "max_position_embeddings": 65536, "tie_word_embeddings": False,
        "attention_bias": False, "layer_types": None, "linear_num_key_heads": None,
        "linear_num_value_heads": None, "linear_key_head_dim": None,
        "linear_value_head_dim": None, "linear_conv_kernel_dim": 4,
    })
