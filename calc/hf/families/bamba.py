"""Bamba (IBM): bamba, Mamba-2 layers with a few attention layers, a gated MLP on every layer."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import merge, per_layer
from calc.hf.writing import llama_like, need, one_attention_bias
from calc.spec import ModelSpec


def mamba2(c: HFConfig) -> dict[str, Any]:
    """The Mamba-2 mixer of Bamba and Granite 4 (BambaMixer, GraniteMoeHybridMambaLayer):
    mamba_expand · hidden_size channels in mamba_n_heads heads of mamba_d_head ("auto": the
    width over the heads; configuration_*.py checks they tile it), in_proj and out_proj with
    mamba_proj_bias, the conv with mamba_conv_bias, the gated RMSNorm in mamba_n_groups
    groups."""
    inner = int(c["mamba_expand"] * c.size("hidden_size"))
    n = c.size("mamba_n_heads")
    width = inner // n if c["mamba_d_head"] == "auto" else c.size("mamba_d_head")
    if width * n != inner:
        c.fail(f"mamba_n_heads={n} × mamba_d_head={c['mamba_d_head']} must equal "
               f"mamba_expand × hidden_size = {inner}")
    return {"version": 2, "d_inner": inner, "d_state": c.size("mamba_d_state"),
            "d_conv": c.size("mamba_d_conv"), "n_heads": n,
            "n_groups": c.size("mamba_n_groups"), "conv_bias": c.flag("mamba_conv_bias"),
            "bias": c.flag("mamba_proj_bias"), "gated_norm": True}


def mamba2_fields(spec: ModelSpec, arch: str) -> dict[str, Any]:
    """mamba2's fields for `spec`'s Mamba-2 mixer. Without one (attention on every layer) the
    config still checks a Mamba geometry that its default mamba_n_heads (128) must tile
    (validate_architecture in configuration_bamba.py, _granitemoehybrid.py): one head over
    hidden_size channels, which builds nothing."""
    m = spec.mamba
    if m is None:
        return {"mamba_expand": 1, "mamba_n_heads": 1, "mamba_d_head": spec.d_model}
    need(m.version == 2 and m.n_heads is not None, f"a mamba other than Mamba-2 ({arch}'s)")
    assert m.n_heads is not None
    need(m.d_inner % spec.d_model == 0, f"mamba.d_inner={m.d_inner}, not a whole multiple "
         f"of d_model={spec.d_model} (mamba_expand is a whole number)")
    return {"mamba_expand": m.d_inner // spec.d_model, "mamba_n_heads": m.n_heads,
            "mamba_d_head": m.d_inner // m.n_heads, "mamba_n_groups": m.n_groups,
            "mamba_d_state": m.d_state, "mamba_d_conv": m.d_conv,
            "mamba_conv_bias": m.conv_bias, "mamba_proj_bias": m.bias}


def _read_bamba(c: HFConfig) -> dict[str, Any]:
    # configuration_bamba.py: full attention on attn_layer_indices, Mamba-2 (mamba2) elsewhere;
    # modeling_bamba.py: attention with attention_bias on q, k, v, o, a gated MLP with mlp_bias
    # on every layer.
    layers = c.size("num_hidden_layers")
    indices = c["attn_layer_indices"] or []
    if not isinstance(indices, list) or not all(isinstance(i, int) for i in indices):
        c.fail(f"attn_layer_indices={indices!r} must list layer indices")
    mixers = ["attention" if i in indices else "mamba" for i in range(layers)]
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), ffn_bias=c.flag("mlp_bias"),
                   attention={"qkv_bias": bias, "out_bias": bias},
                   mamba=mamba2(c) if "mamba" in mixers else None)
    kinds = ["global" if m == "attention" else "" for m in mixers]
    return merge(spec, per_layer(c, mixers=mixers, attention=kinds))


def _write_bamba(spec: ModelSpec) -> dict[str, Any]:
    # Mamba-2 beside full attention, a gated MLP on every layer (jamba's writer holds Mamba-1).
    ffn = spec.ffn
    need(set(spec.mixer_kinds) <= {"mamba", "attention"},
         "layers other than Mamba-2 and attention (bamba builds those)")
    assert ffn is not None
    return {**llama_like(spec, "bamba"), "attention_bias": one_attention_bias(spec, "bamba"),
            "attn_layer_indices": [i for i, kind in enumerate(spec.mixer_kinds)
                                   if kind == "attention"],
            "mlp_bias": ffn.bias, **mamba2_fields(spec, "bamba")}


BAMBA = ModelType(
    "bamba", _read_bamba, write=_write_bamba,
    traits=Traits(positions=("rope",), ssm=True), getattr_fields=("head_dim",),
    defaults={
        "vocab_size": 128000, "tie_word_embeddings": False, "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_act": "silu", "max_position_embeddings": 262144,
        "attn_layer_indices": None, "mamba_n_heads": 128, "mamba_d_head": "auto",
        "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2,
        "mamba_chunk_size": 256, "mamba_conv_bias": True, "mamba_proj_bias": False,
        "attention_bias": False, "mlp_bias": False,
    })
