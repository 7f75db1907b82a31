"""RWKV-4: rwkv, a stack of RWKV blocks without attention (Peng et al. 2023, "RWKV: Reinventing
RNNs for the Transformer Era", arXiv 2305.13048, §3).

modeling_rwkv.py (transformers 5.24.0): RwkvBlock is LayerNorm ln1 → RwkvSelfAttention (the
time-mix, calc.spec.layers.RwkvSpec) → residual, LayerNorm ln2 → RwkvFeedForward (the
channel-mix) → residual; block 0 has one more LayerNorm, pre_ln, on the embedding (norm.embedding);
ln_out before the head, which is untied unless tie_word_embeddings (RwkvForCausalLM's
_tied_weights_keys). The channel-mix's key hidden_size → intermediate_size and value back,
squared ReLU between them, are a dense relu2 FFN without biases; its receptance and token shift
are counted with the time-mix (calc.formulas.mixers). No position encoding: the recurrence
orders the tokens. context_length is the length the model was trained at (RwkvConfig).
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import NO_TOKENS, need
from calc.spec import ModelSpec


def _read_rwkv(c: HFConfig) -> dict[str, Any]:
    d = c.size("hidden_size")
    # RwkvSelfAttention and RwkvFeedForward: attention_hidden_size, else hidden_size;
    # intermediate_size, else 4 · hidden_size
    width = c.size("attention_hidden_size") if c.given("attention_hidden_size") else d
    d_ff = c.size("intermediate_size") if c.given("intermediate_size") else 4 * d
    return {
        "vocab_size": c.size("vocab_size"), "d_model": d,
        "n_layers": c.size("num_hidden_layers"), "context_length": c.size("context_length"),
        "norm": {"kind": "layernorm", "bias": True, "placement": "pre", "embedding": True},
        "position": {"kind": "none"},
        "ffn": {"activation": "relu2", "d_ff": d_ff, "bias": False},
        "layers": {"mixer_pattern": ["rwkv"], "ffn_pattern": ["dense"]},
        "rwkv": {"d_attention": width},
        "tie_embeddings": c.flag("tie_word_embeddings"),
    }


def _write_rwkv(spec: ModelSpec) -> dict[str, Any]:
    rwkv, ffn, norm = spec.rwkv, spec.ffn, spec.norm
    need(rwkv is not None and set(spec.mixer_kinds) == {"rwkv"},
         f"mixers {sorted(set(spec.mixer_kinds))} (rwkv builds an RWKV time-mix on every layer)")
    assert rwkv is not None
    need(set(spec.ffn_kinds) == {"dense"} and ffn.activation == "relu2" and not ffn.bias,
         f"ffn activation={ffn.activation}, bias={ffn.bias} on {sorted(set(spec.ffn_kinds))} "
         f"layers (rwkv's channel-mix is a dense relu2 FFN without biases on every layer)")
    need(norm.kind == "layernorm" and norm.bias is not False and norm.weights
         and norm.placement == "pre" and norm.embedding and norm.final and not norm.sub_norms,
         "a norm other than rwkv's LayerNorms (ln1, ln2 before each sublayer, pre_ln on the "
         "embedding, ln_out)")
    need(spec.position.kind == "none", f"position.kind={spec.position.kind!r} (rwkv has none)")
    return {"model_type": "rwkv", "vocab_size": spec.vocab_size, "hidden_size": spec.d_model,
            "num_hidden_layers": spec.n_layers, "context_length": spec.context_length,
            "attention_hidden_size": rwkv.d_attention, "intermediate_size": ffn.d_ff,
            "tie_word_embeddings": spec.tie_embeddings, **NO_TOKENS}


RWKV = ModelType(
    "rwkv", _read_rwkv, write=_write_rwkv,
    traits=Traits(norm="layernorm", positions=("none",), gated=False),
    defaults={
        "vocab_size": 50277, "context_length": 1024, "hidden_size": 4096,
        "num_hidden_layers": 32, "attention_hidden_size": None, "intermediate_size": None,
        "tie_word_embeddings": False,
    })
