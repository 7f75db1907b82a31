"""transformers' defaults for the fields calc.hf reads of the model types with per-layer
structure (calc.hf.readers_attention, readers_moe, readers_hybrid): data only, read from the
config classes of calc.hf.defaults.TRANSFORMERS_VERSION and checked against them by
tests/test_hf_defaults.py, as calc.hf.defaults is."""

from __future__ import annotations

from typing import Any

DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
        "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 131072, "tie_word_embeddings": True, "attention_bias": False,
        "sliding_window": 4096, "layer_types": None, "use_bidirectional_attention": False,
    },
    "gpt_oss": {
        "vocab_size": 201088, "hidden_size": 2880, "intermediate_size": 2880,
        "num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8,
        "head_dim": 64, "hidden_act": "silu", "max_position_embeddings": 131072,
        "tie_word_embeddings": False, "attention_bias": True, "sliding_window": 128,
        "layer_types": None, "num_local_experts": 128, "num_experts_per_tok": 4,
    },
    "llama4_text": {
        "vocab_size": 202048, "hidden_size": 5120, "intermediate_size": 8192,
        "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
        "num_key_value_heads": 8, "head_dim": 128, "hidden_act": "silu",
        "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "attention_bias": False, "num_local_experts": 16, "num_experts_per_tok": 1,
        "moe_layers": None, "interleave_moe_layer_step": 1, "use_qk_norm": True,
        "no_rope_layers": None, "no_rope_layer_interval": 4, "attention_chunk_size": 8192,
        "layer_types": None,
    },
    "qwen3_next": {
        "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632,
        "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2,
        "head_dim": 256, "hidden_act": "silu", "max_position_embeddings": 32768,
        "tie_word_embeddings": False, "attention_bias": False, "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16,
        "linear_num_value_heads": 32, "decoder_sparse_step": 1, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "num_experts_per_tok": 10, "num_experts": 512,
        "mlp_only_layers": None, "layer_types": None,
    },
    "mamba": {
        "vocab_size": 50280, "hidden_size": 768, "state_size": 16, "num_hidden_layers": 32,
        "expand": 2, "conv_kernel": 4, "use_bias": False, "use_conv_bias": True,
        "time_step_rank": "auto", "tie_word_embeddings": True,
    },
    "mamba2": {
        "num_heads": 128, "head_dim": 64, "vocab_size": 32768, "hidden_size": 4096,
        "state_size": 128, "num_hidden_layers": 64, "expand": 2, "conv_kernel": 4,
        "n_groups": 8, "use_bias": False, "use_conv_bias": True, "tie_word_embeddings": False,
    },
    "olmoe": {
        "vocab_size": 50304, "hidden_size": 2048, "intermediate_size": 2048,
        "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": None,
        "hidden_act": "silu", "max_position_embeddings": 4096, "tie_word_embeddings": False,
        "attention_bias": False, "num_experts": 64, "num_experts_per_tok": 8,
    },
}

_LLAMA = {"hidden_act": "silu", "num_key_value_heads": None}

DEFAULTS.update({
    "olmo3": {
        **_LLAMA, "vocab_size": 50304, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
        "tie_word_embeddings": False, "attention_bias": False, "sliding_window": 4096,
        "layer_types": None,
    },
    "smollm3": {
        "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 11008,
        "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4,
        "hidden_act": "silu", "max_position_embeddings": 32768, "use_sliding_window": False,
        "sliding_window": None, "no_rope_layers": None, "no_rope_layer_interval": 4,
        "layer_types": None, "attention_bias": False, "mlp_bias": False,
        "tie_word_embeddings": True,
    },
    "cohere2": {
        **_LLAMA, "vocab_size": 256000, "hidden_size": 8192, "intermediate_size": 22528,
        "num_hidden_layers": 40, "num_attention_heads": 64, "max_position_embeddings": 8192,
        "tie_word_embeddings": True, "attention_bias": False, "sliding_window": 4096,
        "layer_types": None,
    },
    "exaone4": {
        "vocab_size": 102400, "hidden_size": 4096, "intermediate_size": 16384,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
        "hidden_act": "silu", "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "sliding_window": 4096, "sliding_window_pattern": 4, "layer_types": None,
    },
    "vaultgemma": {
        "vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216,
        "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 8192, "tie_word_embeddings": True, "attention_bias": False,
        "sliding_window": 4096, "layer_types": None,
    },
    "bitnet": {
        "vocab_size": 128256, "hidden_size": 2560, "intermediate_size": 6912,
        "num_hidden_layers": 30, "num_attention_heads": 20, "num_key_value_heads": 5,
        "hidden_act": "relu2", "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "attention_bias": False,
    },
})

DEFAULTS.update({
    "glm4_moe": {
        **_LLAMA, "vocab_size": 151552, "hidden_size": 4096, "intermediate_size": 10944,
        "num_hidden_layers": 46, "num_attention_heads": 96, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "attention_bias": False, "moe_intermediate_size": 1408, "num_experts_per_tok": 8,
        "n_shared_experts": 1, "n_routed_experts": 128, "first_k_dense_replace": 1,
        "use_qk_norm": False, "num_mtp_layers": 1,
    },
    "granitemoe": {
        **_LLAMA, "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
        "tie_word_embeddings": False, "attention_bias": False, "num_local_experts": 8,
        "num_experts_per_tok": 2,
    },
    "phimoe": {
        "vocab_size": 32064, "hidden_size": 4096, "intermediate_size": 6400,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "hidden_act": "silu", "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "sliding_window": None, "num_experts_per_tok": 2, "num_local_experts": 16,
        "attention_bias": False, "lm_head_bias": False,
    },
    "ernie4_5_moe": {
        "vocab_size": 103424, "hidden_size": 2560, "intermediate_size": 12288,
        "num_hidden_layers": 28, "num_attention_heads": 20, "num_key_value_heads": 4,
        "hidden_act": "silu", "max_position_embeddings": 131072, "tie_word_embeddings": True,
        "use_bias": False, "moe_intermediate_size": 1536, "moe_k": 6, "moe_num_experts": 64,
        "moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_end_index": -1,
        "moe_layer_interval": 1,
    },
})

