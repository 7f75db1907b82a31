"""transformers' defaults for the fields the family readers read (calc.hf.families), data only.

The same table as calc.hf.defaults, for the model types read by calc/hf/family_*.py: the
default of `transformers.models.<type>.configuration_<type>.<Type>Config` in
calc.hf.defaults.TRANSFORMERS_VERSION for every field a reader reads, None where the class
derives it. calc.hf.defaults merges these in; tests/test_hf_defaults.py compares them with the
installed classes.
"""

from __future__ import annotations

from typing import Any

# Fields every Llama-shaped type reads.
_ROPE_DECODER = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                 "num_attention_heads", "num_key_value_heads", "hidden_act",
                 "max_position_embeddings", "tie_word_embeddings")


def _decoder(*values: Any, **more: Any) -> dict[str, Any]:
    """_ROPE_DECODER's fields with `values` in that order, then the type's own fields."""
    return {**dict(zip(_ROPE_DECODER, values, strict=True)), **more}


DEFAULTS: dict[str, dict[str, Any]] = {
    # ---- Llama-shaped (calc.hf.family_llama) -------------------------------------------------
    "granite": _decoder(32000, 4096, 11008, 32, 32, None, "silu", 2048, False,
                        attention_bias=False, mlp_bias=False),
    "internlm3": _decoder(128512, 4096, 10240, 48, 32, 2, "silu", 32768, False,
                          attention_bias=False, mlp_bias=False, head_dim=128),
    "exaone": _decoder(102400, 4096, 14336, 32, 32, 8, "silu", 4096, False,
                       attention_bias=False, mlp_bias=False, head_dim=None),
    "helium": _decoder(48000, 2560, 7040, 24, 20, 20, "silu", 4096, False,
                       attention_bias=False, mlp_bias=False, head_dim=128),
    "seed_oss": _decoder(155136, 4096, 27648, 64, 80, 8, "silu", 524288, False,
                         attention_bias=True, attention_out_bias=False, mlp_bias=False,
                         head_dim=128),
    "ernie4_5": _decoder(103424, 1024, 3072, 18, 16, 2, "silu", 131072, True,
                         use_bias=False, head_dim=128),
    "hunyuan_v1_dense": _decoder(290943, 4096, 11008, 32, 32, None, "silu", 2048, False,
                                 attention_bias=False, head_dim=None),
    "ministral": _decoder(32000, 4096, 14336, 32, 32, 8, "silu", 131072, False,
                          head_dim=None, sliding_window=4096, layer_types=None),
    "glm": _decoder(151552, 4096, 13696, 40, 32, 2, "silu", 131072, False,
                    attention_bias=True, head_dim=128),
    "glm4": _decoder(151552, 4096, 13696, 40, 32, 2, "silu", 131072, False,
                     attention_bias=True, head_dim=128),
    "arcee": _decoder(32000, 2560, 18432, 32, 32, None, "relu2", 4096, False,
                      attention_bias=False, mlp_bias=False, head_dim=None),
    "apertus": _decoder(131072, 4096, 14336, 32, 32, None, "xielu", 65536, False,
                        attention_bias=False),
    "granite_swa": _decoder(100352, 2560, 8192, 24, 20, 4, "silu", 8192, True,
                            attention_bias=False, mlp_bias=False, sliding_window=128,
                            layer_types=None, layer_rope_theta=None),
    "nanochat": _decoder(50304, 768, 8192, 12, 6, None, "relu2", 2048, False,
                         attention_bias=False),
    "minicpm3": {
        "vocab_size": 73448, "hidden_size": 2560, "intermediate_size": 6400,
        "num_hidden_layers": 62, "num_attention_heads": 40, "num_key_value_heads": 40,
        "hidden_act": "silu",
        "max_position_embeddings": 32768, "tie_word_embeddings": True, "attention_bias": False,
        "mlp_bias": False, "q_lora_rank": 768, "kv_lora_rank": 256, "qk_nope_head_dim": 64,
        "qk_rope_head_dim": 32, "v_head_dim": None,
    },
    # ---- LayerNorm decoders with rotary or no positions (calc.hf.family_layernorm) ----------
    "starcoder2": _decoder(49152, 3072, 12288, 30, 24, 2, "gelu_pytorch_tanh", 4096, True,
                           use_bias=True, sliding_window=None),
    "stablelm": _decoder(50304, 2560, 6912, 32, 32, 32, "silu", 4096, False,
                         use_qkv_bias=False, qk_layernorm=False, use_parallel_residual=False),
    "phi": _decoder(51200, 2048, 8192, 24, 32, None, "gelu_new", 2048, False,
                    qk_layernorm=False),
    "nemotron": _decoder(256000, 6144, 24576, 32, 48, None, "relu2", 4096, False,
                         attention_bias=False, mlp_bias=False, head_dim=None),
    "cohere": _decoder(256000, 8192, 22528, 40, 64, None, "silu", 8192, True,
                       attention_bias=False, use_qk_norm=False),
    "olmo": _decoder(50304, 4096, 11008, 32, 32, None, "silu", 2048, False,
                     attention_bias=False),
    "persimmon": {
        "vocab_size": 262144, "hidden_size": 4096, "intermediate_size": 16384,
        "num_hidden_layers": 36, "num_attention_heads": 64, "hidden_act": "relu2",
        "max_position_embeddings": 16384, "tie_word_embeddings": False, "qk_layernorm": True,
    },
    "mpt": {
        "vocab_size": 50368, "d_model": 2048, "n_heads": 16, "n_layers": 24,
        "expansion_ratio": 4, "max_seq_len": 2048, "no_bias": True, "attn_config": None,
        "tie_word_embeddings": True,
    },
    # ---- GPT-2's descendants: learned positions or GPT-J's parallel block (family_gpt) -----
    "gpt_bigcode": {
        "vocab_size": 50257, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
        "n_inner": None, "activation_function": "gelu_pytorch_tanh", "multi_query": True,
        "tie_word_embeddings": True, "add_cross_attention": False,
    },
    "gpt_neo": {
        "vocab_size": 50257, "hidden_size": 2048, "num_heads": 16, "num_layers": 24,
        "max_position_embeddings": 2048, "intermediate_size": None, "window_size": 256,
        "attention_types": None, "activation_function": "gelu_new", "tie_word_embeddings": True,
    },
    "gptj": {
        "vocab_size": 50400, "n_embd": 4096, "n_head": 16, "n_layer": 28, "n_positions": 2048,
        "n_inner": None, "activation_function": "gelu_new", "tie_word_embeddings": False,
    },
    "codegen": {
        "vocab_size": 50400, "n_embd": 4096, "n_head": 16, "n_layer": 28, "n_positions": 2048,
        "n_inner": None, "activation_function": "gelu_new", "tie_word_embeddings": False,
    },
    "openai-gpt": {
        "vocab_size": 40478, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 512,
        "afn": "gelu", "tie_word_embeddings": True,
    },
}

# Read by the modeling code with getattr and a fallback, not class fields (calc.hf.defaults).
EXTRA_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "granite": ("head_dim",), "cohere": ("head_dim",), "starcoder2": ("head_dim",),
    "phi": ("head_dim",), "olmo": ("head_dim",), "apertus": ("head_dim",),
    "nanochat": ("head_dim",), "granite_swa": ("head_dim",),
}

# attribute_map entries of the classes: {name in the file: name calc reads}.
ALIASES: dict[str, dict[str, str]] = {
    "internlm3": {"qkv_bias": "attention_bias", "bias": "mlp_bias"},
    "exaone": {"num_layers": "num_hidden_layers", "activation_function": "hidden_act"},
    "mpt": {"num_attention_heads": "n_heads", "hidden_size": "d_model",
            "num_hidden_layers": "n_layers"},
    "gpt_neo": {"num_attention_heads": "num_heads", "num_hidden_layers": "num_layers"},
    **{model_type: {"hidden_size": "n_embd", "max_position_embeddings": "n_positions",
                    "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}
       for model_type in ("gpt_bigcode", "gptj", "codegen", "openai-gpt")},
}
