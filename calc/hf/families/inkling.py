"""Inkling (Thinking Machines): inkling_text, a mixture of experts whose sliding layers have
head shapes of their own, a relative-position bias projected from each token in place of
RoPE, and residual short convolutions on the keys, values and both sublayers' outputs."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import ffn_kinds, merge, per_layer, sparse_layers
from calc.hf.writing import experts, need
from calc.spec import ModelSpec

_KINDS = {"hybrid": "global", "hybrid_sliding": "local"}


def _kinds(c: HFConfig, layers: int, ids_field: bool = True) -> list[str]:
    """layer_types ("hybrid" full, "hybrid_sliding" sliding), else local_layer_ids (Inkling's
    only: `ids_field`), else every layer whose index + 1 is not a multiple of 6 slides
    (InklingTextConfig.__post_init__, Inkling2TextConfig.__post_init__)."""
    types = c["layer_types"]
    if types is None:
        ids = c["local_layer_ids"] if ids_field else None
        if ids is not None and (not isinstance(ids, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in ids)):
            c.fail(f"local_layer_ids must list layer indices, got {ids!r}")
        local = set(ids) if ids is not None else {i for i in range(layers) if (i + 1) % 6}
        return ["local" if i in local else "global" for i in range(layers)]
    if (not isinstance(types, list) or len(types) != layers
            or not all(kind in _KINDS for kind in types)):
        c.fail(f"layer_types must list 'hybrid' or 'hybrid_sliding' for each of the {layers} "
               f"layers, got {types!r}")
    return [_KINDS[kind] for kind in types]


def _widths(c: HFConfig) -> tuple[int, int]:
    """(dense FFN width, expert width): a legacy dense_intermediate_size makes
    intermediate_size the experts' width and itself the dense one (__post_init__)."""
    if c["dense_intermediate_size"] is not None:
        return c.size("dense_intermediate_size"), c.size("intermediate_size")
    return c.size("intermediate_size"), c.size("moe_intermediate_size")


def _heads(c: HFConfig, prefix: str) -> dict[str, int]:
    heads = c.size(f"{prefix}num_attention_heads")
    kv = c.size(f"{prefix}num_key_value_heads")
    if heads % kv:
        c.fail(f"{prefix}num_key_value_heads={kv} must divide {prefix}num_attention_heads="
               f"{heads} (InklingAttention repeats each key/value head over whole query heads)")
    return {"n_heads": heads, "n_kv_heads": kv, "head_dim": c.size(f"{prefix}head_dim")}


