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


def _kinds(c: HFConfig, layers: int) -> list[str]:
    """layer_types ("hybrid" full, "hybrid_sliding" sliding), else local_layer_ids, else every
    layer whose index + 1 is not a multiple of 6 slides (InklingTextConfig.__post_init__)."""
    types = c["layer_types"]
    if types is None:
        ids = c["local_layer_ids"]
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
