"""Apertus (Swiss AI): apertus."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import (
    HFConfig,
    decoder_defaults,
    heads,
    layernorm_decoder,
    no_null_head_dim,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import base, need, plain
from calc.spec import ModelSpec

# Fields of Apertus' release that transformers' ApertusConfig does not read: its model always has
# per-head q/k norms, pre-norms and an MLP without bias. A file asking otherwise is refused.
_FIXED = {"qk_norm": True, "post_norm": False, "mlp_bias": False}


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_apertus.py: LlamaAttention (attention_bias on q, k, v, o) with RMSNorm over each
    # head's queries and keys (q_norm, k_norm of head_dim); a plain MLP up_proj → act →
    # down_proj without bias; hidden_act xielu is XIELUActivation, whose alpha_p and alpha_n
    # are parameters of shape (1,) in every MLP (activations.py).
    no_null_head_dim(c)
    for key, value in _FIXED.items():
        if c.values.get(key, value) != value:
            c.fail(f"{key}={c.values[key]!r}: transformers' apertus always builds "
                   f"{key}={value!r}; the checkpoint's own code would count differently")
    act = "xielu" if c["hidden_act"] == "xielu" else c.activation("hidden_act", gated=False)
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"), act,
                             c.flag("attention_bias"),
                             norm={"kind": "rmsnorm", "placement": "pre"},
                             position={"kind": "rope"})
    spec["ffn"]["bias"] = False
    spec["attention"]["qk_norm"] = "head"
    return spec


def _write(spec: ModelSpec) -> dict[str, Any]:
    # Per-head q/k norms, a plain MLP without bias, xIELU or a fixed activation.
    need(spec.attention.qk_norm == "head", f"attention.qk_norm={spec.attention.qk_norm!r} "
         f"(apertus normalises each head's queries and keys)")
    ffn = spec.ffn
    act = "xielu" if ffn is not None and ffn.activation == "xielu" else plain(spec, "apertus")
    return {**base(spec, "apertus"), "num_key_value_heads": spec.n_kv_heads,
            "head_dim": spec.head_dim_qk, "intermediate_size": spec.ffn.d_ff,
            "hidden_act": act, "max_position_embeddings": spec.context_length,
            "attention_bias": spec.attention.qkv_bias}


APERTUS = ModelType(
    "apertus", _read, write=_write, traits=Traits(gated=False), getattr_fields=("head_dim",),
    defaults=decoder_defaults(131072, 4096, 14336, 32, 32, None, "xielu", 65536, False,
                              attention_bias=False))
