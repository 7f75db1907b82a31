"""What every writer of a transformers config (calc.hf.export, calc.hf.export_layers and the
family modules) shares.

A writer maps a ModelSpec onto one architecture's config.json fields, or raises Unexpressible
naming the spec field that architecture cannot hold; calc.hf.export tries them in turn.
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


def layer_types(spec: ModelSpec) -> dict[str, Any]:
    kinds = spec.layer_kinds
    if "local" not in kinds:
        return {}
    return {"sliding_window": spec.attention.sliding_window,
            "layer_types": ["sliding_attention" if k == "local" else "full_attention"
                            for k in kinds]}


def llama_like(spec: ModelSpec, model_type: str) -> dict[str, Any]:
    """Fields every Llama-shaped type shares (RMSNorm, RoPE, gated FFN, GQA)."""
    hidden_act = gated(spec, model_type)
    assert spec.ffn is not None
    return {**base(spec, model_type), "num_key_value_heads": spec.n_kv_heads,
            "head_dim": spec.head_dim_qk, "intermediate_size": spec.ffn.d_ff,
            "hidden_act": hidden_act, "max_position_embeddings": spec.context_length}