def _read_inkling(c: HFConfig) -> dict[str, Any]:
    # modeling_inkling.py (transformers 5.24.0): InklingNormedEmbedding (the embedding, then an
    # RMSNorm of d with γ); per layer an RMSNorm before each sublayer; InklingAttention with
    # the swa_ head shapes on the "hybrid_sliding" layers (q_proj, k_proj, v_proj, o_proj,
    # r_proj d → h·d_rel, no bias; q_norm and k_norm per head; no RoPE), k_sconv and v_sconv
    # on W_K's and W_V's outputs and attn_sconv, mlp_sconv on the sublayers' outputs
    # (InklingShortConvolution: x + depthwise causal conv1d, kernel conv_kernel_size, no bias);
    # rel_logits_proj's bank d_rel × rel_extent (sliding_window_size on a sliding layer). The
    # FFN is InklingMoE where mlp_layer_types says "sparse" (InklingTopkRouter: weight
    # (n_routed + n_shared) × d, global_scale, the e_score_correction_bias buffer;
    # InklingExperts; InklingSharedExperts of moe_intermediate_size each), else InklingMLP
    # with its global_scale. lm_head is never tied (_tied_weights_keys = {}), vocab_size rows
    # (unpadded_vocab_size only slices the logits); the multi-token-prediction layers
    # (num_mtp_layers) are not built. The query scaling 1/head_dim, log_scaling_n_floor's
    # element-wise scales and the logits' division by logits_mup_width_multiplier count 0.
    layers = c.size("num_hidden_layers")
    kinds = _kinds(c, layers)
    if c["mlp_layer_types"] is None:
        first = c["dense_mlp_idx"] or 0
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            c.fail(f"dense_mlp_idx={first!r} must be a whole number >= 0")
        sparse = [i >= first for i in range(layers)]
    else:
        sparse = sparse_layers(c, [True] * layers)
    d_ff, d_expert = _widths(c)
    moe = None
    if any(sparse):
        n_experts = c.size("n_routed_experts")
        # InklingTopkRouter slices its scores [: -n_shared_experts]: with none it keeps none;
        # its e_score_correction_bias is an nn.Buffer, not a parameter, so calc's count
        # leaves it out as transformers' does (router_bias false; router_bias_buffer)
        moe = {"n_experts": n_experts, "d_expert": d_expert,
               "top_k": top_k(c, "num_experts_per_tok", n_experts, "n_routed_experts"),
               "n_shared_experts": c.size("n_shared_experts"),
               "shared_in_router": True, "router_global_scale": True}
    main = _heads(c, "")
    attention: dict[str, Any] = {
        "qk_norm": "head",
        "relative_logits": {"d_rel": c.size("d_rel"), "extent": c.size("rel_extent")}}
    if "local" in kinds:
        attention["kind_shapes"] = {"local": _heads(c, "swa_")}
    spec = {"vocab_size": c.size("vocab_size"), "d_model": c.size("hidden_size"),
            "n_layers": layers, "context_length": c.size("max_position_embeddings"),
            "attention": {**main, **attention}, "moe": moe,
            "ffn": {"activation": c.activation("hidden_act", gated=True), "d_ff": d_ff,
                    "output_scale": True},
            "norm": {"kind": "rmsnorm", "placement": "pre", "embedding": True},
            "position": {"kind": "none"}, "residual_conv": c.size("conv_kernel_size"),
            "tie_embeddings": False}
    return merge(spec, per_layer(c, attention=kinds, ffn=ffn_kinds(sparse)))


def _write_inkling(spec: ModelSpec) -> dict[str, Any]:
    att, rel = spec.attention, spec.attention.relative_logits
    need(rel is not None, "attention.relative_logits unset (Inkling's bias on every layer)")
    assert rel is not None
    need(spec.position.kind == "none", f"position.kind={spec.position.kind!r} (Inkling has "
                                       f"no positions but its relative bias)")
    need(spec.residual_conv is not None, "residual_conv unset (Inkling's short convolutions)")
    need(att.qk_norm == "head" and att.qk_norm_weights,
         "attention.qk_norm other than per head with weights")
    need(spec.norm.kind == "rmsnorm" and spec.norm.placement == "pre" and spec.norm.embedding
         and spec.norm.weights and spec.norm.final,
         "a norm other than Inkling's (RMSNorm before each sublayer and after the embedding)")
    need(spec.ffn is not None and spec.ffn.output_scale and not spec.ffn.bias
         and spec.ffn.gated, "ffn without Inkling's gated, scaled MLP")
    need(not spec.tie_embeddings, "tie_embeddings=true (Inkling's head is never tied)")
    need(not (att.qkv_bias or att.out_bias or att.output_gate or att.sinks),
         "attention biases, gates or sinks (Inkling has none)")
    kinds = spec.attention_kinds
    need(set(kinds) <= {"global", "local"} and set(att.kind_shapes) <= {"local"},
         "attention kinds other than full and sliding, or full layers with shapes of their own")
    need(spec.head_dim_v == spec.head_dim_qk,
         "attention.v_head_dim other than head_dim (Inkling's heads are one width)")
    swa = spec.heads_of("local")
    out: dict[str, Any] = {
        "model_type": "inkling_text", "vocab_size": spec.vocab_size,
        "hidden_size": spec.d_model, "num_hidden_layers": spec.n_layers,
        "max_position_embeddings": spec.context_length,
        "num_attention_heads": att.n_heads, "num_key_value_heads": spec.n_kv_heads,
        "head_dim": spec.head_dim_qk, "swa_num_attention_heads": swa[0],
        "swa_num_key_value_heads": swa[1], "swa_head_dim": swa[2],
        "layer_types": ["hybrid_sliding" if kind == "local" else "hybrid" for kind in kinds],
        "sliding_window_size": att.sliding_window or 1,
        "d_rel": rel.d_rel, "rel_extent": rel.extent,
        "conv_kernel_size": spec.residual_conv, "intermediate_size": spec.ffn.d_ff,
        "hidden_act": "silu", "mlp_layer_types": [
            "sparse" if moe else "dense" for moe in spec.moe_layers]}
    need(spec.ffn.activation == "swiglu", "an activation other than SwiGLU")
    if spec.moe is not None:
        moe = experts(spec, "inkling_text")
        need(moe.shared_in_router and moe.router_global_scale and moe.n_shared_experts >= 1
             and moe.shared_width == moe.d_expert and not moe.n_zero_experts
             and not moe.output_norm and not moe.branch_norms and not moe.router_scales
             and not moe.shortcut and not moe.hash_layers and not moe.output_bias,
             "moe without Inkling's router (shared experts scored beside the routed ones, "
             "global_scale) and shared experts of the experts' width")
        out.update({"n_routed_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
                    "n_shared_experts": moe.n_shared_experts,
                    "moe_intermediate_size": moe.d_expert})
    return out


