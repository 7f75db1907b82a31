"""Youtu-LLM (Tencent): youtu, DeepSeek-V3's latent attention with a dense MLP on every layer."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder
from calc.hf.model_type import ModelType


def _read_youtu(c: HFConfig) -> dict[str, Any]:
    # modeling_youtu.py: multi-head latent attention (q_lora_rank null projects the queries
    # directly; attention_bias on q_a_proj, kv_a_proj_with_mqa and o_proj; every head its own
    # keys, num_key_value_heads unused) and a LlamaMLP without bias on every layer.
    bias = c.flag("attention_bias")
    return decoder(c, {"n_heads": c.size("num_attention_heads")}, attention={
        "qkv_bias": bias, "out_bias": bias, "mla": {
            "q_lora_rank": c.size("q_lora_rank") if c.given("q_lora_rank") else None,
            "kv_lora_rank": c.size("kv_lora_rank"), "v_head_dim": c.size("v_head_dim"),
            "qk_nope_head_dim": c.size("qk_nope_head_dim", minimum=0),
            "qk_rope_head_dim": c.size("qk_rope_head_dim", minimum=0)}})


# No writer: minicpm3's holds its specs (latent attention with dense MLPs).
YOUTU = ModelType(
    "youtu", _read_youtu,
    defaults={
        "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 6144,
        "num_hidden_layers": 32, "num_attention_heads": 16, "kv_lora_rank": 512,
        "q_lora_rank": 1536, "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128,
        "hidden_act": "silu", "max_position_embeddings": 131072, "tie_word_embeddings": True,
        "attention_bias": False,
    })
