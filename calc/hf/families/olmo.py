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
from calc.hf.per_layer import kinds_or, merge, per_layer
from calc.hf.writing import experts, full_or_sliding, gated, llama_like, rope_decoder
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
