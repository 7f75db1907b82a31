"""Granite (IBM): granite, granitemoe, granitemoeshared (granitemoe with a shared expert),
granitemoehybrid (Granite 4: Mamba-2 and attention layers) and granite_swa (Granite with
attention sinks, sliding and NoPE layers).

The embedding, residual and attention multipliers and logits_scaling scale activations: no
parameter, no matrix product, no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.families.bamba import mamba2, mamba2_fields
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
from calc.hf.writing import experts, llama_like, need, one_attention_bias
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
def _read_granitemoe(c: HFConfig, **shared: Any) -> dict[str, Any]:
    # modeling_granitemoe.py: every FFN is the MoE (ParallelExperts of intermediate_size, a
    # router without bias); attention_bias on q, k, v, o; the multipliers are scalars.
    bias = c.flag("attention_bias")
    n_experts = c.size("num_local_experts")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias},
                   moe={"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", n_experts,
                                       "num_local_experts"), **shared})


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


# ---- granitemoeshared -------------------------------------------------------------------------
def _read_granitemoeshared(c: HFConfig) -> dict[str, Any]:
    # modeling_granitemoeshared.py: GraniteMoe's layers plus, when shared_intermediate_size is
    # not 0, a shared MLP beside the experts (input_linear d → 2 · shared_intermediate_size,
    # gated by hidden_act; output_linear back), added to their output without a gate.
    width = c.size("shared_intermediate_size", minimum=0)
    return _read_granitemoe(c, **({"n_shared_experts": 1, "d_shared": width} if width else {}))


# No writer: granitemoe's specs are mixtral's; with a shared expert qwen2_moe's gate differs.
GRANITEMOESHARED = ModelType(
    "granitemoeshared", _read_granitemoeshared, getattr_fields=("head_dim",),
    defaults={**GRANITEMOE.defaults, "shared_intermediate_size": 0})


# ---- granitemoehybrid -------------------------------------------------------------------------
def _read_granitemoehybrid(c: HFConfig) -> dict[str, Any]:
    # modeling_granitemoehybrid.py: layer_types (default every layer "mamba"): Mamba-2 on
    # "mamba" and "linear_attention" layers (bamba.mamba2), attention on the others
    # (attention_bias on q, k, v, o); RoPE only when position_embedding_type is "rope". The
    # FFN: with num_local_experts > 0 GraniteMoe's experts of intermediate_size plus the shared
    # MLP of shared_intermediate_size (gated, added without a gate), else the shared MLP
    # alone, a dense FFN of that width.
    layers = c.size("num_hidden_layers")
    types = c["layer_types"] if c.given("layer_types") else ["mamba"] * layers
    if not isinstance(types, list) or len(types) != layers:
        c.fail(f"layer_types must list one type per layer ({layers}), got {types!r}")
    mixers = ["mamba" if t in ("mamba", "linear_attention") else "attention" for t in types]
    n_experts = c.size("num_local_experts", minimum=0)
    shared = c.size("shared_intermediate_size")
    moe = n_experts > 0 and {
        "n_experts": n_experts, "d_expert": c.size("intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_local_experts"),
        "n_shared_experts": 1, "d_shared": shared}
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), d_ff=None if moe else shared, moe=moe or None,
                   attention={"qkv_bias": bias, "out_bias": bias},
                   mamba=mamba2(c) if "mamba" in mixers else None)
    if c["position_embedding_type"] != "rope":
        spec["position"] = {"kind": "none"}
    kinds = ["global" if m == "attention" else "" for m in mixers]
    return merge(spec, per_layer(c, mixers=mixers, attention=kinds))


def _write_granitemoehybrid(spec: ModelSpec) -> dict[str, Any]:
    # Mamba-2 and attention layers, with or without RoPE, and either experts beside one
    # ungated-sum shared MLP or that MLP alone.
    moe, ffn = spec.moe, spec.ffn
    need(set(spec.mixer_kinds) <= {"mamba", "attention"},
         "layers other than Mamba-2 and attention (granitemoehybrid builds those)")
    assert ffn is not None
    config = {**llama_like(spec, "granitemoehybrid"),
              "attention_bias": one_attention_bias(spec, "granitemoehybrid"),
              "layer_types": ["mamba" if k == "mamba" else "attention"
                              for k in spec.mixer_kinds],
              "position_embedding_type": "rope" if spec.position.kind == "rope" else None}
    if moe is None:
        config.update(num_local_experts=0, shared_intermediate_size=ffn.d_ff)
    else:
        need(moe.n_shared_experts == 1, "moe without one shared MLP (granitemoehybrid's)")
        config.update(num_local_experts=moe.n_experts, num_experts_per_tok=moe.top_k,
                      intermediate_size=moe.d_expert, shared_intermediate_size=moe.shared_width)
    return {**config, **mamba2_fields(spec, "granitemoehybrid")}


GRANITEMOEHYBRID = ModelType(
    "granitemoehybrid", _read_granitemoehybrid, write=_write_granitemoehybrid,
    traits=Traits(positions=("none", "rope"), moe=True, ssm=True), getattr_fields=("head_dim",),
    aliases={"layers_block_type": "layer_types"},
    defaults={
        **GRANITEMOE.defaults, "shared_intermediate_size": 1024,
        "position_embedding_type": None, "layer_types": None, "mamba_n_heads": 128,
        "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_head": "auto", "mamba_d_conv": 4,
        "mamba_expand": 2, "mamba_chunk_size": 256, "mamba_conv_bias": True,
        "mamba_proj_bias": False,
    })


def _swa_kinds(c: HFConfig) -> list[str]:
    """configuration_granite_swa.py, _granitemoe_swa.py: layer_types, else every fourth layer
    (i % 4 == 0) full and the rest sliding; layer_rope_theta[i] = 0 drops RoPE on layer i (a
    full layer without RoPE is nope, a sliding one stays local: the counts are the same)."""
    layers = c.size("num_hidden_layers")
    kinds = layer_kinds(c, ["global" if i % 4 == 0 else "local" for i in range(layers)])
    if c.given("layer_rope_theta"):
        thetas = c["layer_rope_theta"]
        if not isinstance(thetas, list) or len(thetas) != layers:
            c.fail(f"layer_rope_theta must list one value per layer ({layers}), got {thetas!r}")
        kinds = [k if theta or k != "global" else "nope"
                 for k, theta in zip(kinds, thetas, strict=True)]
    return kinds


# ---- granite_swa ------------------------------------------------------------------------------
def _read_granite_swa(c: HFConfig) -> dict[str, Any]:
    # modeling_granite_swa.py: Granite (attention_bias on q, k, v, o; mlp_bias) with one sink
    # logit per head in every layer (sinks, num_attention_heads values); configuration_
    # granite_swa.py: layer_types, else every fourth layer (i % 4 == 0) full and the rest
    # sliding; layer_rope_theta[i] = 0 drops RoPE on layer i. A full layer without RoPE is
    # nope; a sliding one stays local, as SmolLM3's (RoPE has no parameter and no matrix
    # product, so the counts are the same).
    no_null_head_dim(c)
    kinds = _swa_kinds(c)
    bias = c.flag("attention_bias")
    spec = biased_decoder(c, bias, bias, c.flag("mlp_bias"), attention={"sinks": True})
    return merge(spec, per_layer(c, attention=kinds))


def _write_granite_swa(spec: ModelSpec, model_type: str = "granite_swa") -> dict[str, Any]:
    # The one dense type with attention sinks: any pattern of full, sliding and NoPE layers.
    att = spec.attention
    need(att.sinks, "attention.sinks=False (granite_swa has a sink logit per head)")
    need(att.qkv_bias == att.out_bias, f"attention.out_bias={att.out_bias} with "
         f"attention.qkv_bias={att.qkv_bias} (granite_swa has one attention_bias)")
    kinds = spec.attention_kinds
    need(set(kinds) <= {"global", "local", "nope"}, f"attention kinds {sorted(set(kinds))} "
         f"(granite_swa builds full, sliding and NoPE attention layers)")
    return {**llama_like(spec, model_type), "attention_bias": att.qkv_bias,
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


# ---- granitemoe_swa ---------------------------------------------------------------------------
def _read_granitemoe_swa(c: HFConfig) -> dict[str, Any]:
    # modeling_granitemoe_swa.py: granite_swa's attention (a sink logit per head, full, sliding
    # and NoPE layers: _swa_kinds) with granitemoeshared's FFN (experts of intermediate_size
    # and, when shared_intermediate_size is not 0, a shared MLP beside them).
    no_null_head_dim(c)
    spec = _read_granitemoeshared(c)
    spec["attention"]["sinks"] = True
    return merge(spec, per_layer(c, attention=_swa_kinds(c)))


def _write_granitemoe_swa(spec: ModelSpec) -> dict[str, Any]:
    # granite_swa's attention layers with experts on every layer and an ungated shared MLP.
    moe = experts(spec, "granitemoe_swa")
    need(moe.n_shared_experts <= 1 and not moe.shared_expert_gate,
         "moe with other shared experts than one ungated MLP (granitemoe_swa's)")
    config = _write_granite_swa(spec, "granitemoe_swa")
    config.pop("mlp_bias")  # not a field: GraniteMoeSWA's MLPs have no biases
    return {**config, "intermediate_size": moe.d_expert, "num_local_experts": moe.n_experts,
            "num_experts_per_tok": moe.top_k,
            "shared_intermediate_size": moe.shared_width if moe.n_shared_experts else 0}


GRANITEMOE_SWA = ModelType(
    "granitemoe_swa", _read_granitemoe_swa, write=_write_granitemoe_swa,
    traits=Traits(moe=True), getattr_fields=("head_dim",),
    defaults={**GRANITEMOESHARED.defaults, "sliding_window": 128, "layer_types": None,
              "layer_rope_theta": None})