INKLING_TEXT = ModelType(
    "inkling_text", _read_inkling, write=_write_inkling,
    traits=Traits(positions=("none",), moe=True),
    aliases={"embedding_multiplier": "logits_mup_width_multiplier",
             "sliding_window": "sliding_window_size", "num_local_experts": "n_routed_experts",
             "sconv_kernel_size": "conv_kernel_size",
             "model_max_length": "max_position_embeddings"},
    getattr_fields=("dense_mlp_idx", "dense_intermediate_size"),
    router_bias_buffer=True,
    defaults={
        "vocab_size": 201024, "hidden_size": 6144, "num_hidden_layers": 66,
        "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
        "swa_num_attention_heads": 64, "swa_num_key_value_heads": 16, "swa_head_dim": 128,
        "sliding_window_size": 512, "d_rel": 16, "rel_extent": 1024,
        "local_layer_ids": None, "layer_types": None, "max_position_embeddings": 131072,
        "conv_kernel_size": 4, "mlp_layer_types": None, "intermediate_size": 24576,
        "hidden_act": "silu", "moe_intermediate_size": 3072, "n_routed_experts": 256,
        "num_experts_per_tok": 6, "n_shared_experts": 2,
    })


def _read_inkling2(c: HFConfig) -> dict[str, Any]:
    # modeling_inkling2.py (transformers 5.24.0): Inkling2NormedEmbedding (vocab_size rows,
    # then an RMSNorm with γ); per layer Inkling2SlidingDecoderLayer ("hybrid_sliding", the
    # swa_ heads) or Inkling2FullDecoderLayer ("hybrid"). Attention: Inkling2QueryProjection
    # (linear d → h·d_h, Inkling2ScaledL2Clip's scale h × d_h: attention.query_scale; the L2
    # clip and the full layers' log scaling have no parameter), Inkling2KeyValueProjection
    # (linear d → h_kv·d_h, then Inkling2ShortConvolution on a sliding layer, or on a full one
    # Inkling2DynamicShortConvolution: static_weight k × h_kv·d_h and weight_proj d → h_kv·k,
    # residual_conv_taps; the key's L2 clip and the value's Inkling2UnweightedRMSNorm have no
    # parameter: qk_norm none), Inkling2GatedOutputProjection (gate_proj d → h·d_h and linear
    # h·d_h → d, no bias: output_gate_own), sink_proj d → h (attention.sink_proj),
    # Inkling2RelativePositionBias (linear d → h·d_rel, the scale h × d_rel, proj d_rel × E,
    # E = rel_extent on a full layer and sliding_window_size on a sliding one). Each layer's
    # attention and MLP inputs are Inkling2BlockAttentionResidual mixes (block_residual: 3
    # queries and q/k/v_input_layernorm on the full layers, none for layer 0's attention),
    # post_attention_convolution and post_mlp_convolution (residual_conv; their 1/√(k + 1)
    # scale, like the dynamic one's 1/√(2k + 1), element-wise). The MLP is
    # Inkling2SparseMoeBlock on every layer: Inkling2TopKRouter (weight E × d, sigmoid scores,
    # the e_score_correction_bias buffer, route_scale), Inkling2Experts with the softcapped
    # SwiGLU (the softcaps element-wise), no shared expert. final_input mixes the blocks once
    # more before the final norm; lm_head has unpadded_vocab_size rows, never tied
    # (_tied_weights_keys = {}); the logit softcap is element-wise.
    layers = c.size("num_hidden_layers")
    kinds = _kinds(c, layers, ids_field=False)
    n_experts = c.size("n_routed_experts")
    moe = {"n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
           "top_k": top_k(c, "num_experts_per_tok", n_experts, "n_routed_experts")}
    attention: dict[str, Any] = {
        **_heads(c, ""), "qk_norm": "none", "query_scale": True, "sinks": True,
        "sink_proj": True, "output_gate": True, "output_gate_own": True,
        "relative_logits": {"d_rel": c.size("d_rel"), "extent": c.size("rel_extent"),
                            "scale": True}}
    if "local" in kinds:
        attention["kind_shapes"] = {"local": _heads(c, "swa_")}
    vocab, rows = c.size("vocab_size"), c.size("unpadded_vocab_size")
    if rows > vocab:
        c.fail(f"unpadded_vocab_size={rows} must be at most vocab_size={vocab} (calc's head "
               f"has at most the embedding's rows)")
    spec = {"vocab_size": vocab, "d_model": c.size("hidden_size"), "n_layers": layers,
            "context_length": c.size("max_position_embeddings"), "attention": attention,
            "moe": moe, "ffn": {"activation": c.activation("hidden_act", gated=True),
                                "d_ff": c.size("moe_intermediate_size")},
            "norm": {"kind": "rmsnorm", "placement": "pre", "embedding": True},
            "position": {"kind": "none"}, "residual_conv": c.size("conv_kernel_size"),
            "residual_conv_taps": ("global",) if "global" in kinds else (),
            "block_residual": {"layers": c.size("n_layers_per_attn_res_block"),
                               "split_kinds": ("global",)},
            "tie_embeddings": False}
    if rows < vocab:
        spec["output_vocab_size"] = rows
    return merge(spec, per_layer(c, attention=kinds, ffn=ffn_kinds([True] * layers)))


