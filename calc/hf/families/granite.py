"""Granite (IBM): granite, granitemoe and granite_swa (Granite with attention sinks, sliding
and NoPE layers).

The embedding, residual and attention multipliers and logits_scaling scale activations: no
parameter, no matrix product, no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import (
    HFConfig,
    biased_decoder,
    decoder,
    decoder_defaults,
    heads,
    layer_kinds,
    no_null_head_dim,
    top_k,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import merge, per_layer
from calc.hf.writing import llama_like, need
from calc.spec import ModelSpec


# ---- granite ----------------------------------------------------------------------------------
def _read_granite(c: HFConfig) -> dict[str, Any]:
    # modeling_granite.py: LlamaAttention and LlamaMLP (attention_bias on q, k, v, o; mlp_bias);
    # head_dim from the file if it has one (getattr), else hidden_size / heads.
    no_null_head_dim(c)
    bias = c.flag("attention_bias")
    return biased_decoder(c, bias, bias, c.flag("mlp_bias"))


# No writer: seed_oss's writer holds every spec it reads.
GRANITE = ModelType(
    "granite", _read_granite, getattr_fields=("head_dim",),
    defaults=decoder_defaults(32000, 4096, 11008, 32, 32, None, "silu", 2048, False,
                              attention_bias=False, mlp_bias=False))


# ---- granitemoe -------------------------------------------------------------------------------
def _read_granitemoe(c: HFConfig) -> dict[str, Any]:
    # modeling_granitemoe.py: every FFN is the MoE (ParallelExperts of intermediate_size, a
    # router without bias); attention_bias on q, k, v, o; the multipliers are scalars.
    bias = c.flag("attention_bias")
    n_experts = c.size("num_local_experts")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias},
                   moe={"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", n_experts,
                                       "num_local_experts")})


# No writer: mixtral's holds its specs without attention biases; with them no writer does.
GRANITEMOE = ModelType(
    "granitemoe", _read_granitemoe, getattr_fields=("head_dim",),
    defaults={
        "hidden_act": "silu", "num_key_value_heads": None, "vocab_size": 32000,
        "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
        "num_attention_heads": 32, "max_position_embeddings": 2048,
        "tie_word_embeddings": False, "attention_bias": False, "num_local_experts": 8,
        "num_experts_per_tok": 2,
    })


# ---- granite_swa ------------------------------------------------------------------------------
def _read_granite_swa(c: HFConfig) -> dict[str, Any]:
    # modeling_granite_swa.py: Granite (attention_bias on q, k, v, o; mlp_bias) with one sink
    # logit per head in every layer (sinks, num_attention_heads values); configuration_
    # granite_swa.py: layer_types, else every fourth layer (i % 4 == 0) full and the rest
    # sliding; layer_rope_theta[i] = 0 drops RoPE on layer i. A full layer without RoPE is
    # nope; a sliding one stays local, as SmolLM3's (RoPE has no parameter and no matrix
    # product, so the counts are the same).
    no_null_head_dim(c)
    layers = c.size("num_hidden_layers")
    kinds = layer_kinds(c, ["global" if i % 4 == 0 else "local" for i in range(layers)])
    if c.given("layer_rope_theta"):
        thetas = c["layer_rope_theta"]
        if not isinstance(thetas, list) or len(thetas) != layers:
            c.fail(f"layer_rope_theta must list one value per layer ({layers}), got {thetas!r}")
        kinds = [k if theta or k != "global" else "nope"
                 for k, theta in zip(kinds, thetas, strict=True)]
    bias = c.flag("attention_bias")
    spec = biased_decoder(c, bias, bias, c.flag("mlp_bias"), attention={"sinks": True})
    return merge(spec, per_layer(c, attention=kinds))


def _write_granite_swa(spec: ModelSpec) -> dict[str, Any]:
    # The one dense type with attention sinks: any pattern of full, sliding and NoPE layers.
    att = spec.attention
    need(att.sinks, "attention.sinks=False (granite_swa has a sink logit per head)")
    need(att.qkv_bias == att.out_bias, f"attention.out_bias={att.out_bias} with "
         f"attention.qkv_bias={att.qkv_bias} (granite_swa has one attention_bias)")
    kinds = spec.attention_kinds
    need(set(kinds) <= {"global", "local", "nope"}, f"attention kinds {sorted(set(kinds))} "
         f"(granite_swa builds full, sliding and NoPE attention layers)")
    return {**llama_like(spec, "granite_swa"), "attention_bias": att.qkv_bias,
            "mlp_bias": spec.ffn.bias, "sliding_window": att.sliding_window or 128,
            "layer_types": ["sliding_attention" if k == "local" else "full_attention"
                            for k in kinds],
            "layer_rope_theta": [0.0 if k == "nope" else 10000.0 for k in kinds]}


GRANITE_SWA = ModelType(
    "granite_swa", _read_granite_swa, write=_write_granite_swa, traits=Traits(),
    getattr_fields=("head_dim",),
    defaults=decoder_defaults(100352, 2560, 8192, 24, 20, 4, "silu", 8192, True,
                              attention_bias=False, mlp_bias=False, sliding_window=128,
                              layer_types=None, layer_rope_theta=None))
