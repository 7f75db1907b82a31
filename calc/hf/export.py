"""ModelSpec → a Hugging Face config dict that builds exactly that model in transformers.

The reverse of calc.hf, for cross-checking presets against transformers' own models
(`verify --hf`). Each supported architecture has a writer that maps the spec onto its config
fields; a writer's config is accepted only if calc.hf reads it back as the same model (every
count-relevant field, calc.hf's `shape` below). The first architecture that round-trips wins;
when none does, the CalcError names the field the closest one cannot express.

One difference is accepted and named: DeepSeek-V3's routing bias (moe.router_bias) is a
buffer in transformers, so its parameter count is lower by `buffer_params(spec)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calc.errors import CalcError
from calc.hf import export_layers, families
from calc.hf.config import spec_from_hf_config
from calc.hf.writing import NO_TOKENS as _NO_TOKENS
from calc.hf.writing import Unexpressible
from calc.hf.writing import base as _base
from calc.hf.writing import gated as _gated
from calc.hf.writing import layer_types as _layer_types
from calc.hf.writing import llama_like as _llama_like
from calc.hf.writing import need as _need
from calc.hf.writing import plain as _plain
from calc.spec import ModelSpec


def shape(spec: ModelSpec) -> dict[str, Any]:
    """Every field that changes what transformers would build, normalised (defaults resolved,
    fields that cannot matter dropped), keyed by the spec's dotted names."""
    att, ffn, moe, norm = spec.attention, spec.ffn, spec.moe, spec.norm
    dense = "dense" in spec.ffn_kinds
    return {
        "vocab_size": spec.vocab_size, "d_model": spec.d_model, "n_layers": spec.n_layers,
        "attention.n_heads": att.n_heads, "attention.n_kv_heads": spec.n_kv_heads,
        "attention.head_dim": spec.head_dim_qk, "attention.v_head_dim": spec.head_dim_v,
        "attention.qkv_bias": att.qkv_bias, "attention.out_bias": att.out_bias,
        "attention.qk_norm": att.qk_norm,
        "attention.mla": att.mla.model_dump() if att.mla else None,
        "attention.layer_kinds": spec.layer_kinds,
        "attention.sliding_window": att.sliding_window if spec.n_local_layers else None,
        "attention.chunk_size": att.chunk_size if "chunked" in spec.attention_kinds else None,
        "attention.qk_norm_weights": att.qk_norm_weights or att.qk_norm == "none",
        "attention.sinks": att.sinks, "attention.output_gate": att.output_gate,
        "layers.mixers": spec.mixer_kinds, "layers.ffn": spec.ffn_kinds,
        "mamba": spec.mamba, "deltanet": spec.deltanet, "short_conv": spec.short_conv,
        "norm.weights": norm.weights, "norm.sub_norms": norm.sub_norms,
        "d_embedding": spec.embedding_width,
        "ffn.activation": ffn and ffn.activation, "ffn.d_ff": ffn.d_ff if dense else None,
        "ffn.bias": ffn and ffn.bias,
        "moe": moe and {
            "n_experts": moe.n_experts, "top_k": moe.top_k, "d_expert": moe.d_expert,
            "n_shared_experts": moe.n_shared_experts,
            "d_shared": moe.shared_width if moe.n_shared_experts else None,
            "shared_expert_gate": moe.shared_expert_gate, "router_bias": moe.router_bias},
        "moe.layers": spec.moe_layers,
        "norm.kind": norm.kind, "norm.bias": norm.has_bias, "norm.placement": norm.placement,
        "norm.final": norm.final, "norm.embedding": norm.embedding,
        "position.kind": spec.position.kind, "position.max_positions": spec.position_table,
        "tie_embeddings": spec.tie_embeddings, "lm_head_bias": spec.lm_head_bias,
        "parallel_block": spec.parallel_block,
        "parallel_norms": spec.parallel_norms if spec.parallel_block else None,
        "mtp_modules": spec.mtp_modules,
    }


