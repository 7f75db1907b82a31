"""ModelSpec → config writers for the model types with per-layer structure (the reverse of
calc.hf.readers_attention, readers_moe and readers_hybrid). calc.hf.export tries them after its
own and keeps a config only if it reads back as the same model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calc.hf.writing import NO_TOKENS, gated, llama_like, need
from calc.spec import ModelSpec

# (mixer, attention kind) → layer_types entry
_TYPES = {("attention", "global"): "full_attention", ("attention", "nope"): "full_attention",
          ("attention", "local"): "sliding_attention",
          ("attention", "chunked"): "chunked_attention", ("deltanet", ""): "linear_attention",
          ("conv", ""): "conv"}


def _layer_types(spec: ModelSpec, arch: str, *allowed: str) -> list[str]:
    """layer_types for the layers' mixers and attention kinds, each one `arch` builds."""
    types = []
    for pair in zip(spec.mixer_kinds, spec.attention_kinds, strict=True):
        need(_TYPES.get(pair) in allowed, f"a {'/'.join(p for p in pair if p)} layer ({arch} "
                                          f"builds {', '.join(allowed)})")
        types.append(_TYPES[pair])
    return types


def _windows(spec: ModelSpec) -> dict[str, Any]:
    window = spec.attention.sliding_window
    return {"sliding_window": window} if window and spec.n_local_layers else {}


def _experts(spec: ModelSpec, arch: str) -> Any:
    need(spec.moe is not None, f"moe=None ({arch} is a mixture of experts)")
    return spec.moe


def _gemma3_text(spec: ModelSpec) -> dict[str, Any]:
    config = {**llama_like(spec, "gemma3_text"), **_windows(spec),
              "layer_types": _layer_types(spec, "gemma3_text", "full_attention",
                                          "sliding_attention"),
              "attention_bias": spec.attention.qkv_bias}
    config["hidden_activation"] = config.pop("hidden_act")
    return config


def _gpt_oss(spec: ModelSpec) -> dict[str, Any]:
    moe = _experts(spec, "gpt_oss")
    return {**llama_like(spec, "gpt_oss"), **_windows(spec),
            "layer_types": _layer_types(spec, "gpt_oss", "full_attention", "sliding_attention"),
            "intermediate_size": moe.d_expert, "num_local_experts": moe.n_experts,
            "num_experts_per_tok": moe.top_k, "attention_bias": spec.attention.qkv_bias}


def _llama4_text(spec: ModelSpec) -> dict[str, Any]:
    moe = _experts(spec, "llama4_text")
    kinds = spec.attention_kinds
    return {**llama_like(spec, "llama4_text"), "intermediate_size": moe.d_expert,
            "intermediate_size_mlp": spec.ffn.d_ff if spec.ffn else 1,
            "num_local_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_layers": [i for i, sparse in enumerate(spec.moe_layers) if sparse],
            "no_rope_layers": [int(kind != "nope") for kind in kinds],
            "layer_types": _layer_types(spec, "llama4_text", "full_attention",
                                        "chunked_attention"),
            "attention_chunk_size": spec.attention.chunk_size,
            "use_qk_norm": spec.attention.qk_norm != "none",
            "attention_bias": spec.attention.qkv_bias}


def _qwen3_next(spec: ModelSpec) -> dict[str, Any]:
    n, moe = spec.deltanet, spec.moe
    deltanet = n and {"linear_num_key_heads": n.n_k_heads, "linear_num_value_heads": n.n_v_heads,
                      "linear_key_head_dim": n.d_k, "linear_value_head_dim": n.d_v,
                      "linear_conv_kernel_dim": n.d_conv}
    experts = moe and {"num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
                       "moe_intermediate_size": moe.d_expert,
                       "shared_expert_intermediate_size": moe.shared_width,
                       "mlp_only_layers": [i for i, s in enumerate(spec.moe_layers) if not s]}
    return {**llama_like(spec, "qwen3_next"), **(deltanet or {}),
            **(experts or {"num_experts": 0}), "decoder_sparse_step": 1,
            "layer_types": _layer_types(spec, "qwen3_next", "full_attention", "linear_attention"),
            "attention_bias": spec.attention.qkv_bias}


