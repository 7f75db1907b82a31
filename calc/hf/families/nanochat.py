"""nanochat (Andrej Karpathy): nanochat."""

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


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_nanochat.py: NanoChatRMSNorm has no weight (x·rsqrt(mean(x²)+ε)); one norm
    # module serves right after the embedding and before the head, one before each sublayer,
    # and one over each head's queries and keys after RoPE (q_norm, k_norm). attention_bias on
    # q, k, v, o; a plain MLP fc1 → act → fc2 without bias. final_logit_softcapping scales
    # logits elementwise: no parameter, no matrix product.
    no_null_head_dim(c)
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), c.flag("attention_bias"),
                             norm={"kind": "rmsnorm", "placement": "pre", "weights": False,
                                   "embedding": True},
                             position={"kind": "rope"})
    spec["ffn"]["bias"] = False
    spec["attention"].update(qk_norm="head", qk_norm_weights=False)
    return spec


def _write(spec: ModelSpec) -> dict[str, Any]:
    # The one type whose RMSNorms (a norm after the embedding, weightless q/k norms) have no γ.
    att = spec.attention
    need(att.qk_norm == "head" and not att.qk_norm_weights,
         f"attention.qk_norm={att.qk_norm!r} (nanochat normalises each head's queries and keys "
         f"without weights)")
    need(att.qkv_bias == att.out_bias, f"attention.out_bias={att.out_bias} with "
         f"attention.qkv_bias={att.qkv_bias} (nanochat has one attention_bias)")
    return {**base(spec, "nanochat"), "num_key_value_heads": spec.n_kv_heads,
            "head_dim": spec.head_dim_qk, "intermediate_size": spec.ffn.d_ff,
            "hidden_act": plain(spec, "nanochat"),
            "max_position_embeddings": spec.context_length, "attention_bias": att.qkv_bias}


NANOCHAT = ModelType(
    "nanochat", _read, write=_write, traits=Traits(gated=False), getattr_fields=("head_dim",),
    defaults=decoder_defaults(50304, 768, 8192, 12, 6, None, "relu2", 2048, False,
                              attention_bias=False))
