"""BLOOM (BigScience): bloom."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, heads, layernorm_decoder
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import NO_TOKENS
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_bloom.py: ALiBi, a LayerNorm on the embeddings, biases everywhere but the head,
    # a 4·d GELU MLP. apply_residual_connection_post_layernorm only moves the residual's
    # source (same weights, same products). ALiBi has no position limit: calc's default sequence
    # length is the config's seq_length (BLOOM's files record their training length, which
    # transformers does not read), else BLOOM's 2,048 (Le Scao et al. 2022, §3.5).
    d = c.size("hidden_size")
    context = c.size("seq_length") if "seq_length" in c.values else 2048
    return layernorm_decoder(c, heads(c, None, "n_head", head_dim_key=None), 4 * d, "gelu",
                             True, context=context, position={"kind": "alibi"},
                             norm={"kind": "layernorm", "placement": "pre", "embedding": True})


def _write(spec: ModelSpec) -> dict[str, Any]:
    return {"model_type": "bloom", "vocab_size": spec.vocab_size, "hidden_size": spec.d_model,
            "n_layer": spec.n_layers, "n_head": spec.attention.n_heads,
            "seq_length": spec.context_length, "tie_word_embeddings": spec.tie_embeddings,
            **NO_TOKENS}


BLOOM = ModelType(
    "bloom", _read, write=_write,
    traits=Traits(norm="layernorm", positions=("alibi",), gated=False),
    aliases={"num_hidden_layers": "n_layer", "num_attention_heads": "n_head"},
    legacy_kwargs={"n_embed": "hidden_size"},
    defaults={
        "vocab_size": 250880, "hidden_size": 64, "n_layer": 2, "n_head": 8,
        "tie_word_embeddings": True,
    })
