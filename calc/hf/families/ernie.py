"""ERNIE (Baidu): ernie4_5 and ernie4_5_moe."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, biased_decoder, decoder, decoder_defaults, heads, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import moe_layout
from calc.hf.writing import experts, llama_like
from calc.spec import ModelSpec


# ---- ernie4_5 ---------------------------------------------------------------------------------
def _read_ernie4_5(c: HFConfig) -> dict[str, Any]:
    # modeling_ernie4_5.py: use_bias on q, k, v, o and the MLP.
    bias = c.flag("use_bias")
    return biased_decoder(c, bias, bias, bias)


# No writer: seed_oss's writer holds every spec it reads.
ERNIE4_5 = ModelType(
    "ernie4_5", _read_ernie4_5,
    defaults=decoder_defaults(103424, 1024, 3072, 18, 16, 2, "silu", 131072, True,
                              use_bias=False, head_dim=128))


# ---- ernie4_5_moe -----------------------------------------------------------------------------
def _read_ernie4_5_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_ernie4_5_moe.py: use_bias on q, k, v, o, the dense and shared MLPs and the LM
    # head, not on the routed experts; MoE on layers moe_layer_start_index..end_index (-1: the
    # last) every moe_layer_interval-th; a router without bias whose e_score_correction_bias is
    # a parameter (E values a layer); moe_num_shared_experts shared experts as one MLP.
    if c.flag("use_bias"):
        c.fail("use_bias=true biases the dense and shared MLPs but not the routed experts; "
               "calc's ffn.bias covers all of them")
    layers = c.size("num_hidden_layers")
    start, end = c.size("moe_layer_start_index", 0), c["moe_layer_end_index"]
    end = layers - 1 if end == -1 else c.size("moe_layer_end_index", 0)
    step = c.size("moe_layer_interval")
    sparse = [(i + 1) % step == 0 and start <= i <= end for i in range(layers)]
    n_experts = c.size("moe_num_experts")
    placement, placed = moe_layout(c, sparse) if any(sparse) else (None, {})
    moe = placement is not None and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "moe_k", n_experts, "moe_num_experts"), "router_bias": True,
        "n_shared_experts": c.size("moe_num_shared_experts", 0), **(placement or {})}
    return decoder(c, heads(c), moe=moe or None, **placed)


def _write_ernie4_5_moe(spec: ModelSpec) -> dict[str, Any]:
    moe = experts(spec, "ernie4_5_moe")
    sparse = [i for i, s in enumerate(spec.moe_layers) if s]
    return {**llama_like(spec, "ernie4_5_moe"), "moe_num_experts": moe.n_experts,
            "moe_k": moe.top_k, "moe_intermediate_size": moe.d_expert,
            "moe_num_shared_experts": moe.n_shared_experts,
            "moe_layer_start_index": sparse[0], "moe_layer_end_index": sparse[-1],
            "moe_layer_interval": 1, "use_bias": spec.attention.qkv_bias}


ERNIE4_5_MOE = ModelType(
    "ernie4_5_moe", _read_ernie4_5_moe, write=_write_ernie4_5_moe, traits=Traits(moe=True),
    getattr_fields=("head_dim",),
    aliases={"num_experts": "moe_num_experts", "num_experts_per_tok": "moe_k"},
    defaults={
        "vocab_size": 103424, "hidden_size": 2560, "intermediate_size": 12288,
        "num_hidden_layers": 28, "num_attention_heads": 20, "num_key_value_heads": 4,
        "hidden_act": "silu", "max_position_embeddings": 131072, "tie_word_embeddings": True,
        "use_bias": False, "moe_intermediate_size": 1536, "moe_k": 6, "moe_num_experts": 64,
        "moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_end_index": -1,
        "moe_layer_interval": 1,
    })
