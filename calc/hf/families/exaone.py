"""EXAONE (LG AI Research): exaone (EXAONE 3, built as Llama) and exaone4."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import (
    HFConfig,
    biased_decoder,
    decoder,
    decoder_defaults,
    divides,
    heads,
    top_k,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import ffn_kinds, kinds_or, merge, per_layer, sparse_layers
from calc.hf.writing import experts, full_or_sliding, llama_like, one_group
from calc.spec import ModelSpec


# ---- exaone -----------------------------------------------------------------------------------
def _read_exaone(c: HFConfig) -> dict[str, Any]:
    # configuration_exaone.py builds LlamaForCausalLM; validate_architecture wants hidden_size
    # a multiple of the heads.
    divides(c)
    bias = c.flag("attention_bias")
    return biased_decoder(c, bias, bias, c.flag("mlp_bias"))


# No writer: llama's writer holds every spec it reads.
EXAONE = ModelType(
    "exaone", _read_exaone,
    aliases={"num_layers": "num_hidden_layers", "activation_function": "hidden_act"},
    defaults=decoder_defaults(102400, 4096, 14336, 32, 32, 8, "silu", 4096, False,
                              attention_bias=False, mlp_bias=False, head_dim=None))


# ---- exaone4 ----------------------------------------------------------------------------------
def _read_exaone4(c: HFConfig) -> dict[str, Any]:
    # modeling_exaone4.py: q_norm/k_norm per head, norms after each sublayer (post_attention,
    # post_feedforward), no biases; configuration_exaone4.py: layer_types, else every
    # sliding_window_pattern-th layer full (none slides without a sliding_window).
    if not c.given("sliding_window") and not c.given("layer_types"):
        kinds = ["global"] * c.size("num_hidden_layers")
    else:
        pattern = c.size("sliding_window_pattern")
        kinds = kinds_or(c, lambda i: "local" if (i + 1) % pattern else "global")
    spec = decoder(c, heads(c), attention={"qk_norm": "head"},
                   norm={"kind": "rmsnorm", "placement": "reordered"})
    return merge(spec, per_layer(c, attention=kinds))


def _write_exaone4(spec: ModelSpec) -> dict[str, Any]:
    return {**llama_like(spec, "exaone4"), **full_or_sliding(spec, "exaone4")}


EXAONE4 = ModelType(
    "exaone4", _read_exaone4, write=_write_exaone4, traits=Traits(),
    getattr_fields=("head_dim",),
    defaults={
        "vocab_size": 102400, "hidden_size": 4096, "intermediate_size": 16384,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
        "hidden_act": "silu", "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "sliding_window": 4096, "sliding_window_pattern": 4, "layer_types": None,
    })


# ---- exaone_moe -------------------------------------------------------------------------------
def _read_exaone_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_exaone_moe.py: q_norm/k_norm per head, no biases, a norm before each sublayer;
    # configuration_exaone_moe.py: layer_types, else every sliding_window_pattern-th layer full
    # and the rest sliding (none without a sliding_window); mlp_layer_types, else the MoE from
    # first_k_dense_replace on: a router without bias (e_score_correction_bias is a buffer),
    # num_experts experts and num_shared_experts shared ones as one MLP of num_shared ×
    # moe_intermediate_size; the dense layers' MLP of intermediate_size.
    layers = c.size("num_hidden_layers")
    if not c.given("sliding_window") and not c.given("layer_types"):
        kinds = ["global"] * layers
    else:
        pattern = c.size("sliding_window_pattern")
        kinds = kinds_or(c, lambda i: "local" if (i + 1) % pattern else "global")
    first = c.size("first_k_dense_replace", minimum=0)
    sparse = sparse_layers(c, [i >= first for i in range(layers)])
    n_experts = c.size("num_experts")
    moe = any(sparse) and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts"),
        "n_shared_experts": c.size("num_shared_experts", minimum=0)}
    spec = decoder(c, heads(c), attention={"qk_norm": "head"}, moe=moe or None)
    return merge(spec, per_layer(c, attention=kinds, ffn=ffn_kinds(sparse)))


def _write_exaone_moe(spec: ModelSpec) -> dict[str, Any]:
    # Sliding and full layers with experts anywhere and per-head QK-norm.
    moe = experts(spec, "exaone_moe")
    return {**llama_like(spec, "exaone_moe"), **full_or_sliding(spec, "exaone_moe"),
            "mlp_layer_types": ["sparse" if sparse else "dense" for sparse in spec.moe_layers],
            "num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert, "num_shared_experts": moe.n_shared_experts,
            **one_group(spec, "exaone_moe")}


EXAONE_MOE = ModelType(
    "exaone_moe", _read_exaone_moe, write=_write_exaone_moe, traits=Traits(moe=True),
    getattr_fields=("head_dim",),
    defaults={  # ExaoneMoeConfig's: Exaone4Config's, and its experts
        **EXAONE4.defaults,
        "mlp_layer_types": None, "first_k_dense_replace": 1, "moe_intermediate_size": 1024,
        "num_experts": 64, "num_experts_per_tok": 8, "num_shared_experts": 1,
    })
