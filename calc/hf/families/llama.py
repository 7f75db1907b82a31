"""Llama (Meta): llama and Llama 4's language model, llama4_text (the multimodal llama4 config
is read through it: calc.hf.multimodal).
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, divides, heads, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import ffn_kinds, flags, kinds_of, merge, per_layer
from calc.hf.writing import divisible, experts, layer_types, llama_like
from calc.spec import ModelSpec


# ---- llama ------------------------------------------------------------------------------------
def _read_llama(c: HFConfig) -> dict[str, Any]:
    # modeling_llama.py: attention_bias on q, k, v and o; mlp_bias on gate, up and down.
    divides(c)
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), ffn_bias=c.flag("mlp_bias"),
                   attention={"qkv_bias": bias, "out_bias": bias})


def _write_llama(spec: ModelSpec) -> dict[str, Any]:
    divisible(spec, "llama")
    return {**llama_like(spec, "llama"), "attention_bias": spec.attention.qkv_bias,
            "mlp_bias": spec.ffn.bias}


LLAMA = ModelType(
    "llama", _read_llama, write=_write_llama, traits=Traits(),
    defaults={
        "hidden_act": "silu", "tie_word_embeddings": False, "num_key_value_heads": None,
        "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
        "attention_bias": False, "mlp_bias": False, "head_dim": None,
    })


# ---- llama4_text ------------------------------------------------------------------------------
def _read_llama4_text(c: HFConfig) -> dict[str, Any]:
    # configuration_llama4.py: no_rope_layers[i] = 1 keeps RoPE (default: every
    # no_rope_layer_interval-th layer has none); layer_types default "chunked_attention" on the
    # RoPE layers when attention_chunk_size is set; moe_layers default every
    # interleave_moe_layer_step-th layer. modeling_llama4.py: MoE layers hold the routed experts
    # (intermediate_size), one shared expert of the same width and a router without bias;
    # the other layers a dense MLP of intermediate_size_mlp; q/k go through an L2 norm without
    # weights on the RoPE layers (use_qk_norm); attention_bias on q, k, v, o.
    layers = c.size("num_hidden_layers")
    interval = c.size("no_rope_layer_interval")
    rope = (flags(c, "no_rope_layers", layers) if c["no_rope_layers"]
            else [int((i + 1) % interval != 0) for i in range(layers)])
    if c.given("layer_types"):
        _, kinds = kinds_of(c)
    else:
        chunked = c.given("attention_chunk_size")
        kinds = ["chunked" if r and chunked else "global" for r in rope]
    kinds = [k if r or k != "global" else "nope" for k, r in zip(kinds, rope, strict=True)]
    step = c.size("interleave_moe_layer_step")
    moe_at = (c["moe_layers"] if c["moe_layers"] is not None
              else list(range(step - 1, layers, step)))
    n_experts = c.size("num_local_experts")
    bias = c.flag("attention_bias")
    sparse = [i in moe_at for i in range(layers)]
    spec = decoder(c, heads(c), attention={
        "qkv_bias": bias, "out_bias": bias,
        "qk_norm": "head" if c.flag("use_qk_norm") else "none", "qk_norm_weights": False},
        moe={"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
             "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_local_experts"),
             "n_shared_experts": 1} if any(sparse) else None)
    spec["ffn"]["d_ff"] = c.size("intermediate_size_mlp")
    return merge(spec, per_layer(c, attention=kinds, ffn=ffn_kinds(sparse)))


def _write_llama4_text(spec: ModelSpec) -> dict[str, Any]:
    moe = experts(spec, "llama4_text")
    kinds = spec.attention_kinds
    return {**llama_like(spec, "llama4_text"), "intermediate_size": moe.d_expert,
            "intermediate_size_mlp": spec.ffn.d_ff if spec.ffn else 1,
            "num_local_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_layers": [i for i, sparse in enumerate(spec.moe_layers) if sparse],
            "no_rope_layers": [int(kind != "nope") for kind in kinds],
            "layer_types": layer_types(spec, "llama4_text", "full_attention",
                                       "chunked_attention"),
            "attention_chunk_size": spec.attention.chunk_size,
            "use_qk_norm": spec.attention.qk_norm != "none",
            "attention_bias": spec.attention.qkv_bias}


LLAMA4_TEXT = ModelType(
    "llama4_text", _read_llama4_text, write=_write_llama4_text, traits=Traits(moe=True),
    defaults={
        "vocab_size": 202048, "hidden_size": 5120, "intermediate_size": 8192,
        "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
        "num_key_value_heads": 8, "head_dim": 128, "hidden_act": "silu",
        "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "attention_bias": False, "num_local_experts": 16, "num_experts_per_tok": 1,
        "moe_layers": None, "interleave_moe_layer_step": 1, "use_qk_norm": True,
        "no_rope_layers": None, "no_rope_layer_interval": 4, "attention_chunk_size": 8192,
        "layer_types": None,
    })
