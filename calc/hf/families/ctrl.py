"""CTRL (Salesforce): ctrl, a decoder with sinusoidal positions and a biased LM head."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, heads, layernorm_decoder
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import NO_TOKENS, need
from calc.spec import ModelSpec


def _read_ctrl(c: HFConfig) -> dict[str, Any]:
    # modeling_ctrl.py: sinusoidal positions (a buffer of n_positions rows), the embedding
    # scaled by √d (no parameter); LayerNorms before attention and FFN and at the end; Wq, Wk,
    # Wv, dense and the FFN (Linear, ReLU, Linear: dff wide) with biases; the LM head tied to
    # the embedding by default, with a bias of vocab_size values.
    return layernorm_decoder(c, heads(c, None, "n_head", "n_embd", None), c.size("dff"),
                             "relu", True, context=c.size("n_positions"),
                             position={"kind": "sinusoidal"}, lm_head_bias=True)


def _write_ctrl(spec: ModelSpec) -> dict[str, Any]:
    # Sinusoidal positions with a biased LM head (xglm's head has none).
    ffn = spec.ffn
    need(spec.lm_head_bias, "lm_head_bias=False (ctrl's LM head has a bias)")
    need(ffn is not None and ffn.activation == "relu", "an FFN other than ReLU (ctrl's)")
    assert ffn is not None
    return {"model_type": "ctrl", "vocab_size": spec.vocab_size,
            "n_positions": spec.context_length, "n_embd": spec.d_model, "dff": ffn.d_ff,
            "n_layer": spec.n_layers, "n_head": spec.attention.n_heads,
            "tie_word_embeddings": spec.tie_embeddings, **NO_TOKENS}


CTRL = ModelType(
    "ctrl", _read_ctrl, write=_write_ctrl,
    traits=Traits(norm="layernorm", positions=("sinusoidal",), gated=False),
    aliases={"max_position_embeddings": "n_positions", "hidden_size": "n_embd",
             "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"},
    defaults={
        "vocab_size": 246534, "n_positions": 256, "n_embd": 1280, "dff": 8192, "n_layer": 48,
        "n_head": 16, "tie_word_embeddings": True,
    })
