"""BioGPT (Microsoft): biogpt, a fairseq decoder with learned positions."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, heads, layernorm_decoder
from calc.hf.model_type import ModelType


def _read_biogpt(c: HFConfig) -> dict[str, Any]:
    # modeling_biogpt.py: learned positions (max_position_embeddings + 2 rows: offset 2), the
    # embedding scaled by √d (no parameter); LayerNorms before attention and FFN and at the end;
    # q, k, v, out_proj, fc1 and fc2 with biases; output_projection tied by default.
    table = c.size("max_position_embeddings")
    return layernorm_decoder(c, heads(c, None, head_dim_key=None), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), True,
                             position={"kind": "learned", "max_positions": table + 2})


# No writer: opt's holds its specs.
BIOGPT = ModelType(
    "biogpt", _read_biogpt,
    defaults={
        "vocab_size": 42384, "hidden_size": 1024, "num_hidden_layers": 24,
        "num_attention_heads": 16, "intermediate_size": 4096, "hidden_act": "gelu",
        "max_position_embeddings": 1024, "tie_word_embeddings": True,
    })
