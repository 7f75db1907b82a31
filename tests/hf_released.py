"""The released config.json files of tests/data/hf_configs (README.md cites each), which calc
reads every one of, and the default configs it refuses."""

from __future__ import annotations

from pathlib import Path

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
# Every released config here is read (OPT-350m's word_embed_proj_dim was the last refused).
REAL = sorted(CONFIGS.glob("*.json"))

# Default configs calc refuses, and the words it refuses them with: transformers itself cannot
# build them either (tests/test_hf_reference.py checks both refuse).
DEFAULTS_REFUSED_BY_BOTH = {
    "cohere_compass_text": "rope_parameters=",
    "dbrx": "attn_config has no rope_theta",
    "deepseek_v2": "num_experts_per_tok=None",
    "dots1": "n_routed_experts=None",
    # Gemma4AssistantConfig's default text_config is Gemma4TextConfig's, with per-layer
    # embeddings its validate_architecture refuses
    "gemma4_assistant": "hidden_size_per_layer_input=256 must be 0",
    "hunyuan_v1_dense": "head_dim=None",
    "hunyuan_v1_moe": "head_dim=None",
    "lfm2_moe": "layer_types=None",
    "ministral": "head_dim=None",
    "nemotron": "num_key_value_heads=None",
    # every fourth layer indexed_attention, whose QSA indexer Qwen4ExpTextConfig's indexer_*
    # None cannot build (REFUSAL_LAYERS)
    "qwen4_exp_text": "indexer_n_heads=None",
}
# Layers transformers' refusal needs where one layer builds (qwen4_exp_text: its first
# indexed_attention layer is the fourth, full_attention_interval 4)
REFUSAL_LAYERS = {"qwen4_exp_text": 4}
