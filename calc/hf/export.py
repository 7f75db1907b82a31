"""ModelSpec → a Hugging Face config dict that builds exactly that model in transformers.

The reverse of calc.hf, for cross-checking presets against transformers' own models
(`verify --hf`). A model type's writer (calc.hf.model_type.ModelType.write) maps the spec onto
its config fields; a writer's config is accepted only if calc.hf reads it back as the same model
(every count-relevant field, `shape` below). The writers are tried in calc.hf.registry's order
and the first that round-trips wins; when none does, the CalcError names the field the closest
one (by its traits) cannot express.

One difference is accepted and named: DeepSeek-V3's routing bias (moe.router_bias) is a
buffer in transformers, so its parameter count is lower by `buffer_params(spec)`; LongCat-Flash's
zero-computation experts get gate_up_proj rows no token reads, so it is higher by
`unread_params(spec)`. A head narrower
than the vocabulary (output_vocab_size) is tried only on the types whose config can say so
(ModelType.head_rows_field: apertus1p5_text, mllama_text_model, cpmant); every other type says
in one line that its head has vocab_size rows.
"""

from __future__ import annotations

from typing import Any

from calc.errors import CalcError
from calc.hf.config import spec_from_hf_config
from calc.hf.model_type import ModelType, Traits
from calc.hf.registry import find, writers
from calc.hf.writing import Unexpressible
from calc.spec import ModelSpec


def shape(spec: ModelSpec) -> dict[str, Any]:
    """Every field that changes what transformers would build, normalised (defaults resolved,
    fields that cannot matter dropped), keyed by the spec's dotted names."""
    att, ffn, moe, norm = spec.attention, spec.ffn, spec.moe, spec.norm
    dense = "dense" in spec.ffn_kinds
    return {
        "vocab_size": spec.vocab_size, "output_vocab_size": spec.head_rows,
        "d_model": spec.d_model, "n_layers": spec.n_layers,
        "attention.n_heads": att.n_heads, "attention.n_kv_heads": spec.n_kv_heads,
        "attention.head_dim": spec.head_dim_qk, "attention.v_head_dim": spec.head_dim_v,
        "attention.qkv_bias": att.qkv_bias, "attention.out_bias": att.out_bias,
        "attention.last_layer_out_bias": att.last_layer_out_bias,
        "attention.qk_norm": att.qk_norm,
        "attention.mla": att.mla.model_dump() if att.mla else None,
        "attention.indexer": att.indexer.model_dump() if att.indexer else None,
        "attention.q_lora_rank": att.q_lora_rank,
        "attention.dynamic_mask": att.dynamic_mask,
        "attention.q_norm_weights": att.q_norm_weights or att.qk_norm != "head",
        "attention.output_groups": att.output_groups,
        "attention.layer_kinds": spec.layer_kinds,
        "attention.sliding_window": att.sliding_window if spec.n_local_layers else None,
        "attention.chunk_size": att.chunk_size if "chunked" in spec.attention_kinds else None,
        "attention.qk_norm_weights": att.qk_norm_weights or att.qk_norm == "none",
        "attention.sinks": att.sinks, "attention.sink_proj": att.sink_proj,
        "attention.query_scale": att.query_scale,
        "attention.output_gate": att.output_gate,
        "attention.differential": att.differential,
        "attention.output_gate_per": att.output_gate_per if att.output_gate else None,
        "attention.output_gate_bias": att.output_gate_bias,
        "attention.output_gate_own": att.output_gate_own,
        "attention.kind_shapes": {kind: (*spec.heads_of(kind), spec.sinks_of(kind),
                                         (own := spec.for_kind(kind).attention.mla)
                                         and own.model_dump())
                                  for kind in att.kind_shapes},
        "attention.k_eq_v": tuple(spec.keys_are_values(kind) for kind in spec.attention_kinds),
        "attention.kv_shared_layers": att.kv_shared_layers,
        "ffn.double_wide": spec.double_wide_layers,
        "layers.mixers": spec.mixer_kinds, "layers.ffn": spec.ffn_kinds,
        "mamba": spec.mamba, "deltanet": spec.deltanet, "short_conv": spec.short_conv,
        "griffin": spec.griffin, "mlstm": spec.mlstm, "cross_attention": spec.cross_attention,
        "norm.weights": norm.weights, "norm.sub_norms": norm.sub_norms,
        "norm.gate_rank": norm.gate_rank,
        "d_embedding": spec.embedding_width,
        "ffn.activation": ffn and ffn.activation,
        "ffn.d_ff": ffn.d_ff if dense or spec.shared_block else None,
        "shared_block": spec.shared_block,
        "ffn.bias": ffn and ffn.bias,
        "ffn.output_scale": ffn and ffn.output_scale,
        "attention.relative_logits": att.relative_logits, "residual_conv": spec.residual_conv,
        "block_residual": spec.block_residual,
        "residual_conv_taps": tuple(kind in spec.residual_conv_taps
                                    for kind in spec.attention_kinds),
        "moe": moe and {
            "n_experts": moe.n_experts, "top_k": moe.top_k, "d_expert": moe.d_expert,
            "n_shared_experts": moe.n_shared_experts,
            "d_shared": moe.shared_width if moe.n_shared_experts else None,
            "shared_expert_gate": moe.shared_expert_gate, "router_bias": moe.router_bias,
            "output_norm": moe.output_norm, "n_zero_experts": moe.n_zero_experts,
            "shortcut": moe.shortcut, "hash_layers": moe.hash_layers,
            "branch_norms": moe.branch_norms, "router_scales": moe.router_scales,
            "product_keys": moe.product_keys,
            "shared_in_router": moe.shared_in_router,
            "router_global_scale": moe.router_global_scale, "router_mlp": moe.router_mlp},
        "moe.layers": spec.moe_layers,
        "norm.kind": norm.kind, "norm.bias": norm.has_bias, "norm.placement": norm.placement,
        "norm.final": norm.final, "norm.embedding": norm.embedding,
        "position.kind": spec.position.kind, "position.max_positions": spec.position_table,
        "position.bias_rows": (spec.position.buckets, spec.position.segments),
        "segment_embedding": spec.segment_embedding,
        "tie_embeddings": spec.tie_embeddings, "lm_head_bias": spec.lm_head_bias,
        "prediction_head": spec.prediction_head,
        "norm.first_mixer_norm": norm.first_mixer_norm,
        "parallel_block": spec.parallel_block,
        "parallel_norms": spec.parallel_norms if spec.parallel_block else None,
        "mtp_modules": spec.mtp_modules,
        "hyper_connections": spec.hyper_connections,
        "drafter": spec.drafter, "centroid_head": spec.centroid_head,
        "per_layer_embeddings": spec.per_layer_embeddings and (
            spec.per_layer_embeddings.width,
            spec.per_layer_embeddings.vocab_size or spec.vocab_size),
        "altup": spec.altup, "laurel": spec.laurel,
        "attention.cca": att.cca, "residual_scales": spec.residual_scales,
        # the layers as they run, however the runs are cut (a span once = two halves once)
        "loop": spec.loop and (spec.loop.order(), spec.loop.init_state, spec.loop.cache),
        "ngpt": spec.ngpt,
    }


