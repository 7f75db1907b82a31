"""Beam: beam, a mixture of experts whose attention output gate has a learned bias per head,
with sandwich norms, sliding RoPE layers and full layers without position encoding."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, layer_kinds, no_null_head_dim, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import ffn_kinds, merge, per_layer, sparse_layers
from calc.hf.writing import (
    experts,
    layer_types,
    llama_like,
    need,
    one_attention_bias,
    one_group,
    window_field,
)
from calc.spec import ModelSpec

_TYPE = {"global": "full_attention", "local": "sliding_attention"}
_ROPE = {"rope_type": "default", "rope_theta": 10000.0}  # BeamConfig's default_theta


def _kinds(c: HFConfig, layers: int) -> list[str]:
    """global, local or nope per layer. configuration_beam.py: layer_types, else every sixth
    layer and the last full and the others sliding; rope_parameters, else RoPE on the sliding
    layers and None on the full ones. BeamModel gives a layer type whose entry is None no
    position embeddings (NoPE, with a position-dependent query scale that holds no
    parameter), and BeamRotaryEmbedding reads the entry of every type the layers use."""
    default = ["local" if (i + 1) % 6 else "global" for i in range(layers)]
    if layers:
        default[-1] = "global"
    kinds = layer_kinds(c, default)
    rope = (c.values["rope_parameters"] if c.given("rope_parameters")
            else {"sliding_attention": _ROPE, "full_attention": None})
    for kind in sorted(set(kinds)):
        if not isinstance(rope, dict) or _TYPE[kind] not in rope:
            c.fail(f"rope_parameters={rope!r} has no {_TYPE[kind]!r} entry: transformers' "
                   f"Beam reads one per layer type and fails without it")
        entry = rope[_TYPE[kind]]
        if entry is not None and (not isinstance(entry, dict) or "rope_theta" not in entry):
            c.fail(f"rope_parameters[{_TYPE[kind]!r}]={entry!r} has no rope_theta: Beam's "
                   f"rotary embedding reads it unconverted and fails without it")
    if "local" in kinds and rope["sliding_attention"] is None:
        c.fail("rope_parameters['sliding_attention']=None: sliding layers without position "
               "encoding; calc's layers without one are full layers (attention kind nope)")
    if "local" in kinds and not c.given("sliding_window"):
        c.fail("sliding_window=null with sliding_attention layers: transformers' Beam builds "
               "their mask from the window")
    return ["nope" if kind == "global" and rope["full_attention"] is None else kind
            for kind in kinds]


def _read_beam(c: HFConfig) -> dict[str, Any]:
    # modeling_beam.py (transformers 5.24.0), BeamAttention: q_proj, k_proj, v_proj, o_proj
    # with attention_bias, q_norm and k_norm over each head's head_dim; gate_proj d →
    # heads · head_dim without bias and gate_bias, one value per head, added before the
    # sigmoid that multiplies each head's output; the window on the sliding layers.
    # BeamDecoderLayer: a norm before and after each sublayer (input, post_attention,
    # pre_feedforward, post_feedforward), depth-scaled residual adds (no parameter); its FFN
    # the MoE where mlp_layer_types says "sparse" (configuration_beam.py: all but the first
    # min(3, layers)), else BeamMLP of intermediate_size. BeamMoE: BeamTopKRouter's fp32 weight
    # E × d and its e_score_correction_bias (an nn.Buffer), num_experts experts of
    # moe_intermediate_size (gate_up_proj, down_proj), no shared expert; n_group, topk_group,
    # routed_scaling_factor and final_logit_softcapping hold no parameter.
    no_null_head_dim(c)
    layers = c.size("num_hidden_layers")
    kinds = _kinds(c, layers)
    first = min(3, layers)
    sparse = sparse_layers(c, [i >= first for i in range(layers)])
    n_experts = c.size("num_experts")
    moe = any(sparse) and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts"),
        "router_bias": False}
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), moe=moe or None,
                   attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head",
                              "output_gate": True, "output_gate_bias": True},
                   norm={"kind": "rmsnorm", "placement": "sandwich"})
    return merge(spec, per_layer(c, attention=kinds, ffn=ffn_kinds(sparse)))


def _write_beam(spec: ModelSpec) -> dict[str, Any]:
    att, moe = spec.attention, experts(spec, "beam")
    need(att.output_gate and att.output_gate_per == "channel" and att.output_gate_bias,
         "attention without Beam's output gate (one value per channel from its own gate_proj, "
         "attention.output_gate_bias)")
    need(att.qk_norm == "head", f"attention.qk_norm={att.qk_norm!r} (Beam normalises each "
                                f"head's queries and keys)")
    need(spec.norm.placement == "sandwich", f"norm.placement={spec.norm.placement!r} (Beam "
                                            f"has a norm before and after each sublayer)")
    need(moe.n_shared_experts == 0 and not moe.router_bias,
         "moe with shared experts or a router bias parameter (Beam's MoE has neither)")
    need("global" not in spec.attention_kinds or "nope" not in spec.attention_kinds,
         "full layers with and without RoPE (Beam's rope_parameters gives one per layer type)")
    types = layer_types(spec, "beam", "full_attention", "sliding_attention")
    full_rope = "global" in spec.attention_kinds
    return {**llama_like(spec, "beam"), **window_field(spec), **one_group(spec, "beam"),
            "layer_types": types, "attention_bias": one_attention_bias(spec, "beam"),
            "rope_parameters": {"sliding_attention": _ROPE,
                                "full_attention": _ROPE if full_rope else None},
            "mlp_layer_types": ["sparse" if s else "dense" for s in spec.moe_layers],
            "num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert}


BEAM = ModelType(
    "beam", _read_beam, write=_write_beam, traits=Traits(moe=True),
    # e_score_correction_bias: a buffer of BeamTopKRouter (modeling_beam.py)
    router_bias_buffer=True,
    defaults={
        "vocab_size": 151936, "hidden_size": 5120, "intermediate_size": 20480,
        "num_hidden_layers": 52, "num_attention_heads": 48, "num_key_value_heads": 8,
        "hidden_act": "silu", "max_position_embeddings": 8192, "tie_word_embeddings": False,
        "attention_bias": False, "sliding_window": 512, "moe_intermediate_size": 2560,
        "num_experts_per_tok": 8, "num_experts": 256, "head_dim": 128, "layer_types": None,
        "mlp_layer_types": None, "rope_parameters": None,
    })