def _olmoe(spec: ModelSpec) -> dict[str, Any]:
    moe = _experts(spec, "olmoe")
    config = {**llama_like(spec, "olmoe"), "intermediate_size": moe.d_expert,
              "num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
              "attention_bias": spec.attention.qkv_bias}
    config.pop("head_dim")  # not an OLMoE field: its heads are hidden_size / heads wide
    return config


def _mamba_common(spec: ModelSpec, model_type: str, version: int) -> dict[str, Any]:
    m = spec.mamba
    need(m is not None and m.version == version,
          f"mamba.version={m.version if m else None} ({model_type} is Mamba-{version})")
    assert m is not None
    need(m.d_inner % spec.d_model == 0,
          f"mamba.d_inner={m.d_inner} ({model_type} makes it an integer expand × d_model)")
    return {"model_type": model_type, "vocab_size": spec.vocab_size,
            "hidden_size": spec.d_model, "num_hidden_layers": spec.n_layers,
            "expand": m.d_inner // spec.d_model, "state_size": m.d_state,
            "conv_kernel": m.d_conv, "use_bias": m.bias, "use_conv_bias": m.conv_bias,
            "tie_word_embeddings": spec.tie_embeddings, **NO_TOKENS}


def _mamba(spec: ModelSpec) -> dict[str, Any]:
    config = _mamba_common(spec, "mamba", 1)
    assert spec.mamba is not None
    return {**config, "time_step_rank": spec.mamba.dt_rank}


def _mamba2(spec: ModelSpec) -> dict[str, Any]:
    config = _mamba_common(spec, "mamba2", 2)
    m = spec.mamba
    assert m is not None and m.n_heads is not None
    return {**config, "num_heads": m.n_heads, "head_dim": m.d_inner // m.n_heads,
            "n_groups": m.n_groups}


def _sliding(spec: ModelSpec, arch: str) -> dict[str, Any]:
    return {**_windows(spec), "layer_types": _layer_types(spec, arch, "full_attention",
                                                           "sliding_attention")}


def _olmo3(spec: ModelSpec) -> dict[str, Any]:
    return {**llama_like(spec, "olmo3"), **_sliding(spec, "olmo3"),
            "attention_bias": spec.attention.qkv_bias}


def _exaone4(spec: ModelSpec) -> dict[str, Any]:
    return {**llama_like(spec, "exaone4"), **_sliding(spec, "exaone4")}


def _vaultgemma(spec: ModelSpec) -> dict[str, Any]:
    config = {**llama_like(spec, "vaultgemma"), **_sliding(spec, "vaultgemma"),
              "attention_bias": spec.attention.qkv_bias}
    config["hidden_activation"] = config.pop("hidden_act")
    return config


def _cohere2(spec: ModelSpec) -> dict[str, Any]:
    config = {**llama_like(spec, "cohere2"), "attention_bias": spec.attention.qkv_bias,
              **_windows(spec)}
    config["layer_types"] = ["sliding_attention" if kind == "local" else "full_attention"
                             for kind in spec.attention_kinds]
    config.pop("head_dim")  # cohere2's heads are hidden_size / heads wide, whatever is given
    return config


def _bitnet(spec: ModelSpec) -> dict[str, Any]:
    config = {**llama_like(spec, "bitnet"), "attention_bias": spec.attention.qkv_bias}
    config.pop("head_dim")  # attn_sub_norm spans hidden_size: heads × head_dim must be it
    return config


def _glm4_moe(spec: ModelSpec) -> dict[str, Any]:
    moe = _experts(spec, "glm4_moe")
    return {**llama_like(spec, "glm4_moe"), "attention_bias": spec.attention.qkv_bias,
            "use_qk_norm": spec.attention.qk_norm != "none",
            "n_routed_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert, "n_shared_experts": moe.n_shared_experts,
            "first_k_dense_replace": moe.first_dense_layers, "n_group": 1, "topk_group": 1,
            "num_nextn_predict_layers": spec.mtp_modules}


