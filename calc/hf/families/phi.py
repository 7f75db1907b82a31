"""Phi (Microsoft): phi (Phi-1, Phi-2), phi3 and phimoe (Phi-3.5-MoE).

Partial rotary embeddings (partial_rotary_factor) change no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import (
    HFConfig,
    decoder,
    decoder_defaults,
    heads,
    layernorm_decoder,
    no_null_head_dim,
    top_k,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import experts, llama_like, plain, rope_decoder
from calc.spec import ModelSpec


# ---- phi --------------------------------------------------------------------------------------
def _read_phi(c: HFConfig) -> dict[str, Any]:
    # modeling_phi.py: biases on q, k, v, dense, fc1, fc2 and the LM head; attention and MLP
    # in parallel behind one input_layernorm; qk_layernorm: one LayerNorm (γ, β) of width
    # hidden_size / heads for all query heads, one for all key heads.
    no_null_head_dim(c)
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), True,
                             position={"kind": "rope"}, parallel_block=True, parallel_norms=1,
                             lm_head_bias=True)
    if c.flag("qk_layernorm"):
        width = c.size("hidden_size") // c.size("num_attention_heads")
        if c.given("head_dim") and c["head_dim"] != width:
            c.fail(f"head_dim={c['head_dim']} with qk_layernorm=true: Phi's q/k LayerNorms "
                   f"have width hidden_size / heads = {width}")
        spec["attention"]["qk_norm"] = "head"
    return spec


def _write_phi(spec: ModelSpec) -> dict[str, Any]:
    return {**rope_decoder(spec, "phi", plain(spec, "phi")),
            "qk_layernorm": spec.attention.qk_norm == "head"}


PHI = ModelType(
    "phi", _read_phi, write=_write_phi,
    traits=Traits(norm="layernorm", gated=False), getattr_fields=("head_dim",),
    defaults=decoder_defaults(51200, 2048, 8192, 24, 32, None, "gelu_new", 2048, False,
                              qk_layernorm=False))


# ---- phi3 -------------------------------------------------------------------------------------
def _read_phi3(c: HFConfig) -> dict[str, Any]:
    # modeling_phi3.py: fused qkv_proj and gate_up_proj (the same weights), no biases; every
    # layer uses config.sliding_window.
    window = c.size("sliding_window") if c.given("sliding_window") else None
    return decoder(c, heads(c), attention={"sliding_window": window})


# No writer: Phi-3 is Llama-shaped; llama's and mistral's writers hold every spec it reads.
PHI3 = ModelType(
    "phi3", _read_phi3, getattr_fields=("head_dim",),
    defaults={
        "hidden_act": "silu", "tie_word_embeddings": False, "num_key_value_heads": None,
        "vocab_size": 32064, "hidden_size": 3072, "intermediate_size": 8192,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 4096,
        "sliding_window": None, "head_dim": None,
    })


# ---- phimoe -----------------------------------------------------------------------------------
def _read_phimoe(c: HFConfig) -> dict[str, Any]:
    # modeling_phimoe.py: LayerNorms with β, attention_bias on q, k, v, o, an LM-head bias when
    # lm_head_bias, every FFN the MoE (router without bias); sliding_window on every layer.
    # Its router (sparsemixer) sends every token to exactly two experts.
    bias = c.flag("attention_bias")
    n_experts = c.size("num_local_experts", minimum=2)
    if c["num_experts_per_tok"] != 2:
        c.fail(f"num_experts_per_tok={c['num_experts_per_tok']!r}: Phi-3.5-MoE's sparsemixer "
               f"router picks exactly 2 experts per token whatever this says")
    window = c.size("sliding_window") if c.given("sliding_window") else None
    return decoder(c, heads(c), lm_head_bias=c.flag("lm_head_bias"),
                   attention={"qkv_bias": bias, "out_bias": bias, "sliding_window": window},
                   norm={"kind": "layernorm", "placement": "pre"},
                   moe={"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", n_experts,
                                       "num_local_experts")})


def _write_phimoe(spec: ModelSpec) -> dict[str, Any]:
    moe = experts(spec, "phimoe")
    window = spec.attention.sliding_window if spec.n_local_layers else None
    return {**llama_like(spec, "phimoe"), "intermediate_size": moe.d_expert,
            "num_local_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "attention_bias": spec.attention.qkv_bias, "lm_head_bias": spec.lm_head_bias,
            "sliding_window": window}


PHIMOE = ModelType(
    "phimoe", _read_phimoe, write=_write_phimoe, traits=Traits(norm="layernorm", moe=True),
    getattr_fields=("head_dim",),
    defaults={
        "vocab_size": 32064, "hidden_size": 4096, "intermediate_size": 6400,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "hidden_act": "silu", "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "sliding_window": None, "num_experts_per_tok": 2, "num_local_experts": 16,
        "attention_bias": False, "lm_head_bias": False,
    })