def _write_inkling2(spec: ModelSpec) -> dict[str, Any]:
    att, rel, block = spec.attention, spec.attention.relative_logits, spec.block_residual
    need(block is not None and block.split_kinds == ("global",),
         "block_residual other than Inkling 2's (q, k, v split on the full layers)")
    need(rel is not None and rel.scale, "attention.relative_logits without its scale "
                                        "(Inkling 2's bias on every layer)")
    assert rel is not None and block is not None
    need(spec.position.kind == "none", f"position.kind={spec.position.kind!r} (Inkling 2 has "
                                       f"no positions but its relative bias)")
    kinds = spec.attention_kinds
    need(spec.residual_conv is not None
         and spec.residual_conv_taps == (("global",) if "global" in kinds else ()),
         "residual_conv without Inkling 2's per-token taps on the full layers")
    need(att.qk_norm == "none" and att.query_scale and att.sinks and att.sink_proj
         and att.output_gate and att.output_gate_own and not att.qkv_bias
         and not att.out_bias, "attention other than Inkling 2's (scaled queries, "
                               "projected sinks, own output gate, no biases)")
    need(spec.norm.kind == "rmsnorm" and spec.norm.placement == "pre" and spec.norm.embedding
         and spec.norm.weights and spec.norm.final,
         "a norm other than Inkling 2's (RMSNorm before each sublayer and after the embedding)")
    need(not spec.tie_embeddings, "tie_embeddings=true (Inkling 2's head is never tied)")
    need(set(kinds) <= {"global", "local"} and set(att.kind_shapes) <= {"local"}
         and spec.head_dim_v == spec.head_dim_qk,
         "attention kinds other than full and sliding, or heads Inkling 2 cannot shape")
    need(spec.moe is not None and all(spec.moe_layers),
         "an FFN other than Inkling 2's MoE on every layer")
    moe = experts(spec, "inkling2_text")
    need(not moe.n_shared_experts and not moe.shared_in_router and not moe.router_global_scale
         and not moe.n_zero_experts and not moe.output_norm and not moe.branch_norms
         and not moe.router_scales and not moe.shortcut and not moe.hash_layers
         and not moe.output_bias and spec.ffn is not None and spec.ffn.activation == "swiglu",
         "moe other than Inkling 2's (routed SwiGLU experts alone)")
    swa = spec.heads_of("local")
    return {
        "model_type": "inkling2_text", "vocab_size": spec.vocab_size,
        "unpadded_vocab_size": spec.head_rows, "hidden_size": spec.d_model,
        "num_hidden_layers": spec.n_layers, "max_position_embeddings": spec.context_length,
        "num_attention_heads": att.n_heads, "num_key_value_heads": spec.n_kv_heads,
        "head_dim": spec.head_dim_qk, "swa_num_attention_heads": swa[0],
        "swa_num_key_value_heads": swa[1], "swa_head_dim": swa[2],
        "layer_types": ["hybrid_sliding" if kind == "local" else "hybrid" for kind in kinds],
        "sliding_window_size": att.sliding_window or 1, "d_rel": rel.d_rel,
        "rel_extent": rel.extent, "conv_kernel_size": spec.residual_conv, "hidden_act": "silu",
        "n_layers_per_attn_res_block": block.layers, "n_routed_experts": moe.n_experts,
        "num_experts_per_tok": moe.top_k, "moe_intermediate_size": moe.d_expert}