def _dots1(spec: ModelSpec) -> dict[str, Any]:
    moe, att = _experts(spec, "dots1"), spec.attention
    need(att.qkv_bias == att.out_bias, f"attention.qkv_bias={att.qkv_bias} with out_bias="
                                       f"{att.out_bias} (dots1's attention_bias is both)")
    return {**llama_like(spec, "dots1"), "attention_bias": att.qkv_bias,
            **_sliding(spec, "dots1"), "n_routed_experts": moe.n_experts,
            "num_experts_per_tok": moe.top_k, "moe_intermediate_size": moe.d_expert,
            "n_shared_experts": moe.n_shared_experts,
            "first_k_dense_replace": moe.first_dense_layers, "n_group": 1, "topk_group": 1}


def _hunyuan_v1_moe(spec: ModelSpec) -> dict[str, Any]:
    moe, att = _experts(spec, "hunyuan_v1_moe"), spec.attention
    need(att.qkv_bias == att.out_bias, f"attention.qkv_bias={att.qkv_bias} with out_bias="
                                       f"{att.out_bias} (hunyuan_v1_moe's attention_bias is both)")
    return {**llama_like(spec, "hunyuan_v1_moe"), "attention_bias": att.qkv_bias,
            "intermediate_size": moe.d_expert, "num_experts": moe.n_experts,
            "moe_topk": moe.top_k}


def _dbrx(spec: ModelSpec) -> dict[str, Any]:
    moe = _experts(spec, "dbrx")
    need(not spec.tie_embeddings, "tie_embeddings=True (DbrxConfig refuses tied embeddings)")
    return {"model_type": "dbrx", "vocab_size": spec.vocab_size, "d_model": spec.d_model,
            "n_heads": spec.attention.n_heads, "n_layers": spec.n_layers,
            "max_seq_len": spec.context_length, "tie_word_embeddings": False,
            # transformers' DbrxAttention needs both; neither changes a count (DBRX's values)
            "attn_config": {"kv_n_heads": spec.n_kv_heads, "rope_theta": 500000.0,
                            "clip_qkv": 8.0},
            "ffn_config": {"ffn_hidden_size": moe.d_expert, "moe_num_experts": moe.n_experts,
                           "moe_top_k": moe.top_k, "ffn_act_fn": {"name": gated(spec, "dbrx")}},
            **NO_TOKENS}


def _jetmoe(spec: ModelSpec) -> dict[str, Any]:
    moe, att = _experts(spec, "jetmoe"), spec.attention
    need(att.experts == moe.n_experts, f"attention.experts={att.experts} ≠ moe.n_experts="
                                       f"{moe.n_experts} (jetmoe's num_local_experts is both)")
    need(att.n_heads == spec.n_kv_heads * moe.top_k,
         f"attention.n_heads={att.n_heads} ≠ n_kv_heads × moe.top_k (jetmoe routes a token to "
         f"num_experts_per_tok attention and MLP experts alike)")
    config = {**llama_like(spec, "jetmoe"), "kv_channels": spec.head_dim_qk,
              "num_local_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
              "intermediate_size": moe.d_expert}
    config["activation_function"] = config.pop("hidden_act")
    del config["head_dim"], config["num_attention_heads"]  # kv_channels; h_kv × top-k
    return config


def _phimoe(spec: ModelSpec) -> dict[str, Any]:
    moe = _experts(spec, "phimoe")
    window = spec.attention.sliding_window if spec.n_local_layers else None
    return {**llama_like(spec, "phimoe"), "intermediate_size": moe.d_expert,
            "num_local_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "attention_bias": spec.attention.qkv_bias, "lm_head_bias": spec.lm_head_bias,
            "sliding_window": window}


def _ernie4_5_moe(spec: ModelSpec) -> dict[str, Any]:
    moe = _experts(spec, "ernie4_5_moe")
    sparse = [i for i, s in enumerate(spec.moe_layers) if s]
    return {**llama_like(spec, "ernie4_5_moe"), "moe_num_experts": moe.n_experts,
            "moe_k": moe.top_k, "moe_intermediate_size": moe.d_expert,
            "moe_num_shared_experts": moe.n_shared_experts,
            "moe_layer_start_index": sparse[0], "moe_layer_end_index": sparse[-1],
            "moe_layer_interval": 1, "use_bias": spec.attention.qkv_bias}


