"""Falcon (Technology Innovation Institute): falcon and falcon_h1 (attention and Mamba-2 side by
side in every layer).
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, divides, heads, layernorm_decoder
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import base, llama_like, need, one_attention_bias, plain
from calc.spec import ModelSpec


# ---- falcon -----------------------------------------------------------------------------------
def _read_falcon(c: HFConfig) -> dict[str, Any]:
    # modeling_falcon.py. New decoder architecture (Falcon-40B/180B, Falcon2-11B): GQA with
    # num_kv_heads, attention and MLP in parallel behind num_ln_in_parallel_attn norms (None
    # means 2). Old one (Falcon-7B, RW): multi_query gives one K/V head; parallel_attn shares
    # one norm, else input_layernorm + post_attention_layernorm in sequence. `bias` on every
    # Linear but the head.
    h = c.size("num_attention_heads")
    new, parallel = c.flag("new_decoder_architecture"), c.flag("parallel_attn")
    norms = c["num_ln_in_parallel_attn"]
    if new:
        kv = c.size("num_kv_heads") if c.given("num_kv_heads") else h
        norms = 2 if norms is None else norms
        if not parallel:
            c.fail("parallel_attn=false with new_decoder_architecture=true: transformers "
                   "builds input/post_attention norms but its forward needs ln_attn/ln_mlp")
    else:
        kv = 1 if c.flag("multi_query") else h
        if not c.flag("multi_query") and c.given("num_kv_heads") and c["num_kv_heads"] != h:
            c.fail(f"num_kv_heads={c['num_kv_heads']} without new_decoder_architecture: the "
                   f"fused query_key_value keeps {h} K/V heads (3 × hidden_size)")
        if parallel and norms == 2:
            c.fail("num_ln_in_parallel_attn=2 needs new_decoder_architecture=true "
                   "(the old layer's forward uses input_layernorm)")
        norms = 1
    if norms not in (1, 2):
        c.fail(f"num_ln_in_parallel_attn={norms!r} must be 1 or 2")
    if h % kv:
        c.fail(f"num_kv_heads={kv} must divide num_attention_heads={h}")
    divides(c)  # FalconAttention refuses a hidden_size its heads do not divide
    d = c.size("hidden_size")
    d_ff = c.size("ffn_hidden_size") if c.given("ffn_hidden_size") else 4 * d
    spec = layernorm_decoder(
        c, {"n_heads": h, "n_kv_heads": kv}, d_ff, c.activation("activation", gated=False),
        c.flag("bias"), position={"kind": "alibi" if c.flag("alibi") else "rope"})
    if new or parallel:
        spec.update(parallel_block=True, parallel_norms=norms)
    return spec


def _write_falcon(spec: ModelSpec) -> dict[str, Any]:
    h, kv = spec.attention.n_heads, spec.n_kv_heads
    # The new decoder architecture (any KV heads) is always parallel; the old one holds 1 or h
    # KV heads, in parallel with one norm or in sequence.
    new = spec.parallel_block and (spec.parallel_norms == 2 or kv not in (1, h))
    return {**base(spec, "falcon"), "new_decoder_architecture": new,
            "num_kv_heads": kv, "multi_query": kv == 1, "parallel_attn": spec.parallel_block,
            "num_ln_in_parallel_attn": spec.parallel_norms if new else None,
            "alibi": spec.position.kind == "alibi", "bias": spec.ffn.bias,
            "ffn_hidden_size": spec.ffn.d_ff, "activation": plain(spec, "falcon"),
            "max_position_embeddings": spec.context_length}


FALCON = ModelType(
    "falcon", _read_falcon, write=_write_falcon,
    traits=Traits(norm="layernorm", positions=("rope", "alibi"), gated=False),
    legacy_kwargs={"n_embed": "hidden_size"},
    defaults={
        "vocab_size": 65024, "hidden_size": 4544, "num_hidden_layers": 32,
        "num_attention_heads": 71, "num_ln_in_parallel_attn": None, "num_kv_heads": None,
        "alibi": False, "new_decoder_architecture": False, "multi_query": True,
        "parallel_attn": True, "bias": False, "max_position_embeddings": 2048,
        "ffn_hidden_size": None, "activation": "gelu", "tie_word_embeddings": True,
    })


# ---- falcon_h1 --------------------------------------------------------------------------------
def _read_falcon_h1(c: HFConfig) -> dict[str, Any]:
    # modeling_falcon_h1.py, FalconH1DecoderLayer: attention and a Mamba-2 mixer read the same
    # input_layernorm output and their outputs add (every layer: layers_block_type "hybrid"),
    # then pre_ff_layernorm and a gated MLP (mlp_bias). FalconH1Mixer: mamba_d_ssm channels
    # (else mamba_expand × hidden_size) in mamba_n_heads heads of mamba_d_head, in_proj with
    # mamba_proj_bias, out_proj with projectors_bias, the gated RMSNorm when mamba_rms_norm.
    # The µP multipliers scale activations and hold no parameters.
    inner = (c.size("mamba_d_ssm") if c.given("mamba_d_ssm")
             else int(c["mamba_expand"] * c.size("hidden_size")))
    n = c.size("mamba_n_heads")
    width = inner // n if c["mamba_d_head"] == "auto" else c.size("mamba_d_head")
    if inner % n or width * n != inner:  # configuration_falcon_h1.py, validate_architecture
        c.fail(f"mamba_n_heads={n} × mamba_d_head={c['mamba_d_head']} must equal the Mamba "
               f"width {inner}")
    if c.flag("mamba_proj_bias") != c.flag("projectors_bias"):
        c.fail(f"mamba_proj_bias={c['mamba_proj_bias']} and projectors_bias="
               f"{c['projectors_bias']} differ; calc's mamba.bias is on both projections")
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), ffn_bias=c.flag("mlp_bias"),
                   attention={"qkv_bias": bias, "out_bias": bias},
                   mamba={"version": 2, "d_inner": inner, "d_state": c.size("mamba_d_state"),
                          "d_conv": c.size("mamba_d_conv"), "n_heads": n,
                          "n_groups": c.size("mamba_n_groups"),
                          "conv_bias": c.flag("mamba_conv_bias"),
                          "bias": c.flag("mamba_proj_bias"),
                          "gated_norm": c.flag("mamba_rms_norm")})
    return {**spec, "layers": {"mixer_pattern": ["attention+mamba"]}}


def _write_falcon_h1(spec: ModelSpec) -> dict[str, Any]:
    m, ffn = spec.mamba, spec.ffn
    need(set(spec.mixer_kinds) == {"attention+mamba"},
         "layers other than attention+mamba (falcon_h1 runs both in every layer)")
    need(m is not None and m.version == 2, "a mamba other than Mamba-2 (falcon_h1's)")
    bias = one_attention_bias(spec, "falcon_h1")
    assert m is not None and m.n_heads is not None and ffn is not None
    return {**llama_like(spec, "falcon_h1"), "attention_bias": bias,
            "mlp_bias": ffn.bias, "mamba_d_ssm": m.d_inner, "mamba_n_heads": m.n_heads,
            "mamba_d_head": m.d_inner // m.n_heads, "mamba_n_groups": m.n_groups,
            "mamba_d_state": m.d_state, "mamba_d_conv": m.d_conv,
            "mamba_conv_bias": m.conv_bias, "mamba_proj_bias": m.bias, "projectors_bias": m.bias,
            "mamba_rms_norm": m.has_gated_norm}


FALCON_H1 = ModelType(
    "falcon_h1", _read_falcon_h1, write=_write_falcon_h1, traits=Traits(ssm=True),
    getattr_fields=("head_dim",),
    defaults={
        "vocab_size": 128000, "tie_word_embeddings": False, "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_act": "silu", "max_position_embeddings": 8192,
        "mamba_d_ssm": 1024, "mamba_n_heads": 128, "mamba_d_head": "auto", "mamba_n_groups": 1,
        "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_conv_bias": True,
        "mamba_proj_bias": False, "mamba_rms_norm": False, "projectors_bias": False,
        "attention_bias": False, "mlp_bias": False,
    })