# Inkling2TextConfig's defaults (configuration_inkling2.py, transformers 5.24.0)
INKLING2_TEXT = ModelType(
    "inkling2_text", _read_inkling2, write=_write_inkling2,
    traits=Traits(positions=("none",), moe=True),
    aliases={"sliding_window": "sliding_window_size", "num_local_experts": "n_routed_experts",
             "sconv_kernel_size": "conv_kernel_size",
             "model_max_length": "max_position_embeddings",
             "intermediate_size": "moe_intermediate_size",
             "routed_scaling_factor": "route_scale"},
    router_bias_buffer=True, head_rows_field="unpadded_vocab_size",
    defaults={
        "vocab_size": 201024, "unpadded_vocab_size": 200058, "hidden_size": 4608,
        "num_hidden_layers": 48, "num_attention_heads": 48, "num_key_value_heads": 8,
        "head_dim": 128, "swa_num_attention_heads": 48, "swa_num_key_value_heads": 8,
        "swa_head_dim": 128, "sliding_window_size": 1024, "d_rel": 16, "rel_extent": 1024,
        "layer_types": None, "max_position_embeddings": 1048576, "conv_kernel_size": 4,
        "hidden_act": "silu", "moe_intermediate_size": 2304, "n_routed_experts": 384,
        "num_experts_per_tok": 8, "n_layers_per_attn_res_block": 6,
    })
