"""XGLM (Meta): xglm, a fairseq decoder with sinusoidal positions."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, heads, layernorm_decoder
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import NO_TOKENS, need, plain
from calc.spec import ModelSpec


def _read_xglm(c: HFConfig) -> dict[str, Any]:
    # modeling_xglm.py: sinusoidal positions (a buffer, offset 2), the embedding scaled by
    # √d (no parameter); LayerNorms before attention and FFN and at the end; q, k, v, out_proj,
    # fc1 and fc2 with biases; the head tied by default.
    if c.flag("add_cross_attention"):
        c.fail("add_cross_attention=true adds encoder-decoder attention; calc counts decoders")
    return layernorm_decoder(c, heads(c, None, head_dim_key=None), c.size("ffn_dim"),
                             c.activation("activation_function", gated=False), True,
                             position={"kind": "sinusoidal"})


def _write_xglm(spec: ModelSpec) -> dict[str, Any]:
    # The one writer of sinusoidal positions (LayerNorm, biases, a plain FFN).
    ffn = spec.ffn
    need(spec.position.kind == "sinusoidal", "position.kind other than sinusoidal (xglm's)")
    assert ffn is not None
    return {"model_type": "xglm", "vocab_size": spec.vocab_size, "d_model": spec.d_model,
            "ffn_dim": ffn.d_ff, "num_layers": spec.n_layers,
            "attention_heads": spec.attention.n_heads,
            "activation_function": plain(spec, "xglm"),
            "max_position_embeddings": spec.context_length,
            "tie_word_embeddings": spec.tie_embeddings, **NO_TOKENS}


XGLM = ModelType(
    "xglm", _read_xglm, write=_write_xglm,
    traits=Traits(norm="layernorm", positions=("sinusoidal",), gated=False),
    aliases={"num_attention_heads": "attention_heads", "hidden_size": "d_model",
             "num_hidden_layers": "num_layers"},
    defaults={
        "vocab_size": 256008, "max_position_embeddings": 2048, "d_model": 1024,
        "ffn_dim": 4096, "num_layers": 24, "attention_heads": 16, "activation_function": "gelu",
        "add_cross_attention": False, "tie_word_embeddings": True,
    })