def _period(flags: list[bool], what: str) -> tuple[int, int]:
    """Jamba's rule: the layers i with i % period == offset (none: a period past the end)."""
    for period in range(1, len(flags) + 2):
        for offset in range(period):
            if all((i % period == offset) == flag for i, flag in enumerate(flags)):
                return period, offset
    need(False, f"{what} on layers {[i for i, f in enumerate(flags) if f]} (jamba places "
                f"them every period-th layer from an offset)")
    raise AssertionError  # need raised


def _jamba(spec: ModelSpec) -> dict[str, Any]:
    m, moe, ffn = spec.mamba, spec.moe, spec.ffn
    need(set(spec.mixer_kinds) <= {"attention", "mamba"}, "mixers other than attention and "
                                                          "mamba (jamba builds those two)")
    attention, every = _period([k == "attention" for k in spec.mixer_kinds], "attention")
    experts, e_every = _period(list(spec.moe_layers), "MoE layers")
    config = {**llama_like(spec, "jamba"), "attn_layer_period": attention,
              "attn_layer_offset": every, "expert_layer_period": experts,
              "expert_layer_offset": e_every, "num_experts": moe.n_experts if moe else 1,
              "num_experts_per_tok": moe.top_k if moe else 1}
    if moe and ffn:
        need(moe.d_expert == ffn.d_ff, f"moe.d_expert={moe.d_expert} ≠ ffn.d_ff={ffn.d_ff} "
                                       f"(jamba's experts are intermediate_size wide)")
    if m is not None:
        need(m.version == 1 and m.d_inner % spec.d_model == 0,
             "a mamba other than Mamba-1 of an integer expand × d_model (jamba's)")
        config.update({"mamba_expand": m.d_inner // spec.d_model, "mamba_d_state": m.d_state,
                       "mamba_d_conv": m.d_conv, "mamba_dt_rank": m.dt_rank,
                       "mamba_conv_bias": m.conv_bias, "mamba_proj_bias": m.bias})
    return config


def _lfm2(spec: ModelSpec) -> dict[str, Any]:
    ffn, conv = spec.ffn, spec.short_conv
    need(ffn is not None and ffn.activation == "swiglu",
         f"ffn.activation={ffn.activation if ffn else None} (lfm2's MLP is SwiGLU)")
    config = {**llama_like(spec, "lfm2"), "block_auto_adjust_ff_dim": False,
              "layer_types": _layer_types(spec, "lfm2", "full_attention", "conv")}
    config.pop("hidden_act")  # not read: Lfm2MLP applies silu
    if conv is not None:
        config.update({"conv_L_cache": conv.d_conv, "conv_bias": conv.bias})
    return config


def _flint(spec: ModelSpec) -> dict[str, Any]:
    # Per-head q/k norms with weights, a sink logit per head, full and sliding layers, and MoE
    # layers with one ungated shared MLP wherever mlp_only_layers leaves them.
    att, moe = spec.attention, spec.moe
    need(att.sinks, "attention.sinks=False (flint has a sink logit per head)")
    need(att.qk_norm == "head" and att.qk_norm_weights, f"attention.qk_norm={att.qk_norm!r} "
         f"(flint normalises each head's queries and keys with weights)")
    need(att.qkv_bias == att.out_bias, f"attention.qkv_bias={att.qkv_bias} with out_bias="
                                       f"{att.out_bias} (flint's attention_bias is both)")
    config = {**llama_like(spec, "flint"), **_windows(spec), "attention_bias": att.qkv_bias,
              "layer_types": _layer_types(spec, "flint", "full_attention", "sliding_attention"),
              "decoder_sparse_step": 1,
              "mlp_only_layers": [i for i, sparse in enumerate(spec.moe_layers) if not sparse]}
    if moe is None:
        return {**config, "num_experts": 0}
    need(moe.n_shared_experts == 1, f"moe.n_shared_experts={moe.n_shared_experts} (flint adds "
                                    f"one shared MLP)")
    return {**config, "num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert,
            "shared_expert_intermediate_size": moe.shared_width}


