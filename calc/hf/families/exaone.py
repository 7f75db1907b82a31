"""EXAONE (LG AI Research): exaone (EXAONE 3, built as Llama) and exaone4."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, biased_decoder, decoder, decoder_defaults, divides, heads
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import kinds_or, merge, per_layer
from calc.hf.writing import full_or_sliding, llama_like
from calc.spec import ModelSpec


# ---- exaone -----------------------------------------------------------------------------------
def _read_exaone(c: HFConfig) -> dict[str, Any]:
    # configuration_exaone.py builds LlamaForCausalLM; validate_architecture wants hidden_size
    # a multiple of the heads.
    divides(c)
    bias = c.flag("attention_bias")
    return biased_decoder(c, bias, bias, c.flag("mlp_bias"))


# No writer: llama's writer holds every spec it reads.
EXAONE = ModelType(
    "exaone", _read_exaone,
    aliases={"num_layers": "num_hidden_layers", "activation_function": "hidden_act"},
    defaults=decoder_defaults(102400, 4096, 14336, 32, 32, 8, "silu", 4096, False,
                              attention_bias=False, mlp_bias=False, head_dim=None))


# ---- exaone4 ----------------------------------------------------------------------------------
def _read_exaone4(c: HFConfig) -> dict[str, Any]:
    # modeling_exaone4.py: q_norm/k_norm per head, norms after each sublayer (post_attention,
    # post_feedforward), no biases; configuration_exaone4.py: layer_types, else every
    # sliding_window_pattern-th layer full (none slides without a sliding_window).
    if not c.given("sliding_window") and not c.given("layer_types"):
        kinds = ["global"] * c.size("num_hidden_layers")
    else:
        pattern = c.size("sliding_window_pattern")
        kinds = kinds_or(c, lambda i: "local" if (i + 1) % pattern else "global")
    spec = decoder(c, heads(c), attention={"qk_norm": "head"},
                   norm={"kind": "rmsnorm", "placement": "reordered"})
    return merge(spec, per_layer(c, attention=kinds))


def _write_exaone4(spec: ModelSpec) -> dict[str, Any]:
    return {**llama_like(spec, "exaone4"), **full_or_sliding(spec, "exaone4")}


EXAONE4 = ModelType(
    "exaone4", _read_exaone4, write=_write_exaone4, traits=Traits(),
    getattr_fields=("head_dim",),
    defaults={
        "vocab_size": 102400, "hidden_size": 4096, "intermediate_size": 16384,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
        "hidden_act": "silu", "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "sliding_window": 4096, "sliding_window_pattern": 4, "layer_types": None,
    })
