"""ZAYA1 (Zyphra): zaya, a mixture of experts with compressed convolutional attention (CCA), an
MLP router that carries its state from layer to layer, and learned scales and biases at every
residual add (transformers 5.24.0 modeling_zaya.py)."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, layer_pattern, no_null_head_dim
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import experts, gated, llama_like, need, one_attention_bias
from calc.spec import ModelSpec

# ZayaConfig.layer_types: full or sliding attention, each layer with its MoE
_KINDS = {"hybrid": "global", "hybrid_sliding": "local"}
_TYPES = {kind: name for name, kind in _KINDS.items()}


def _kinds(c: HFConfig) -> list[str]:
    layers = c.size("num_hidden_layers")
    types = c["layer_types"]
    if types is None:  # ZayaConfig.__post_init__: every layer "hybrid"
        return ["global"] * layers
    if not isinstance(types, list) or len(types) != layers or not all(
            t in _KINDS for t in types):
        c.fail(f"layer_types must list 'hybrid' or 'hybrid_sliding' for each of the {layers} "
               f"layers, got {types!r}")
    return [_KINDS[t] for t in types]


def _read_zaya(c: HFConfig) -> dict[str, Any]:
    # modeling_zaya.py (transformers 5.24.0): each ZayaDecoderLayer is a norm, ZayaAttention
    # (ZayaCCAProjection: q_proj, k_proj, v_proj_current and v_proj_delayed with
    # attention_bias, conv_qk_depthwise of kernel cca_time0 and conv_qk_grouped of kernel
    # cca_time1; ZayaQKNorm's temp per KV head; o_proj with attention_bias), a
    # ZayaResidualScaling, a norm, ZayaSparseMoeBlock (ZayaRouter of router_hidden_size with
    # its skip class, num_experts SwiGLU experts of moe_intermediate_size) and another
    # ZayaResidualScaling; ZayaModel scales and biases the embedding; lm_head has lm_head_bias.
    # The rotary parameters per layer type (partial_rotary_factor) change no count.
    no_null_head_dim(c)
    n_experts = c.size("num_experts")
    top_k = c.size("num_experts_per_tok")
    if top_k != 1:
        c.fail(f"num_experts_per_tok={top_k}: ZayaConfig supports 1 only")
    heads, kv = c.size("num_attention_heads"), c.size("num_key_value_heads")
    if heads % kv:
        c.fail(f"num_attention_heads={heads} must be a multiple of num_key_value_heads={kv}")
    bias = c.flag("attention_bias")
    kinds = _kinds(c)
    moe = {"n_experts": n_experts, "top_k": top_k, "d_expert": c.size("moe_intermediate_size"),
           "router_mlp": {"width": c.size("router_hidden_size")}}
    return decoder(c, {"n_heads": heads, "n_kv_heads": kv, "head_dim": c.size("head_dim")},
                   d_ff=c.size("moe_intermediate_size"), moe=moe,
                   lm_head_bias=c.flag("lm_head_bias"),
                   residual_scales={"residual_bias": True, "branch": True, "embedding": True},
                   attention={"qkv_bias": bias, "out_bias": bias,
                              "cca": {"kernel": c.size("cca_time0"),
                                      "grouped_kernel": c.size("cca_time1")},
                              **layer_pattern(c, kinds)})


def _write_zaya(spec: ModelSpec) -> dict[str, Any]:
    att, moe, scales = spec.attention, experts(spec, "zaya"), spec.residual_scales
    need(att.cca is not None, "attention.cca=None (ZAYA1's attention is CCA)")
    need(moe.router_mlp is not None, "moe.router_mlp=None (ZAYA1's router is an MLP)")
    need(scales is not None and scales.residual_bias and scales.branch and scales.embedding,
         "residual_scales without residual_bias, branch and embedding (ZAYA1's "
         "ZayaResidualScaling has all four vectors and the embedding its scale and bias)")
    need(moe.top_k == 1 and not moe.n_shared_experts,
         "moe with top_k other than 1 or shared experts (ZAYA1 routes one expert a token)")
    need(moe.d_expert == spec.ffn.d_ff if spec.ffn else False,
         "ffn.d_ff other than moe.d_expert (ZAYA1 has no dense FFN)")
    assert att.cca is not None and moe.router_mlp is not None
    gated(spec, "zaya")
    return {**llama_like(spec, "zaya"),
            "layer_types": [_TYPES[kind] for kind in spec.attention_kinds],
            "sliding_window": att.sliding_window if spec.n_local_layers else None,
            "attention_bias": one_attention_bias(spec, "zaya"),
            "lm_head_bias": spec.lm_head_bias,
            "num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert,
            "router_hidden_size": moe.router_mlp.width,
            "cca_time0": att.cca.kernel, "cca_time1": att.cca.grouped_kernel}


ZAYA = ModelType(
    "zaya", _read_zaya, write=_write_zaya, traits=Traits(moe=True),
    defaults={
        "vocab_size": 262272, "hidden_size": 2048, "num_hidden_layers": 40,
        "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_act": "silu",
        "max_position_embeddings": 131072, "tie_word_embeddings": True,
        "sliding_window": None, "moe_intermediate_size": 2048, "num_experts_per_tok": 1,
        "num_experts": 16, "layer_types": None, "head_dim": 128, "attention_bias": False,
        "lm_head_bias": False, "router_hidden_size": 256, "cca_time0": 2, "cca_time1": 2,
    })
