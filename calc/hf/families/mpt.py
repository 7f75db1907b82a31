"""MPT (MosaicML): mpt."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, divides, heads
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import NO_TOKENS
from calc.spec import ModelSpec

# transformers' MPT builds one model whatever these say (modeling_mpt.py): a 4·d GELU MLP, no
# biases, ALiBi, one attention kind. A file that asks for another is refused, as the count of
# the checkpoint's own code and transformers' would differ.
_FIXED = {"expansion_ratio": 4, "no_bias": True}
_ATTENTION = {"alibi": True, "qk_ln": False, "attn_type": "multihead_attention"}


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_mpt.py: Wqkv (3·d) and out_proj without bias, LayerNorms without β, up_proj
    # 4·d → GELU → down_proj, ALiBi over max_seq_len, tied by default; learned_pos_emb is not
    # read.
    for key, value in _FIXED.items():
        if c[key] != value:
            c.fail(f"{key}={c[key]!r}: transformers' MPT always builds {key}={value!r}; the "
                   f"checkpoint's own code would count differently")
    attn = c["attn_config"] or {}
    if not isinstance(attn, dict):
        c.fail(f"attn_config={attn!r} must be an object")
    for key, value in _ATTENTION.items():
        if attn.get(key, value) != value:
            c.fail(f"attn_config.{key}={attn[key]!r}: transformers' MPT always uses "
                   f"{key}={value!r}; the checkpoint's own code would count differently")
    divides(c, "n_heads", "d_model")
    d = c.size("d_model")
    return {
        "vocab_size": c["vocab_size"], "d_model": d, "n_layers": c["n_layers"],
        "context_length": c["max_seq_len"],
        "attention": {**heads(c, None, "n_heads", "d_model", None)},
        "ffn": {"activation": "gelu", "d_ff": 4 * d, "bias": False},
        "norm": {"kind": "layernorm", "bias": False, "placement": "pre"},
        "position": {"kind": "alibi"},
        "tie_embeddings": c.flag("tie_word_embeddings"),
    }


def _write(spec: ModelSpec) -> dict[str, Any]:
    return {"model_type": "mpt", "vocab_size": spec.vocab_size, "d_model": spec.d_model,
            "n_heads": spec.attention.n_heads, "n_layers": spec.n_layers,
            "max_seq_len": spec.context_length, "tie_word_embeddings": spec.tie_embeddings,
            **NO_TOKENS}


MPT = ModelType(
    "mpt", _read, write=_write,
    traits=Traits(norm="layernorm", positions=("alibi",), gated=False),
    aliases={"num_attention_heads": "n_heads", "hidden_size": "d_model",
             "num_hidden_layers": "n_layers"},
    defaults={
        "vocab_size": 50368, "d_model": 2048, "n_heads": 16, "n_layers": 24,
        "expansion_ratio": 4, "max_seq_len": 2048, "no_bias": True, "attn_config": None,
        "tie_word_embeddings": True,
    })