def _falcon_h1(spec: ModelSpec) -> dict[str, Any]:
    m, att, ffn = spec.mamba, spec.attention, spec.ffn
    need(set(spec.mixer_kinds) == {"attention+mamba"},
         "layers other than attention+mamba (falcon_h1 runs both in every layer)")
    need(m is not None and m.version == 2, "a mamba other than Mamba-2 (falcon_h1's)")
    need(att.qkv_bias == att.out_bias, f"attention.qkv_bias={att.qkv_bias} with out_bias="
                                       f"{att.out_bias} (falcon_h1's attention_bias is both)")
    assert m is not None and m.n_heads is not None and ffn is not None
    return {**llama_like(spec, "falcon_h1"), "attention_bias": att.qkv_bias,
            "mlp_bias": ffn.bias, "mamba_d_ssm": m.d_inner, "mamba_n_heads": m.n_heads,
            "mamba_d_head": m.d_inner // m.n_heads, "mamba_n_groups": m.n_groups,
            "mamba_d_state": m.d_state, "mamba_d_conv": m.d_conv,
            "mamba_conv_bias": m.conv_bias, "mamba_proj_bias": m.bias, "projectors_bias": m.bias,
            "mamba_rms_norm": m.has_gated_norm}


WITHOUT_FFN = ("mamba", "mamba2")  # the writers whose layers have no FFN
WRITERS: dict[str, Callable[[ModelSpec], dict[str, Any]]] = {
    "gemma3_text": _gemma3_text, "olmoe": _olmoe, "gpt_oss": _gpt_oss,
    "llama4_text": _llama4_text, "qwen3_next": _qwen3_next, "mamba": _mamba, "mamba2": _mamba2,
    "olmo3": _olmo3, "exaone4": _exaone4, "vaultgemma": _vaultgemma, "cohere2": _cohere2,
    "bitnet": _bitnet, "glm4_moe": _glm4_moe, "phimoe": _phimoe, "ernie4_5_moe": _ernie4_5_moe,
    "jamba": _jamba, "lfm2": _lfm2, "falcon_h1": _falcon_h1, "dots1": _dots1,
    "hunyuan_v1_moe": _hunyuan_v1_moe, "dbrx": _dbrx, "jetmoe": _jetmoe, "flint": _flint,
}

# Family traits (calc.hf.export._FAMILY) of these writers, for the closest-architecture message.
_ATTENTION = {"norm.kind": "rmsnorm", "position.kind": ("rope",), "gated": True, "mla": False}
FAMILY: dict[str, dict[str, Any]] = {
    "gemma3_text": {**_ATTENTION, "moe": False}, "olmoe": {**_ATTENTION, "moe": True},
    "gpt_oss": {**_ATTENTION, "moe": True}, "llama4_text": {**_ATTENTION, "moe": True},
    "qwen3_next": {**_ATTENTION, "moe": True},
    **{arch: {**_ATTENTION, "moe": False} for arch in ("olmo3", "exaone4", "vaultgemma",
                                                        "bitnet")},
    "cohere2": {**_ATTENTION, "norm.kind": "layernorm", "moe": False},
    "glm4_moe": {**_ATTENTION, "moe": True}, "ernie4_5_moe": {**_ATTENTION, "moe": True},
    "phimoe": {**_ATTENTION, "norm.kind": "layernorm", "moe": True},
    "mamba": {**_ATTENTION, "position.kind": ("none",), "gated": False, "moe": False,
              "ssm": True},
    "mamba2": {**_ATTENTION, "position.kind": ("none",), "gated": False, "moe": False,
               "ssm": True},
    "jamba": {**_ATTENTION, "position.kind": ("none",), "moe": True, "ssm": True},
    "lfm2": {**_ATTENTION, "moe": False},
    "falcon_h1": {**_ATTENTION, "moe": False, "ssm": True},
    "dots1": {**_ATTENTION, "moe": True}, "hunyuan_v1_moe": {**_ATTENTION, "moe": True},
    "dbrx": {**_ATTENTION, "norm.kind": "layernorm", "moe": True},
    "jetmoe": {**_ATTENTION, "moe": True}, "flint": {**_ATTENTION, "moe": True},
}
