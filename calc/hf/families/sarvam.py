"""Sarvam (Sarvam AI): sarvam_mla and sarvam_moe, configuration classes of their own whose models
transformers builds with other types' classes (transformers/models/auto/modeling_auto.py:
sarvam_mla → DeepseekV3ForCausalLM, sarvam_moe → Glm4MoeForCausalLM), so their readers are those
types' readers; only the defaults differ (configuration_sarvam_mla.py, _sarvam_moe.py).

No writers: deepseek_v3's and glm4_moe's hold every spec these read.
"""

from __future__ import annotations

from calc.hf.families.deepseek import DEEPSEEK_V3
from calc.hf.families.glm import GLM4_MOE
from calc.hf.model_type import ModelType

# attribute_map of both classes: the names of the original Sarvam configs beside DeepSeek's
_SARVAM_NAMES = {"num_local_experts": "n_routed_experts", "num_experts": "n_routed_experts",
                 "num_shared_experts": "n_shared_experts",
                 "num_nextn_predict_layers": "num_mtp_layers"}

# ---- sarvam_mla -------------------------------------------------------------------------------
# SarvamMLAConfig.__post_init__ drops the legacy head_dim and q_head_dim keys (derived fields
# of the remote code's format): they change no shape.
SARVAM_MLA = ModelType(
    "sarvam_mla", DEEPSEEK_V3.read, router_bias_buffer=True, aliases=_SARVAM_NAMES,
    getattr_fields=("head_dim", "q_head_dim"),
    defaults={
        "vocab_size": 262144, "hidden_size": 4096, "intermediate_size": 16384,
        "moe_intermediate_size": 2048, "num_hidden_layers": 32, "num_attention_heads": 64,
        "n_shared_experts": 1, "n_routed_experts": 128, "kv_lora_rank": 512,
        "q_lora_rank": None, "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128,
        "num_experts_per_tok": 8, "first_k_dense_replace": 1, "hidden_act": "silu",
        "max_position_embeddings": 4096, "tie_word_embeddings": False, "attention_bias": False,
        "num_mtp_layers": 0,
    })

# ---- sarvam_moe -------------------------------------------------------------------------------
SARVAM_MOE = ModelType(
    "sarvam_moe", GLM4_MOE.read,
    aliases={**_SARVAM_NAMES, "use_qkv_bias": "attention_bias"},
    defaults={
        "vocab_size": 262144, "hidden_size": 4096, "intermediate_size": 8192,
        "num_hidden_layers": 19, "num_attention_heads": 64, "num_key_value_heads": 4,
        "hidden_act": "silu", "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "attention_bias": False, "moe_intermediate_size": 1024, "num_experts_per_tok": 6,
        "n_shared_experts": 1, "n_routed_experts": 128, "first_k_dense_replace": 1,
        "use_qk_norm": True, "num_mtp_layers": 0, "head_dim": 64,
    })
