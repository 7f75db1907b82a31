"""Hunyuan (Tencent): hunyuan_v1_dense and hunyuan_v1_moe (Hunyuan-A13B)."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import (
    HFConfig,
    biased_decoder,
    decoder,
    decoder_defaults,
    heads,
    no_null_head_dim,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import experts, llama_like, one_attention_bias
from calc.spec import ModelSpec


# ---- hunyuan_v1_dense -------------------------------------------------------------------------
def _read_dense(c: HFConfig) -> dict[str, Any]:
    # modeling_hunyuan_v1_dense.py: LlamaAttention (attention_bias on q, k, v, o) with RMSNorm
    # over each head's queries and keys (query_layernorm, key_layernorm); MLP without bias.
    # use_cla (K/V shared across layers) and use_qk_norm are the checkpoint's own code's
    # switches; transformers reads neither, so a file asking for another model is refused.
    no_null_head_dim(c)
    if c.values.get("use_cla", False) is not False:
        c.fail(f"use_cla={c.values['use_cla']!r}: transformers' hunyuan_v1_dense does not "
               f"share K/V across layers; the checkpoint's own code would count differently")
    if c.values.get("use_qk_norm", True) is not True:
        c.fail(f"use_qk_norm={c.values['use_qk_norm']!r}: transformers' hunyuan_v1_dense "
               f"always builds the q/k norms; the checkpoint's own code would not")
    bias = c.flag("attention_bias")
    return biased_decoder(c, bias, bias, False, attention={"qk_norm": "head"})


# No writer: qwen3's writer holds every spec it reads.
HUNYUAN_V1_DENSE = ModelType(
    "hunyuan_v1_dense", _read_dense,
    defaults=decoder_defaults(290943, 4096, 11008, 32, 32, None, "silu", 2048, False,
                              attention_bias=False, head_dim=None))


# ---- hunyuan_v1_moe ---------------------------------------------------------------------------
def _one_value(c: HFConfig, key: str) -> Any:
    """A field the checkpoint's code may list per layer: its one value."""
    value = c[key]
    if isinstance(value, list):
        if len(value) != c.size("num_hidden_layers") or len(set(value)) != 1:
            c.fail(f"{key}={value!r} must list one equal value per layer: calc's MoE has one "
                   f"value for every layer")
        value = value[0]
    return value


def _read_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_hunyuan_v1_moe.py: attention as hunyuan_v1_dense's (attention_bias on q, k, v,
    # o; RMSNorms over each head's queries and keys); every layer's MLP the MoE: a router
    # Linear(d, E) without bias, num_experts experts and one shared MLP, all of
    # intermediate_size, the shared one added ungated. The gate reads moe_topk per layer; the
    # experts read num_experts whole. moe_intermediate_size and num_shared_expert are the
    # checkpoint's own code's fields, which transformers does not read: a file whose values
    # would make that code build another model is refused, as use_cla is for the dense model.
    no_null_head_dim(c)
    width = c.size("intermediate_size")
    if "moe_intermediate_size" in c.values and _one_value(c, "moe_intermediate_size") != width:
        c.fail(f"moe_intermediate_size={c['moe_intermediate_size']!r}: transformers' "
               f"hunyuan_v1_moe builds its experts intermediate_size={width} wide")
    if "num_shared_expert" in c.values and _one_value(c, "num_shared_expert") != 1:
        c.fail(f"num_shared_expert={c['num_shared_expert']!r}: transformers' hunyuan_v1_moe "
               f"builds one shared MLP")
    for key, built in (("use_cla", False), ("use_qk_norm", True), ("use_mixed_mlp_moe", True)):
        if c.values.get(key, built) is not built:
            c.fail(f"{key}={c.values[key]!r}: transformers' hunyuan_v1_moe builds the model "
                   f"with {key}={built}; the checkpoint's own code would count differently")
    if isinstance(c["num_experts"], list):
        c.fail(f"num_experts={c['num_experts']!r}: transformers' hunyuan_v1_moe experts read "
               f"one number")
    n_experts = c.size("num_experts")
    chosen = _one_value(c, "moe_topk")
    if isinstance(chosen, bool) or not isinstance(chosen, int) or not 1 <= chosen <= n_experts:
        c.fail(f"moe_topk={c['moe_topk']!r} must be a whole number from 1 to "
               f"num_experts={n_experts}")
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head"},
                   moe={"n_experts": n_experts, "d_expert": width, "top_k": chosen,
                        "n_shared_experts": 1})


def _write_moe(spec: ModelSpec) -> dict[str, Any]:
    moe = experts(spec, "hunyuan_v1_moe")
    bias = one_attention_bias(spec, "hunyuan_v1_moe")
    return {**llama_like(spec, "hunyuan_v1_moe"), "attention_bias": bias,
            "intermediate_size": moe.d_expert, "num_experts": moe.n_experts,
            "moe_topk": moe.top_k}


HUNYUAN_V1_MOE = ModelType(
    "hunyuan_v1_moe", _read_moe, write=_write_moe, traits=Traits(moe=True),
    aliases={"num_experts_per_tok": "moe_topk", "num_local_experts": "num_experts"},
    defaults={
        "vocab_size": 290943, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
        "hidden_act": "silu", "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "attention_bias": False, "num_experts": 1, "moe_topk": 1, "head_dim": None,
    })