DEFAULTS.update({
    "jamba": {
        "vocab_size": 65536, "tie_word_embeddings": False, "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_act": "silu", "max_position_embeddings": 262144,
        "num_experts_per_tok": 2, "num_experts": 16, "expert_layer_period": 2,
        "expert_layer_offset": 1, "attn_layer_period": 8, "attn_layer_offset": 4,
        "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": "auto",
        "mamba_conv_bias": True, "mamba_proj_bias": False,
    },
    "lfm2": {
        "vocab_size": 65536, "hidden_size": 2560, "intermediate_size": 12288,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 128000, "tie_word_embeddings": True, "conv_bias": False,
        "conv_L_cache": 3, "block_multiple_of": 256, "block_ffn_dim_multiplier": 1.0,
        "block_auto_adjust_ff_dim": True, "full_attn_idxs": None, "layer_types": None,
    },
})

DEFAULTS["falcon_h1"] = {
    "vocab_size": 128000, "tie_word_embeddings": False, "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "hidden_act": "silu", "max_position_embeddings": 8192,
    "mamba_d_ssm": 1024, "mamba_n_heads": 128, "mamba_d_head": "auto", "mamba_n_groups": 1,
    "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_conv_bias": True,
    "mamba_proj_bias": False, "mamba_rms_norm": False, "projectors_bias": False,
    "attention_bias": False, "mlp_bias": False,
}

DEFAULTS["dots1"] = {
    "vocab_size": 152064, "hidden_size": 4608, "intermediate_size": 10944,
    "moe_intermediate_size": 1408, "num_hidden_layers": 62, "num_attention_heads": 32,
    "num_key_value_heads": 32, "n_shared_experts": None, "n_routed_experts": None,
    "num_experts_per_tok": None, "first_k_dense_replace": 0, "hidden_act": "silu",
    "max_position_embeddings": 2048, "tie_word_embeddings": False, "attention_bias": False,
    "sliding_window": 4096, "max_window_layers": 62, "layer_types": None,
}

DEFAULTS["hunyuan_v1_moe"] = {
    "vocab_size": 290943, "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
    "hidden_act": "silu", "max_position_embeddings": 2048, "tie_word_embeddings": False,
    "attention_bias": False, "num_experts": 1, "moe_topk": 1, "head_dim": None,
}

DEFAULTS["dbrx"] = {
    "d_model": 2048, "n_heads": 16, "n_layers": 24, "max_seq_len": 2048, "vocab_size": 32000,
    "attn_config": None, "ffn_config": None, "tie_word_embeddings": False,
}

DEFAULTS["flint"] = {
    "vocab_size": 150144, "hidden_size": 2048, "intermediate_size": 6144,
    "num_hidden_layers": 49, "num_attention_heads": 32, "num_key_value_heads": 4,
    "hidden_act": "silu", "max_position_embeddings": 262144, "tie_word_embeddings": False,
    "sliding_window": 513, "decoder_sparse_step": 1, "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 1024, "num_experts_per_tok": 6, "num_experts": 256,
    "mlp_only_layers": None, "layer_types": None, "head_dim": 128, "attention_bias": False,
}

DEFAULTS["jetmoe"] = {
    "vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 12, "num_key_value_heads": 16,
    "kv_channels": 128, "intermediate_size": 5632, "max_position_embeddings": 4096,
    "activation_function": "silu", "num_local_experts": 8, "num_experts_per_tok": 2,
    "tie_word_embeddings": True,
}

# The modeling code reads them with getattr(config, "head_dim", hidden_size // heads).
EXTRA_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    t: ("head_dim",) for t in ("olmoe", "olmo3", "smollm3", "exaone4", "bitnet", "glm4_moe",
                               "granitemoe", "phimoe", "ernie4_5_moe", "jamba", "lfm2",
                               "falcon_h1", "dots1")}

ALIASES: dict[str, dict[str, str]] = {
    "gpt_oss": {"num_experts": "num_local_experts"},
    "olmoe": {"num_local_experts": "num_experts"},
    "glm4_moe": {"num_local_experts": "n_routed_experts",
                 "num_nextn_predict_layers": "num_mtp_layers"},
    "ernie4_5_moe": {"num_experts": "moe_num_experts", "num_experts_per_tok": "moe_k"},
    "jamba": {"num_local_experts": "num_experts"},
    "dots1": {"num_local_experts": "n_routed_experts"},
    "hunyuan_v1_moe": {"num_experts_per_tok": "moe_topk", "num_local_experts": "num_experts"},
    "jetmoe": {"head_dim": "kv_channels"},
    "dbrx": {"hidden_size": "d_model", "num_attention_heads": "n_heads",
             "num_hidden_layers": "n_layers", "max_position_embeddings": "max_seq_len"},
}
