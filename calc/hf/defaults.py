"""What transformers assumes for the config.json fields calc reads, per model_type (data only).

A released config.json often leaves fields out; transformers then uses its config class's default,
so calc must too. Every field calc.hf reads is listed here with the default of
`transformers.models.<type>.configuration_<type>.<Type>Config` in TRANSFORMERS_VERSION; None is
"derived from other fields" (the class's __post_init__ or the modeling code does it, and calc.hf
repeats that rule). tests/test_hf_defaults.py compares this table with the installed classes.
"""

from __future__ import annotations

from typing import Any

from calc.hf import defaults_layers as _layers
from calc.hf import family_defaults

TRANSFORMERS_VERSION = "5.24.0"

# Fields every decoder-only type shares, with the values most types use; DEFAULTS overrides them.
_LLAMA_LIKE: dict[str, Any] = {
    "hidden_act": "silu", "tie_word_embeddings": False, "num_key_value_heads": None,
}
_QWEN_WINDOW: dict[str, Any] = {
    "use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 28,
}
_MLA: dict[str, Any] = {
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "kv_lora_rank": 512,
    "q_lora_rank": 1536, "attention_bias": False, "hidden_act": "silu",
    "tie_word_embeddings": False,
}

DEFAULTS: dict[str, dict[str, Any]] = {
    "gpt2": {
        "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
        "n_inner": None, "activation_function": "gelu_new", "add_cross_attention": False,
        "tie_word_embeddings": True,
    },
    "llama": {
        **_LLAMA_LIKE, "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
        "attention_bias": False, "mlp_bias": False, "head_dim": None,
    },
    "mistral": {
        **_LLAMA_LIKE, "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "head_dim": None, "sliding_window": 4096,
    },
    "mixtral": {
        **_LLAMA_LIKE, "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "head_dim": None, "sliding_window": None,
        "num_local_experts": 8, "num_experts_per_tok": 2,
    },
    "qwen2": {
        **_LLAMA_LIKE, **_QWEN_WINDOW, "vocab_size": 151936, "hidden_size": 4096,
        "intermediate_size": 22016, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 32, "max_position_embeddings": 32768, "layer_types": None,
        "head_dim": None,
    },
    "qwen2_moe": {
        **_LLAMA_LIKE, **_QWEN_WINDOW, "vocab_size": 151936, "hidden_size": 2048,
        "intermediate_size": 5632, "num_hidden_layers": 24, "num_attention_heads": 16,
        "num_key_value_heads": 16, "max_position_embeddings": 32768, "layer_types": None,
        "head_dim": None, "qkv_bias": True, "decoder_sparse_step": 1, "mlp_only_layers": None,
        "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632,
    },
    "qwen3": {
        **_LLAMA_LIKE, **_QWEN_WINDOW, "vocab_size": 151936, "hidden_size": 4096,
        "intermediate_size": 22016, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 32, "head_dim": 128, "max_position_embeddings": 32768,
        "attention_bias": False, "layer_types": None,
    },
    "qwen3_moe": {
        **_LLAMA_LIKE, "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 6144,
        "num_hidden_layers": 24, "num_attention_heads": 32, "num_key_value_heads": 4,
        "head_dim": None, "max_position_embeddings": 32768, "attention_bias": False,
        "use_sliding_window": False, "sliding_window": 4096, "decoder_sparse_step": 1,
        "mlp_only_layers": None, "num_experts": 128, "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
    },
    "gemma": {
        **_LLAMA_LIKE, "vocab_size": 256000, "hidden_size": 3072, "intermediate_size": 24576,
        "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16,
        "head_dim": 256, "hidden_act": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
        "tie_word_embeddings": True, "attention_bias": False,
    },
    "gemma2": {
        "vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216,
        "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 8192, "tie_word_embeddings": True, "attention_bias": False,
        "sliding_window": 4096, "layer_types": None,
    },
    "phi3": {
        **_LLAMA_LIKE, "vocab_size": 32064, "hidden_size": 3072, "intermediate_size": 8192,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 4096,
        "sliding_window": None, "head_dim": None,
    },
    "olmo2": {
        **_LLAMA_LIKE, "vocab_size": 50304, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
        "attention_bias": False, "head_dim": None,
    },
    "gpt_neox": {
        "vocab_size": 50432, "hidden_size": 6144, "num_hidden_layers": 44,
        "num_attention_heads": 64, "intermediate_size": 24576, "hidden_act": "gelu",
        "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "use_parallel_residual": True, "attention_bias": True,
    },
    "falcon": {
        "vocab_size": 65024, "hidden_size": 4544, "num_hidden_layers": 32,
        "num_attention_heads": 71, "num_ln_in_parallel_attn": None, "num_kv_heads": None,
        "alibi": False, "new_decoder_architecture": False, "multi_query": True,
        "parallel_attn": True, "bias": False, "max_position_embeddings": 2048,
        "ffn_hidden_size": None, "activation": "gelu", "tie_word_embeddings": True,
    },
    "bloom": {
        "vocab_size": 250880, "hidden_size": 64, "n_layer": 2, "n_head": 8,
        "tie_word_embeddings": True,
    },
    "opt": {
        "vocab_size": 50272, "hidden_size": 768, "num_hidden_layers": 12, "ffn_dim": 3072,
        "max_position_embeddings": 2048, "do_layer_norm_before": True,
        "_remove_final_layer_norm": False, "word_embed_proj_dim": None,
        "num_attention_heads": 12, "activation_function": "relu", "enable_bias": True,
        "layer_norm_elementwise_affine": True, "tie_word_embeddings": True,
    },
    "deepseek_v2": {
        **_MLA, "vocab_size": 102400, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
        "mlp_bias": False, "first_k_dense_replace": 0, "n_routed_experts": 64,
        "n_shared_experts": 2, "num_experts_per_tok": None, "moe_intermediate_size": 1407,
    },
    "deepseek_v3": {
        **_MLA, "vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
        "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
        "n_shared_experts": 1, "n_routed_experts": 256, "num_experts_per_tok": 8,
        "first_k_dense_replace": 3, "max_position_embeddings": 4096, "num_mtp_layers": 1,
    },
}

