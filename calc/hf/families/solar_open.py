"""Solar Open (Upstage): solar_open, a mixture of experts on every layer with shared experts."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, top_k
from calc.hf.model_type import ModelType


def _read_solar_open(c: HFConfig) -> dict[str, Any]:
    # modeling_solar_open.py: attention_bias on q, k, v (o_proj has none); every FFN is the
    # MoE: a router without bias (e_score_correction_bias is a buffer), n_routed_experts
    # experts and n_shared_experts shared experts as one MLP of n_shared ×
    # moe_intermediate_size; no dense MLP (the spec's d_ff, unused, is the experts' width).
    n_experts = c.size("n_routed_experts")
    width = c.size("moe_intermediate_size")
    return decoder(c, heads(c), d_ff=width, attention={"qkv_bias": c.flag("attention_bias")},
                   moe={"n_experts": n_experts, "d_expert": width,
                        "top_k": top_k(c, "num_experts_per_tok", n_experts, "n_routed_experts"),
                        "n_shared_experts": c.size("n_shared_experts", minimum=0)})


# No writer: glm4_moe's holds its specs (first_k_dense_replace 0).
SOLAR_OPEN = ModelType(
    "solar_open", _read_solar_open, aliases={"num_local_experts": "n_routed_experts"},
    getattr_fields=(),
    defaults={
        "vocab_size": 196608, "hidden_size": 4096, "num_hidden_layers": 48,
        "num_attention_heads": 64, "num_key_value_heads": 8, "hidden_act": "silu",
        "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "attention_bias": False, "moe_intermediate_size": 1280, "num_experts_per_tok": 8,
        "n_shared_experts": 1, "n_routed_experts": 128, "head_dim": 128,
    })
