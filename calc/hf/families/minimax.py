"""MiniMax: minimax_m2 (MiniMax-M2, a mixture of experts with QK-norm over the projections).

minimax (MiniMax-Text-01's lightning-attention hybrid) is refused: calc.hf.unknown.NEEDS.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, top_k
from calc.hf.model_type import ModelType


def _read_minimax_m2(c: HFConfig) -> dict[str, Any]:
    # modeling_minimax_m2.py: no biases; q_norm and k_norm over the whole projections
    # (num_attention_heads · head_dim and num_key_value_heads · head_dim wide); every FFN is the
    # MoE: a router without bias (e_score_correction_bias is a buffer, not a parameter) and
    # num_local_experts experts of intermediate_size; no sliding window.
    n_experts = c.size("num_local_experts")
    return decoder(c, heads(c), attention={"qk_norm": "projection"},
                   moe={"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", n_experts,
                                       "num_local_experts")})


# No writer: olmoe's holds its specs whose heads span hidden_size (OLMoE's q_norm width).
MINIMAX_M2 = ModelType(
    "minimax_m2", _read_minimax_m2, aliases={"num_experts": "num_local_experts"},
    defaults={
        "vocab_size": 200064, "hidden_size": 3072, "intermediate_size": 1536,
        "num_hidden_layers": 62, "num_attention_heads": 48, "num_key_value_heads": 8,
        "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 196608,
        "tie_word_embeddings": False, "num_experts_per_tok": 8, "num_local_experts": 256,
    })