def buffer_params(spec: ModelSpec, model_type: str = "deepseek_v3") -> int:
    """Values calc counts as parameters that transformers keeps as buffers when it builds
    `spec` as `model_type`: DeepSeek-V3's e_score_correction_bias, one per routed expert of every
    MoE layer (modeling_deepseek_v3.py, DeepseekV3TopkRouter; transformers 5.24.0). gpt-oss's
    router bias is a parameter there."""
    moe = spec.moe
    if model_type != "deepseek_v3" or moe is None or not moe.router_bias:
        return 0
    return spec.n_moe_layers * moe.n_experts


# ---- writers --------------------------------------------------------------------------------
def _llama(spec: ModelSpec) -> dict[str, Any]:
    _need(spec.d_model % spec.attention.n_heads == 0,
          f"attention.n_heads={spec.attention.n_heads} with d_model={spec.d_model} "
          f"(llama needs hidden_size divisible by the heads)")
    return {**_llama_like(spec, "llama"), "attention_bias": spec.attention.qkv_bias,
            "mlp_bias": spec.ffn.bias}


def _mistral(spec: ModelSpec) -> dict[str, Any]:
    return {**_llama_like(spec, "mistral"), "sliding_window": spec.attention.sliding_window}


def _qwen2(spec: ModelSpec, model_type: str = "qwen2") -> dict[str, Any]:
    return {**_llama_like(spec, model_type), **_layer_types(spec),
            "use_sliding_window": bool(spec.n_local_layers)}


def _qwen3(spec: ModelSpec) -> dict[str, Any]:
    return {**_llama_like(spec, "qwen3"), **_layer_types(spec),
            "use_sliding_window": bool(spec.n_local_layers),
            "attention_bias": spec.attention.qkv_bias}


def _gemma2(spec: ModelSpec) -> dict[str, Any]:
    config = {**_llama_like(spec, "gemma2"), **_layer_types(spec),
              "attention_bias": spec.attention.qkv_bias}
    config["hidden_activation"] = config.pop("hidden_act")
    config.setdefault("layer_types", ["full_attention"] * spec.n_layers)
    return config


def _olmo2(spec: ModelSpec) -> dict[str, Any]:
    return {**_llama_like(spec, "olmo2"), "attention_bias": spec.attention.qkv_bias}


def _moe(spec: ModelSpec, arch: str) -> Any:
    _need(spec.moe is not None, f"moe=None ({arch} is a mixture of experts)")
    return spec.moe


