"""Mistral AI: mistral, mixtral (its mixture of experts) and ministral (the Mistral 3
multimodal config is read through its text model: calc.hf.multimodal).
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import (
    HFConfig,
    biased_decoder,
    decoder,
    decoder_defaults,
    heads,
    layer_kinds,
    layer_pattern,
    no_null_head_dim,
    top_k,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import experts, llama_like, sliding_fields
from calc.spec import ModelSpec

_LLAMA_LIKE: dict[str, Any] = {
    "hidden_act": "silu", "tie_word_embeddings": False, "num_key_value_heads": None,
}


# ---- mistral ----------------------------------------------------------------------------------
def _read_mistral(c: HFConfig) -> dict[str, Any]:
    # modeling_mistral.py: no biases; every layer uses config.sliding_window (layer_types, if
    # present, is ignored with a warning: configuration_mistral.py).
    window = c.size("sliding_window") if c.given("sliding_window") else None
    return decoder(c, heads(c), attention={"sliding_window": window})


def _write_mistral(spec: ModelSpec) -> dict[str, Any]:
    return {**llama_like(spec, "mistral"), "sliding_window": spec.attention.sliding_window}


MISTRAL = ModelType(
    "mistral", _read_mistral, write=_write_mistral, traits=Traits(),
    defaults={
        **_LLAMA_LIKE, "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "head_dim": None, "sliding_window": 4096,
    })


# ---- mixtral ----------------------------------------------------------------------------------
def _read_mixtral(c: HFConfig) -> dict[str, Any]:
    # modeling_mixtral.py: every layer's FFN is the MoE; router Linear(d, E) without bias.
    spec = _read_mistral(c)
    n_experts = c.size("num_local_experts")
    spec["moe"] = {"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
                   "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_local_experts")}
    return spec


def _write_mixtral(spec: ModelSpec) -> dict[str, Any]:
    moe = experts(spec, "mixtral")
    return {**llama_like(spec, "mixtral"), "intermediate_size": moe.d_expert,
            "num_local_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "sliding_window": spec.attention.sliding_window}


MIXTRAL = ModelType(
    "mixtral", _read_mixtral, write=_write_mixtral, traits=Traits(moe=True),
    aliases={"num_experts": "num_local_experts"},
    defaults={
        **_LLAMA_LIKE, "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "head_dim": None, "sliding_window": None,
        "num_local_experts": 8, "num_experts_per_tok": 2,
    })


# ---- ministral --------------------------------------------------------------------------------
def _read_ministral(c: HFConfig) -> dict[str, Any]:
    # modeling_ministral.py: no biases; configuration_ministral.py: layer_types, else every
    # layer slides. MinistralModel builds the sliding-window mask on every forward, which
    # fails without a sliding_window even when no layer slides.
    no_null_head_dim(c)
    if not c.given("sliding_window"):
        c.fail("sliding_window=None: transformers' Ministral builds a sliding-window mask on "
               "every forward and fails without one")
    default = ["local"] * c.size("num_hidden_layers")
    return biased_decoder(c, False, False, False,
                          attention=layer_pattern(c, layer_kinds(c, default)))


def _write_ministral(spec: ModelSpec) -> dict[str, Any]:
    # Any pattern of sliding and global layers without biases (a window even when none slides).
    kinds = sliding_fields(spec) or {"sliding_window": spec.context_length,
                                     "layer_types": ["full_attention"] * spec.n_layers}
    return {**llama_like(spec, "ministral"), **kinds}


MINISTRAL = ModelType(
    "ministral", _read_ministral, write=_write_ministral, traits=Traits(),
    defaults=decoder_defaults(32000, 4096, 14336, 32, 32, 8, "silu", 131072, False,
                              head_dim=None, sliding_window=4096, layer_types=None))
