"""Helium (Kyutai): helium."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, biased_decoder, decoder_defaults, no_null_head_dim
from calc.hf.model_type import ModelType


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_helium.py: attention_bias on q, k, v; o_proj is Linear(hidden, hidden) without
    # bias, so heads × head_dim must be hidden_size; mlp_bias on the MLP.
    no_null_head_dim(c)
    h, width = c.size("num_attention_heads"), c.size("head_dim")
    if h * width != c.size("hidden_size"):
        c.fail(f"num_attention_heads={h} × head_dim={width} must equal hidden_size="
               f"{c['hidden_size']} (Helium's o_proj maps hidden_size to hidden_size)")
    return biased_decoder(c, c.flag("attention_bias"), False, c.flag("mlp_bias"))


# No writer: seed_oss's writer holds every spec it reads.
HELIUM = ModelType(
    "helium", _read,
    defaults=decoder_defaults(48000, 2560, 7040, 24, 20, 20, "silu", 4096, False,
                              attention_bias=False, mlp_bias=False, head_dim=128))
