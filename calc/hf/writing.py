"""What the writers of transformers configs (each ModelType's `write`, calc/hf/families/) share.

A writer maps a ModelSpec onto one architecture's config.json fields, or raises Unexpressible
naming the spec field that architecture cannot hold; calc.hf.export tries them in the
registry's order (calc.hf.registry).
"""

from __future__ import annotations

from typing import Any

from calc.spec import ModelSpec

# Token ids left unset: a spec has no tokenizer, and transformers' defaults (e.g. Phi-3's
# pad_token_id 32000) can fall outside a small vocabulary.
NO_TOKENS = {"pad_token_id": None, "bos_token_id": None, "eos_token_id": None}
GATED_ACT = {"swiglu": "silu", "geglu": "gelu_pytorch_tanh", "reglu": "relu",
             "relu2glu": "relu2"}
PLAIN_ACT = {"gelu": "gelu", "relu": "relu", "silu": "silu", "relu2": "relu2"}


class Unexpressible(Exception):
    """An architecture cannot hold this spec; the message names the field and why."""


def need(condition: bool, message: str) -> None:
    if not condition:
        raise Unexpressible(message)


def gated(spec: ModelSpec, arch: str) -> str:
    ffn = spec.ffn
    need(ffn is not None, f"layers.ffn_pattern none ({arch} has an FFN on every layer)")
    assert ffn is not None
    need(ffn.gated, f"ffn.activation={ffn.activation!r} ({arch}'s FFN is gated)")
    need(ffn.activation in GATED_ACT, f"ffn.activation={ffn.activation!r}")
    return GATED_ACT[ffn.activation]


def plain(spec: ModelSpec, arch: str) -> str:
    ffn = spec.ffn
    need(ffn is not None, f"layers.ffn_pattern none ({arch} has an FFN on every layer)")
    assert ffn is not None
    need(not ffn.gated, f"ffn.activation={ffn.activation!r} ({arch}'s FFN is not gated)")
    need(ffn.activation in PLAIN_ACT, f"ffn.activation={ffn.activation!r}")
    return PLAIN_ACT[ffn.activation]


def base(spec: ModelSpec, model_type: str) -> dict[str, Any]:
    return {"model_type": model_type, "vocab_size": spec.vocab_size,
            "hidden_size": spec.d_model, "num_hidden_layers": spec.n_layers,
            "num_attention_heads": spec.attention.n_heads,
            "tie_word_embeddings": spec.tie_embeddings, **NO_TOKENS}


def sliding_fields(spec: ModelSpec) -> dict[str, Any]:
    """sliding_window and layer_types (full or sliding) when a layer slides, else nothing."""
    kinds = spec.layer_kinds
    if "local" not in kinds:
        return {}
    return {"sliding_window": spec.attention.sliding_window,
            "layer_types": ["sliding_attention" if k == "local" else "full_attention"
                            for k in kinds]}


# (mixer, attention kind) → layer_types entry
_TYPES = {("attention", "global"): "full_attention", ("attention", "nope"): "full_attention",
          ("attention", "local"): "sliding_attention",
          ("attention", "chunked"): "chunked_attention", ("deltanet", ""): "linear_attention",
          ("conv", ""): "conv"}


def layer_types(spec: ModelSpec, arch: str, *allowed: str) -> list[str]:
    """layer_types for the layers' mixers and attention kinds, each one `arch` builds."""
    types = []
    for pair in zip(spec.mixer_kinds, spec.attention_kinds, strict=True):
        need(_TYPES.get(pair) in allowed, f"a {'/'.join(p for p in pair if p)} layer ({arch} "
                                          f"builds {', '.join(allowed)})")
        types.append(_TYPES[pair])
    return types


def window_field(spec: ModelSpec) -> dict[str, Any]:
    """sliding_window when a layer slides."""
    window = spec.attention.sliding_window
    return {"sliding_window": window} if window and spec.n_local_layers else {}


def full_or_sliding(spec: ModelSpec, arch: str) -> dict[str, Any]:
    """layer_types of full and sliding layers only, with the window when one slides."""
    return {**window_field(spec), "layer_types": layer_types(spec, arch, "full_attention",
                                                             "sliding_attention")}


def experts(spec: ModelSpec, arch: str) -> Any:
    """spec.moe, which `arch` (a mixture of experts) needs."""
    need(spec.moe is not None, f"moe=None ({arch} is a mixture of experts)")
    return spec.moe


def one_group(spec: ModelSpec, arch: str) -> dict[str, Any]:
    """n_group and topk_group for `arch`'s DeepSeek-V3 router, all experts in one group. The
    router ranks the groups by the sum of each one's top 2 scores (topk(2) in
    DeepseekV3TopkRouter and its copies, transformers 5.24.0), which cannot run on fewer than
    two experts."""
    moe = experts(spec, arch)
    need(moe.n_experts >= 2, f"moe.n_experts={moe.n_experts} ({arch}'s router sums the two "
                             f"best scores of each expert group: it needs 2 experts or more)")
    return {"n_group": 1, "topk_group": 1}


def one_attention_bias(spec: ModelSpec, arch: str) -> bool:
    """The attention's bias, for an `arch` whose one attention_bias is on q, k, v and o."""
    att = spec.attention
    need(att.qkv_bias == att.out_bias, f"attention.qkv_bias={att.qkv_bias} with out_bias="
                                       f"{att.out_bias} ({arch}'s attention_bias is both)")
    return att.qkv_bias


def divisible(spec: ModelSpec, arch: str) -> None:
    need(spec.d_model % spec.attention.n_heads == 0,
         f"attention.n_heads={spec.attention.n_heads} with d_model={spec.d_model} ({arch} "
         f"needs hidden_size divisible by the heads)")


def same_width(spec: ModelSpec, arch: str) -> None:
    h = spec.attention.n_heads
    need(spec.head_dim_qk * h == spec.d_model,
         f"attention.head_dim={spec.head_dim_qk} with d_model={spec.d_model} and {h} heads "
         f"({arch}'s head width is hidden_size / heads)")


def rope_decoder(spec: ModelSpec, model_type: str, hidden_act: str) -> dict[str, Any]:
    """Fields every decoder with RoPE and GQA in Llama's names shares."""
    assert spec.ffn is not None
    return {**base(spec, model_type), "num_key_value_heads": spec.n_kv_heads,
            "head_dim": spec.head_dim_qk, "intermediate_size": spec.ffn.d_ff,
            "hidden_act": hidden_act, "max_position_embeddings": spec.context_length}


def llama_like(spec: ModelSpec, model_type: str) -> dict[str, Any]:
    """Fields every Llama-shaped type shares (RMSNorm, RoPE, gated FFN, GQA)."""
    return rope_decoder(spec, model_type, gated(spec, model_type))