# Fields that are not in the config class but that the modeling code reads when a config.json
# carries them (`getattr(config, "head_dim", hidden_size // num_attention_heads)`): their
# "default" is absence. The test checks they are still not class fields.
EXTRA_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "qwen2": ("head_dim",), "qwen2_moe": ("head_dim",), "qwen3_moe": ("head_dim",),
    "phi3": ("head_dim",), "olmo2": ("head_dim",),
}

# Other names a config.json may use for a field: {name in the file: name calc reads}. They come
# from each class's `attribute_map` (which transformers resolves on every get and set).
ALIASES: dict[str, dict[str, str]] = {
    "gpt2": {"hidden_size": "n_embd", "max_position_embeddings": "n_positions",
             "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"},
    "mixtral": {"num_experts": "num_local_experts"},
    "qwen3_moe": {"num_local_experts": "num_experts"},
    "bloom": {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head"},
    "deepseek_v2": {"num_experts": "n_routed_experts"},
    "deepseek_v3": {"num_local_experts": "n_routed_experts",
                    "num_nextn_predict_layers": "num_mtp_layers"},
}

# Old keyword names the config classes' __post_init__ still accepts (not in attribute_map).
LEGACY_KWARGS: dict[str, dict[str, str]] = {
    "bloom": {"n_embed": "hidden_size"},
    "falcon": {"n_embed": "hidden_size"},
}


# The model types with per-layer structure keep their tables in calc.hf.defaults_layers, the
# types calc/hf/family_*.py read theirs in calc.hf.family_defaults.
for _table in (_layers, family_defaults):
    DEFAULTS.update(_table.DEFAULTS)
    EXTRA_ATTRIBUTES.update(_table.EXTRA_ATTRIBUTES)
    ALIASES.update(_table.ALIASES)


def supported_types() -> list[str]:
    return sorted(DEFAULTS)
