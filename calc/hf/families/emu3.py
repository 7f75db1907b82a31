"""Emu3 (BAAI): emu3_text_model, the language model of the multimodal emu3 config (read through
it: calc.hf.multimodal), Llama's layers."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads
from calc.hf.model_type import ModelType


def _switch(c: HFConfig, key: str) -> bool:
    """Emu3TextConfig's class attributes attention_bias and mlp_bias (False unless the file
    sets them; not dataclass fields)."""
    return c.flag(key) if c.given(key) else False


def _read_emu3_text_model(c: HFConfig) -> dict[str, Any]:
    # modeling_emu3.py: Llama's attention (attention_bias on q, k, v, o; head_dim from the
    # file, else hidden_size / heads) and MLP (mlp_bias on gate, up, down).
    bias = _switch(c, "attention_bias")
    return decoder(c, heads(c), ffn_bias=_switch(c, "mlp_bias"),
                   attention={"qkv_bias": bias, "out_bias": bias})


# No writer: llama's holds its specs.
EMU3_TEXT_MODEL = ModelType(
    "emu3_text_model", _read_emu3_text_model,
    getattr_fields=("head_dim", "attention_bias", "mlp_bias"),
    defaults={
        "vocab_size": 184622, "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "hidden_act": "silu", "max_position_embeddings": 9216, "tie_word_embeddings": False,
    })
