"""Gemma (Google): gemma, gemma2, Gemma 3's language model gemma3_text (the multimodal gemma3
config is read through it: calc.hf.multimodal) and vaultgemma.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, divides, heads, layer_kinds, layer_pattern
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import kinds_of, kinds_or, merge, per_layer
from calc.hf.writing import full_or_sliding, llama_like, sliding_fields
from calc.spec import ModelSpec


# ---- gemma ------------------------------------------------------------------------------------
def _read_gemma(c: HFConfig) -> dict[str, Any]:
    # modeling_gemma.py: head_dim 256 by default; tied; RMSNorm (1 + γ) has d weights too.
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias})


# No writer: Gemma is Llama-shaped, and llama's writer holds every spec it reads.
GEMMA = ModelType(
    "gemma", _read_gemma,
    defaults={
        "vocab_size": 256000, "hidden_size": 3072, "intermediate_size": 24576,
        "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16,
        "head_dim": 256, "hidden_act": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
        "tie_word_embeddings": True, "attention_bias": False,
    })


# ---- gemma2 -----------------------------------------------------------------------------------
def _read_gemma2(c: HFConfig) -> dict[str, Any]:
    # modeling_gemma2.py: four norms a layer (input, post_attention, pre_ and
    # post_feedforward); configuration_gemma2.py: even-indexed layers slide, odd ones are global.
    divides(c)
    bias = c.flag("attention_bias")
    default = ["local" if (i + 1) % 2 else "global" for i in range(c.size("num_hidden_layers"))]
    kinds = layer_kinds(c, default)
    return decoder(c, heads(c), act_key="hidden_activation",
                   attention={"qkv_bias": bias, "out_bias": bias, **layer_pattern(c, kinds)},
                   norm={"kind": "rmsnorm", "placement": "sandwich"})


def _write_gemma2(spec: ModelSpec) -> dict[str, Any]:
    config = {**llama_like(spec, "gemma2"), **sliding_fields(spec),
              "attention_bias": spec.attention.qkv_bias}
    config["hidden_activation"] = config.pop("hidden_act")
    config.setdefault("layer_types", ["full_attention"] * spec.n_layers)
    return config


GEMMA2 = ModelType(
    "gemma2", _read_gemma2, write=_write_gemma2, traits=Traits(),
    defaults={
        "vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216,
        "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 8192, "tie_word_embeddings": True, "attention_bias": False,
        "sliding_window": 4096, "layer_types": None,
    })


# ---- gemma3_text ------------------------------------------------------------------------------
def _read_gemma3_text(c: HFConfig) -> dict[str, Any]:
    # modeling_gemma3.py: Gemma 2's four norms a layer and q_norm/k_norm (Gemma3RMSNorm over
    # head_dim, with weights); configuration_gemma3.py: layer_types, else every
    # sliding_window_pattern-th layer global (default 6). The MLP has no bias; attention_bias
    # is on q, k, v and o. use_bidirectional_attention (EmbeddingGemma) is not a causal LM.
    divides(c)
    if c.flag("use_bidirectional_attention"):
        c.fail("use_bidirectional_attention=true is an encoder (EmbeddingGemma); calc counts "
               "causal language models")
    pattern = c.size("sliding_window_pattern") if "sliding_window_pattern" in c.values else 6
    if c.given("layer_types"):
        _, kinds = kinds_of(c)
    else:
        kinds = ["local" if (i + 1) % pattern else "global"
                 for i in range(c.size("num_hidden_layers"))]
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), act_key="hidden_activation",
                   attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head"},
                   norm={"kind": "rmsnorm", "placement": "sandwich"})
    return merge(spec, per_layer(c, attention=kinds))


def _write_full_or_sliding(spec: ModelSpec, model_type: str) -> dict[str, Any]:
    """Gemma 2's fields with layer_types of full and sliding layers (gemma3_text, vaultgemma)."""
    config = {**llama_like(spec, model_type), **full_or_sliding(spec, model_type),
              "attention_bias": spec.attention.qkv_bias}
    config["hidden_activation"] = config.pop("hidden_act")
    return config


GEMMA3_TEXT = ModelType(
    "gemma3_text", _read_gemma3_text, traits=Traits(),
    write=lambda spec: _write_full_or_sliding(spec, "gemma3_text"),
    defaults={
        "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
        "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 131072, "tie_word_embeddings": True, "attention_bias": False,
        "sliding_window": 4096, "layer_types": None, "use_bidirectional_attention": False,
    })


# ---- vaultgemma -------------------------------------------------------------------------------
def _read_vaultgemma(c: HFConfig) -> dict[str, Any]:
    # modeling_vaultgemma.py: Gemma 2 without its post-sublayer norms (input_layernorm and
    # pre_feedforward_layernorm only), no QK-norm; layers alternate sliding and full
    # (configuration_vaultgemma.py); attention_bias on q, k, v, o.
    kinds = kinds_or(c, lambda i: "local" if (i + 1) % 2 else "global")
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), act_key="hidden_activation",
                   attention={"qkv_bias": bias, "out_bias": bias})
    return merge(spec, per_layer(c, attention=kinds))


VAULTGEMMA = ModelType(
    "vaultgemma", _read_vaultgemma, traits=Traits(),
    write=lambda spec: _write_full_or_sliding(spec, "vaultgemma"),
    defaults={
        "vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216,
        "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 8192, "tie_word_embeddings": True, "attention_bias": False,
        "sliding_window": 4096, "layer_types": None,
    })
