"""Aria (Rhymes AI): aria_text, the language model of the multimodal aria config (a mixture of
experts with shared experts on every layer)."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, top_k
from calc.hf.model_type import ModelType


def _read_aria_text(c: HFConfig) -> dict[str, Any]:
    # modeling_aria.py: LlamaAttention (attention_bias on q, k, v, o); every FFN the MoE: a
    # router without bias, moe_num_experts experts of intermediate_size (no bias) and
    # moe_num_shared_experts shared ones as one MLP of num_shared × intermediate_size with
    # mlp_bias. head_dim None is hidden_size / heads (configuration_aria.py).
    if c.flag("mlp_bias"):
        c.fail("mlp_bias=true biases the shared experts but not the routed ones; calc's "
               "ffn.bias covers all of them")
    n_experts = c.size("moe_num_experts")
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias},
                   moe={"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "moe_topk", n_experts, "moe_num_experts"),
                        "n_shared_experts": c.size("moe_num_shared_experts", minimum=0)})


# No writer: deepseek_v3's and glm4_moe's hold experts with shared ones (calc.hf.export).
ARIA_TEXT = ModelType(
    "aria_text", _read_aria_text,
    defaults={
        "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
        "hidden_act": "silu", "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "attention_bias": False, "mlp_bias": False, "head_dim": None, "moe_num_experts": 8,
        "moe_topk": 2, "moe_num_shared_experts": 2,
    })