def _mixtral(spec: ModelSpec) -> dict[str, Any]:
    moe = _moe(spec, "mixtral")
    return {**_llama_like(spec, "mixtral"), "intermediate_size": moe.d_expert,
            "num_local_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "sliding_window": spec.attention.sliding_window}


def _qwen_moe(spec: ModelSpec, arch: str) -> dict[str, Any]:
    moe = _moe(spec, arch)
    return {"num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert, "decoder_sparse_step": 1,
            "mlp_only_layers": [i for i, sparse in enumerate(spec.moe_layers) if not sparse]}


def _qwen2_moe(spec: ModelSpec) -> dict[str, Any]:
    moe = _moe(spec, "qwen2_moe")
    _need(moe.n_shared_experts == 1, f"moe.n_shared_experts={moe.n_shared_experts} "
                                     f"(qwen2_moe has exactly one, gated)")
    return {**_qwen2(spec, "qwen2_moe"), **_qwen_moe(spec, "qwen2_moe"),
            "shared_expert_intermediate_size": moe.shared_width,
            "qkv_bias": spec.attention.qkv_bias}


def _qwen3_moe(spec: ModelSpec) -> dict[str, Any]:
    return {**_llama_like(spec, "qwen3_moe"), **_qwen_moe(spec, "qwen3_moe"),
            "attention_bias": spec.attention.qkv_bias,
            "use_sliding_window": bool(spec.n_local_layers),
            "sliding_window": spec.attention.sliding_window}


def _deepseek(spec: ModelSpec, model_type: str) -> dict[str, Any]:
    mla, moe = spec.attention.mla, _moe(spec, model_type)
    _need(mla is not None, f"attention.mla=None ({model_type} uses multi-head latent attention)")
    return {**_base(spec, model_type), "intermediate_size": spec.ffn.d_ff,
            "hidden_act": _gated(spec, model_type),
            "max_position_embeddings": spec.context_length,
            "attention_bias": spec.attention.qkv_bias, **mla.model_dump(),
            "n_routed_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert, "n_shared_experts": moe.n_shared_experts,
            "first_k_dense_replace": moe.first_dense_layers,
            # group-limited routing needs the experts to split into n_group groups
            "n_group": 1, "topk_group": 1}


def _deepseek_v3(spec: ModelSpec) -> dict[str, Any]:
    return {**_deepseek(spec, "deepseek_v3"), "num_nextn_predict_layers": spec.mtp_modules}


def _deepseek_v2(spec: ModelSpec) -> dict[str, Any]:
    return {**_deepseek(spec, "deepseek_v2"), "mlp_bias": False}


def _gpt2(spec: ModelSpec) -> dict[str, Any]:
    h, d = spec.attention.n_heads, spec.d_model
    _need(spec.head_dim_qk * h == d,
          f"attention.head_dim={spec.head_dim_qk} with d_model={d} and {h} heads (gpt2's head "
          f"width is n_embd / n_head = {d / h:g})")
    _need(spec.position.kind == "learned",
          f"position.kind={spec.position.kind!r} (gpt2 learns a position table)")
    return {"model_type": "gpt2", "vocab_size": spec.vocab_size, "n_embd": d,
            "n_layer": spec.n_layers, "n_head": h, "n_positions": spec.position_table,
            "n_inner": spec.ffn.d_ff, "activation_function": _plain(spec, "gpt2"),
            "tie_word_embeddings": spec.tie_embeddings, **_NO_TOKENS}


def _opt(spec: ModelSpec) -> dict[str, Any]:
    _need(spec.position_table >= 3,
          f"position.max_positions={spec.position_table} (opt stores max_position_embeddings "
          f"+ 2 rows)")
    return {**_base(spec, "opt"), "ffn_dim": spec.ffn.d_ff,
            "max_position_embeddings": spec.position_table - 2,
            "do_layer_norm_before": spec.norm.placement == "pre",
            "_remove_final_layer_norm": not spec.norm.final,
            "activation_function": _plain(spec, "opt"), "enable_bias": spec.ffn.bias,
            "word_embed_proj_dim": spec.embedding_width,
            "layer_norm_elementwise_affine": spec.norm.weights}


def _gpt_neox(spec: ModelSpec) -> dict[str, Any]:
    return {**_base(spec, "gpt_neox"), "intermediate_size": spec.ffn.d_ff,
            "hidden_act": _plain(spec, "gpt_neox"),
            "max_position_embeddings": spec.context_length,
            "use_parallel_residual": spec.parallel_block,
            "attention_bias": spec.attention.qkv_bias}


def _falcon(spec: ModelSpec) -> dict[str, Any]:
    h, kv = spec.attention.n_heads, spec.n_kv_heads
    # The new decoder architecture (any KV heads) is always parallel; the old one holds 1 or h
    # KV heads, in parallel with one norm or in sequence.
    new = spec.parallel_block and (spec.parallel_norms == 2 or kv not in (1, h))
    return {**_base(spec, "falcon"), "new_decoder_architecture": new,
            "num_kv_heads": kv, "multi_query": kv == 1, "parallel_attn": spec.parallel_block,
            "num_ln_in_parallel_attn": spec.parallel_norms if new else None,
            "alibi": spec.position.kind == "alibi", "bias": spec.ffn.bias,
            "ffn_hidden_size": spec.ffn.d_ff, "activation": _plain(spec, "falcon"),
            "max_position_embeddings": spec.context_length}


def _bloom(spec: ModelSpec) -> dict[str, Any]:
    return {"model_type": "bloom", "vocab_size": spec.vocab_size, "hidden_size": spec.d_model,
            "n_layer": spec.n_layers, "n_head": spec.attention.n_heads,
            "seq_length": spec.context_length, "tie_word_embeddings": spec.tie_embeddings,
            **_NO_TOKENS}


# Tried in order; the first that round-trips wins (llama before its relatives, so a plain
# Llama-shaped spec gets model_type llama).
WRITERS: dict[str, Callable[[ModelSpec], dict[str, Any]]] = {
    "llama": _llama, "mistral": _mistral, "qwen2": _qwen2, "qwen3": _qwen3,
    "gemma2": _gemma2, "olmo2": _olmo2, "mixtral": _mixtral, "qwen3_moe": _qwen3_moe,
    "qwen2_moe": _qwen2_moe, "deepseek_v3": _deepseek_v3, "deepseek_v2": _deepseek_v2,
    "gpt2": _gpt2, "opt": _opt, "gpt_neox": _gpt_neox, "falcon": _falcon, "bloom": _bloom,
}
WRITERS.update(families.WRITERS)  # calc/hf/family_*.py, after the types above
WRITERS.update(export_layers.WRITERS)  # the per-layer types: last, so a uniform spec keeps its own


# What each architecture is, in the few fields that tell families apart: when no writer fits,
# the error speaks for the architecture most like the spec.
_RMS_ROPE_GATED = {"norm.kind": "rmsnorm", "position.kind": ("rope",), "gated": True}
_LN_PLAIN = {"norm.kind": "layernorm", "gated": False}
_FAMILY: dict[str, dict[str, Any]] = {
    **{arch: {**_RMS_ROPE_GATED, "moe": False, "mla": False}
       for arch in ("llama", "mistral", "qwen2", "qwen3", "gemma2", "olmo2")},
    **{arch: {**_RMS_ROPE_GATED, "moe": True, "mla": False}
       for arch in ("mixtral", "qwen3_moe", "qwen2_moe")},
    **{arch: {**_RMS_ROPE_GATED, "moe": True, "mla": True}
       for arch in ("deepseek_v3", "deepseek_v2")},
    **{arch: {**_LN_PLAIN, "position.kind": ("learned",), "moe": False, "mla": False}
       for arch in ("gpt2", "opt")},
    "gpt_neox": {**_LN_PLAIN, "position.kind": ("rope",), "moe": False, "mla": False},
    "falcon": {**_LN_PLAIN, "position.kind": ("rope", "alibi"), "moe": False, "mla": False},
    "bloom": {**_LN_PLAIN, "position.kind": ("alibi",), "moe": False, "mla": False},
}
_FAMILY.update(families.TRAITS)
_FAMILY.update(export_layers.FAMILY)


def _unlike(spec: ModelSpec, model_type: str) -> int:
    """How many family traits of `model_type` the spec does not share."""
    family = _FAMILY[model_type]
    have = {"norm.kind": spec.norm.kind, "gated": bool(spec.ffn and spec.ffn.gated),
            "moe": spec.moe is not None,
            "mla": spec.attention.mla is not None}
    # a state-space model and a Transformer are never each other's closest architecture
    ssm = 10 * ((spec.mamba is not None) != family.get("ssm", False))
    return (sum(have[key] != family[key] for key in have) + ssm
            + (spec.position.kind not in family["position.kind"]))


def _differences(spec: ModelSpec, model_type: str, config: dict[str, Any]) -> list[str]:
    try:
        back = spec_from_hf_config(config, name=spec.name, where=model_type)
    except CalcError as error:
        return [str(error)]
    want, got = shape(spec), shape(back)
    if model_type == "deepseek_v3" and spec.moe is not None:
        want["moe"] = {**want["moe"], "router_bias": False}  # a buffer there: buffer_params
    return [f"{key}={want[key]!r} ({model_type} gives {got[key]!r})"
            for key in want if want[key] != got[key]]


def hf_config_from_spec(spec: ModelSpec) -> dict[str, Any]:
    """The config dict of the first transformers architecture that builds exactly `spec`.

    Only DeepSeek-V3's routing bias differs, and in parameters only: see buffer_params.
    """
    tried: list[tuple[str, list[str]]] = []
    for model_type, write in WRITERS.items():
        if spec.ffn is None and model_type not in export_layers.WITHOUT_FFN:
            tried.append((model_type, ["layers.ffn_pattern none (an FFN on every layer)"]))
            continue
        try:
            config = write(spec)
        except Unexpressible as reason:
            tried.append((model_type, [str(reason)]))
            continue
        differences = _differences(spec, model_type, config)
        if not differences:
            return config
        tried.append((model_type, differences))
    model_type, differences = min(tried, key=lambda item: (_unlike(spec, item[0]),
                                                           len(item[1])))
    raise CalcError(f"spec {spec.name!r}: no transformers architecture calc writes expresses "
                    f"it exactly; the closest, {model_type}, cannot hold "
                    f"{'; '.join(differences[:3])}")