def buffer_params(spec: ModelSpec, model_type: str = "deepseek_v3") -> int:
    """Values calc counts as parameters that transformers keeps as buffers when it builds
    `spec` as `model_type` (a ModelType's router_bias_buffer): DeepSeek-V3's
    e_score_correction_bias, one per routed expert of every MoE layer (modeling_deepseek_v3.py,
    DeepseekV3TopkRouter; transformers 5.24.0). gpt-oss's router bias is a parameter there."""
    kind, moe = find(model_type), spec.moe
    if kind is None or not kind.router_bias_buffer or moe is None or not moe.router_bias:
        return 0
    return spec.n_moe_layers * moe.n_experts


def unread_params(spec: ModelSpec, model_type: str) -> int:
    """Parameters transformers allocates for `spec` built as `model_type` that no token reads,
    which calc does not count (a ModelType's zero_expert_rows): LongcatFlashExperts
    (modeling_longcat_flash.py, transformers 5.24.0) shapes gate_up_proj [n_routed +
    zero_expert_num, 2·expert_ffn_hidden_size, d] but sends a zero expert's tokens through
    nn.Identity, so the zero experts' rows of every MoE layer are never multiplied (down_proj
    has n_routed rows only). LongCat-Flash's published 560B total leaves them out."""
    kind, moe = find(model_type), spec.moe
    if kind is None or not kind.zero_expert_rows or moe is None or spec.ffn is None:
        return 0
    return spec.n_moe_layers * moe.n_zero_experts * (1 + int(spec.ffn.gated)) * moe.d_expert \
        * spec.d_model


def _unlike(spec: ModelSpec, traits: Traits) -> int:
    """How many of an architecture's traits the spec does not share."""
    have = (spec.norm.kind == traits.norm, bool(spec.ffn and spec.ffn.gated) == traits.gated,
            (spec.moe is not None) == traits.moe, (spec.attention.mla is not None) == traits.mla,
            spec.position.kind in traits.positions,
            (spec.prediction_head is not None) == traits.head)
    # a state-space model and a Transformer are never each other's closest architecture
    ssm = 10 * ((spec.mamba is not None) != traits.ssm)
    return have.count(False) + ssm


def _differences(spec: ModelSpec, kind: ModelType, config: dict[str, Any]) -> list[str]:
    try:
        back = spec_from_hf_config(config, name=spec.name, where=kind.name)
    except CalcError as error:
        return [str(error)]
    want, got = shape(spec), shape(back)
    if kind.router_bias_buffer and spec.moe is not None:
        want["moe"] = {**want["moe"], "router_bias": False}  # a buffer there: buffer_params
    return [f"{key}={want[key]!r} ({kind.name} gives {got[key]!r})"
            for key in want if want[key] != got[key]]


def hf_config_from_spec(spec: ModelSpec) -> dict[str, Any]:
    """The config dict of the first transformers architecture that builds exactly `spec`.

    Only DeepSeek-V3's routing bias differs, and in parameters only: see buffer_params.
    """
    tried: list[tuple[ModelType, Traits, list[str]]] = []
    for kind in writers():
        assert kind.write is not None and kind.traits is not None  # ModelType checks both
        if spec.ffn is None and kind.traits.ffn:
            tried.append((kind, kind.traits, ["layers.ffn_pattern none (an FFN on every layer)"]))
            continue
        if spec.output_vocab_size is not None and kind.head_rows_field is None:
            tried.append((kind, kind.traits, [
                f"output_vocab_size={spec.output_vocab_size} ({kind.name}'s LM head has "
                f"vocab_size={spec.vocab_size} rows)"]))
            continue
        try:
            config = kind.write(spec)
        except Unexpressible as reason:
            tried.append((kind, kind.traits, [str(reason)]))
            continue
        differences = _differences(spec, kind, config)
        if not differences:
            return config
        tried.append((kind, kind.traits, differences))
    closest, _, differences = min(tried, key=lambda item: (_unlike(spec, item[1]),
                                                           len(item[2])))
    raise CalcError(f"spec {spec.name!r}: no transformers architecture calc writes expresses "
                    f"it exactly; the closest, {closest.name}, cannot hold "
                    f"{'; '.join(differences[:3])}")
