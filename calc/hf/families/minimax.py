"""MiniMax: minimax_m2 (MiniMax-M2, a mixture of experts with QK-norm over the projections).

minimax (MiniMax-Text-01's lightning-attention hybrid) is refused: calc.hf.unknown.NEEDS.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import experts, llama_like
from calc.spec import ModelSpec


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


def _write_minimax_m2(spec: ModelSpec) -> dict[str, Any]:
    # QK-norm over the projections with experts on every layer and any head width (olmoe's
    # writer holds only heads that span hidden_size, the width of its q_norm).
    moe = experts(spec, "minimax_m2")
    return {**llama_like(spec, "minimax_m2"), "intermediate_size": moe.d_expert,
            "num_local_experts": moe.n_experts, "num_experts_per_tok": moe.top_k}


MINIMAX_M2 = ModelType(
    "minimax_m2", _read_minimax_m2, write=_write_minimax_m2, traits=Traits(moe=True),
    aliases={"num_experts": "num_local_experts"},
    defaults={
        "vocab_size": 200064, "hidden_size": 3072, "intermediate_size": 1536,
        "num_hidden_layers": 62, "num_attention_heads": 48, "num_key_value_heads": 8,
        "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 196608,
        "tie_word_embeddings": False, "num_experts_per_tok": 8, "num_local_experts": 256,
    })
