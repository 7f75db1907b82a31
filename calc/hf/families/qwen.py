"""Qwen (Alibaba): qwen2, qwen2_moe, qwen3, qwen3_moe and qwen3_next (Qwen3-Next's gated
DeltaNet hybrid).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, layer_kinds, layer_pattern, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import LAYER_TYPES, ffn_kinds, kinds_of, merge, moe_layout, per_layer
from calc.hf.writing import experts, layer_types, llama_like, need, sliding_fields
from calc.spec import ModelSpec

_LLAMA_LIKE: dict[str, Any] = {
    "hidden_act": "silu", "tie_word_embeddings": False, "num_key_value_heads": None,
}
_QWEN_WINDOW: dict[str, Any] = {
    "use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 28,
}


def _qwen_kinds(c: HFConfig, slides: Callable[[int, int], bool]) -> list[str]:
    """configuration_qwen2.py, _qwen2_moe.py, _qwen3.py: without use_sliding_window the window
    is None and no layer slides; with it, layer_types if given, else layer i slides when
    slides(i, max_window_layers)."""
    layers = c.size("num_hidden_layers")
    if not (c.flag("use_sliding_window") and c.given("sliding_window")):
        return ["global"] * layers
    first = c.size("max_window_layers", minimum=0)
    return layer_kinds(c, ["local" if slides(i, first) else "global" for i in range(layers)])


def _sparse_layers(c: HFConfig) -> list[bool]:
    # modeling_qwen2_moe.py / _qwen3_moe.py: a layer is MoE unless listed in mlp_only_layers,
    # and only every decoder_sparse_step-th one.
    only = c["mlp_only_layers"] or []
    step = c.size("decoder_sparse_step")
    n_experts = c.size("num_experts", minimum=0)
    return [i not in only and n_experts > 0 and (i + 1) % step == 0
            for i in range(c.size("num_hidden_layers"))]


def _qwen_moe(c: HFConfig, **shared: Any) -> dict[str, Any]:
    """{"moe": ...} and, for an irregular mlp_only_layers, the layers that place it."""
    sparse = _sparse_layers(c)
    if not any(sparse):
        return {"moe": None}
    placement, layers = moe_layout(c, sparse)
    n_experts = c.size("num_experts")
    return {"moe": {"n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
                    "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts"),
                    **placement, **shared}, **layers}


def _moe_fields(spec: ModelSpec, arch: str) -> dict[str, Any]:
    moe = experts(spec, arch)
    return {"num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert, "decoder_sparse_step": 1,
            "mlp_only_layers": [i for i, sparse in enumerate(spec.moe_layers) if not sparse]}


# ---- qwen2 ------------------------------------------------------------------------------------
def _read_qwen2(c: HFConfig) -> dict[str, Any]:
    # modeling_qwen2.py: biases on q, k, v (not o); head_dim from the file if it has one;
    # layers from max_window_layers on slide.
    kinds = _qwen_kinds(c, lambda i, first: i >= first)
    return decoder(c, heads(c), attention={"qkv_bias": True, **layer_pattern(c, kinds)})


def _write_qwen2(spec: ModelSpec, model_type: str = "qwen2") -> dict[str, Any]:
    return {**llama_like(spec, model_type), **sliding_fields(spec),
            "use_sliding_window": bool(spec.n_local_layers)}


QWEN2 = ModelType(
    "qwen2", _read_qwen2, write=_write_qwen2, traits=Traits(), getattr_fields=("head_dim",),
    defaults={
        **_LLAMA_LIKE, **_QWEN_WINDOW, "vocab_size": 151936, "hidden_size": 4096,
        "intermediate_size": 22016, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 32, "max_position_embeddings": 32768, "layer_types": None,
        "head_dim": None,
    })


# ---- qwen2_moe --------------------------------------------------------------------------------
def _read_qwen2_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_qwen2_moe.py: qkv_bias on q, k, v; one shared expert of
    # shared_expert_intermediate_size behind a sigmoid gate Linear(d, 1); the sliding layers are
    # the even-indexed ones below max_window_layers.
    kinds = _qwen_kinds(c, lambda i, first: (i + 1) % 2 == 1 and i < first)
    return decoder(c, heads(c), attention={"qkv_bias": c.flag("qkv_bias"),
                                           **layer_pattern(c, kinds)},
                   **_qwen_moe(c, n_shared_experts=1, shared_expert_gate=True,
                               d_shared=c.size("shared_expert_intermediate_size")))


def _write_qwen2_moe(spec: ModelSpec) -> dict[str, Any]:
    moe = experts(spec, "qwen2_moe")
    need(moe.n_shared_experts == 1, f"moe.n_shared_experts={moe.n_shared_experts} "
                                    f"(qwen2_moe has exactly one, gated)")
    return {**_write_qwen2(spec, "qwen2_moe"), **_moe_fields(spec, "qwen2_moe"),
            "shared_expert_intermediate_size": moe.shared_width,
            "qkv_bias": spec.attention.qkv_bias}


QWEN2_MOE = ModelType(
    "qwen2_moe", _read_qwen2_moe, write=_write_qwen2_moe, traits=Traits(moe=True),
    getattr_fields=("head_dim",),
    defaults={
        **_LLAMA_LIKE, **_QWEN_WINDOW, "vocab_size": 151936, "hidden_size": 2048,
        "intermediate_size": 5632, "num_hidden_layers": 24, "num_attention_heads": 16,
        "num_key_value_heads": 16, "max_position_embeddings": 32768, "layer_types": None,
        "head_dim": None, "qkv_bias": True, "decoder_sparse_step": 1, "mlp_only_layers": None,
        "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632,
    })


# ---- qwen3 ------------------------------------------------------------------------------------
def _read_qwen3(c: HFConfig) -> dict[str, Any]:
    # modeling_qwen3.py: attention_bias on q, k, v, o; RMSNorm over each head's q and k.
    kinds = _qwen_kinds(c, lambda i, first: i >= first)
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={
        "qkv_bias": bias, "out_bias": bias, "qk_norm": "head", **layer_pattern(c, kinds)})


def _write_qwen3(spec: ModelSpec) -> dict[str, Any]:
    return {**llama_like(spec, "qwen3"), **sliding_fields(spec),
            "use_sliding_window": bool(spec.n_local_layers),
            "attention_bias": spec.attention.qkv_bias}


QWEN3 = ModelType(
    "qwen3", _read_qwen3, write=_write_qwen3, traits=Traits(),
    defaults={
        **_LLAMA_LIKE, **_QWEN_WINDOW, "vocab_size": 151936, "hidden_size": 4096,
        "intermediate_size": 22016, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 32, "head_dim": 128, "max_position_embeddings": 32768,
        "attention_bias": False, "layer_types": None,
    })


# ---- qwen3_moe --------------------------------------------------------------------------------
def _read_qwen3_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_qwen3_moe.py: as Qwen3, but every layer slides when use_sliding_window; no
    # shared expert.
    window = c.size("sliding_window") if c.flag("use_sliding_window") else None
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={
        "qkv_bias": bias, "out_bias": bias, "qk_norm": "head", "sliding_window": window},
        **_qwen_moe(c))


def _write_qwen3_moe(spec: ModelSpec) -> dict[str, Any]:
    return {**llama_like(spec, "qwen3_moe"), **_moe_fields(spec, "qwen3_moe"),
            "attention_bias": spec.attention.qkv_bias,
            "use_sliding_window": bool(spec.n_local_layers),
            "sliding_window": spec.attention.sliding_window}


QWEN3_MOE = ModelType(
    "qwen3_moe", _read_qwen3_moe, write=_write_qwen3_moe, traits=Traits(moe=True),
    getattr_fields=("head_dim",), aliases={"num_local_experts": "num_experts"},
    defaults={
        **_LLAMA_LIKE, "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 6144,
        "num_hidden_layers": 24, "num_attention_heads": 32, "num_key_value_heads": 4,
        "head_dim": None, "max_position_embeddings": 32768, "attention_bias": False,
        "use_sliding_window": False, "sliding_window": 4096, "decoder_sparse_step": 1,
        "mlp_only_layers": None, "num_experts": 128, "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
    })


# ---- qwen3_next -------------------------------------------------------------------------------
def _hybrid_layers(c: HFConfig, default: list[str] | None) -> tuple[list[str], list[str]]:
    """Each layer's mixer and attention kind: layer_types, else (configuration_qwen3_next.py,
    _qwen3_5.py) every full_attention_interval-th layer full attention (a key their
    __post_init__ takes and drops), the others linear_attention (gated DeltaNet)."""
    if c.given("layer_types"):
        return kinds_of(c)
    if default is not None:
        return [LAYER_TYPES[t][0] for t in default], [LAYER_TYPES[t][1] for t in default]
    interval = c.size("full_attention_interval") if "full_attention_interval" in c.values else 4
    mixers = ["deltanet" if (i + 1) % interval else "attention"
              for i in range(c.size("num_hidden_layers"))]
    return mixers, ["global" if m == "attention" else "" for m in mixers]


def read_gated_deltanet_hybrid(c: HFConfig, sparse: list[bool], gated: bool = True,
                               default: list[str] | None = None, **spec: Any) -> dict[str, Any]:
    # modeling_qwen3_next.py, _qwen3_5.py, _qwen3_5_moe.py: full attention layers with q_proj
    # giving the queries and a sigmoid output gate (2·h·d_h), q_norm/k_norm per head,
    # attention_bias on q, k, v, o; the other layers gated DeltaNet (Qwen3.5 splits Qwen3-Next's
    # in_proj_qkvz and in_proj_ba into in_proj_qkv, _z, _b and _a: the same weights). FFN: the
    # MoE where `sparse` says (router without bias, one shared expert behind a gate
    # Linear(d, 1)), else the dense MLP. gated False: neither the output gate nor the shared
    # expert's gate (Lara). default: the class's layer_types when the file has none.
    mixers, kinds = _hybrid_layers(c, default)
    n_experts = c.size("num_experts", minimum=0) if any(sparse) else 0
    bias = c.flag("attention_bias")
    moe = any(sparse) and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts"),
        "n_shared_experts": 1, "d_shared": c.size("shared_expert_intermediate_size"),
        "shared_expert_gate": gated}
    read = decoder(c, heads(c), moe=moe or None, attention={
        "qkv_bias": bias, "out_bias": bias, "qk_norm": "head", "output_gate": gated},
        deltanet={"n_k_heads": c.size("linear_num_key_heads"),
                  "n_v_heads": c.size("linear_num_value_heads"),
                  "d_k": c.size("linear_key_head_dim"), "d_v": c.size("linear_value_head_dim"),
                  "d_conv": c.size("linear_conv_kernel_dim")} if "deltanet" in mixers else None,
        **spec)
    return merge(read, per_layer(c, mixers=mixers, attention=kinds, ffn=ffn_kinds(sparse)))


def _read_qwen3_next(c: HFConfig) -> dict[str, Any]:
    # modeling_qwen3_next.py: the MoE unless the layer is in mlp_only_layers or off
    # decoder_sparse_step (with num_experts 0 none is).
    layers = c.size("num_hidden_layers")
    only, step = c["mlp_only_layers"] or [], c.size("decoder_sparse_step")
    n_experts = c.size("num_experts", minimum=0)
    return read_gated_deltanet_hybrid(
        c, [i not in only and n_experts > 0 and (i + 1) % step == 0 for i in range(layers)])


def _write_qwen3_next(spec: ModelSpec) -> dict[str, Any]:
    n, moe = spec.deltanet, spec.moe
    deltanet = n and {"linear_num_key_heads": n.n_k_heads, "linear_num_value_heads": n.n_v_heads,
                      "linear_key_head_dim": n.d_k, "linear_value_head_dim": n.d_v,
                      "linear_conv_kernel_dim": n.d_conv}
    routed = moe and {"num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
                      "moe_intermediate_size": moe.d_expert,
                      "shared_expert_intermediate_size": moe.shared_width,
                      "mlp_only_layers": [i for i, s in enumerate(spec.moe_layers) if not s]}
    return {**llama_like(spec, "qwen3_next"), **(deltanet or {}),
            **(routed or {"num_experts": 0}), "decoder_sparse_step": 1,
            "layer_types": layer_types(spec, "qwen3_next", "full_attention",
                                       "linear_attention"),
            "attention_bias": spec.attention.qkv_bias}


QWEN3_NEXT = ModelType(
    "qwen3_next", _read_qwen3_next, write=_write_qwen3_next, traits=Traits(moe=True),
    defaults={
        "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632,
        "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
        "head_dim": 256, "hidden_act": "silu", "max_position_embeddings": 32768,
        "tie_word_embeddings": False, "attention_bias": False, "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16,
        "linear_num_value_heads": 32, "decoder_sparse_step": 1, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "num_experts_per_tok": 10, "num_experts": 512,
        "mlp_only_layers": None, "layer_types": None,
    })


# ---- qwen3_5_text, qwen3_5_moe_text -----------------------------------------------------------
# Qwen3.5's language models (the multimodal qwen3_5 and qwen3_5_moe configs are read through
# them: calc.hf.multimodal): Qwen3-Next's layers, every FFN the dense MLP (qwen3_5_text) or
# every FFN the MoE (qwen3_5_moe_text, which has no dense MLP and no intermediate_size).
# No writers: qwen3_next's holds their specs.
QWEN3_5_TEXT_DEFAULTS = {
    "vocab_size": 248320, "hidden_act": "silu", "max_position_embeddings": 32768,
    "tie_word_embeddings": False, "attention_bias": False, "head_dim": 256,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "layer_types": None,
}

QWEN3_5_TEXT = ModelType(
    "qwen3_5_text",
    lambda c: read_gated_deltanet_hybrid(c, [False] * c.size("num_hidden_layers")),
    defaults={**QWEN3_5_TEXT_DEFAULTS, "hidden_size": 4096, "intermediate_size": 12288,
              "num_hidden_layers": 32, "num_attention_heads": 16, "num_key_value_heads": 4})


def _read_qwen3_5_moe_text(c: HFConfig) -> dict[str, Any]:
    # The spec's dense d_ff, which no layer uses, is the experts' width.
    return read_gated_deltanet_hybrid(
        c, [True] * c.size("num_hidden_layers"), d_ff=c.size("moe_intermediate_size"))


QWEN3_5_MOE_TEXT = ModelType(
    "qwen3_5_moe_text", _read_qwen3_5_moe_text,
    defaults={**QWEN3_5_TEXT_DEFAULTS, "hidden_size": 2048, "num_hidden_layers": 40,
              "num_attention_heads": 16, "num_key_value_heads": 2, "moe_intermediate_size": 512,
              "shared_expert_intermediate_size": 512, "num_experts_per_tok": 8,
              "num_experts": 256})
