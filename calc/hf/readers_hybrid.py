"""Readers for models whose layers are not all attention: Mamba, Mamba-2, Qwen3-Next's gated
DeltaNet hybrid, Jamba (Mamba and attention, MoE every other layer), LFM2 (short
convolutions and attention) and Falcon-H1 (attention and Mamba-2 side by side in every layer).

Each repeats what transformers/models/<type>/modeling_<type>.py (calc.hf.defaults'
TRANSFORMERS_VERSION) builds per layer; calc.hf.layout writes the per-layer lists compactly.
A pure state-space model has no position limit: its default sequence length is the one its
paper trained at (Mamba: 2,048, Gu & Dao 2023 §4.2; Mamba-2: 2,048, Dao & Gu 2024 §9.2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, top_k
from calc.hf.layout import ffn_kinds, kinds_of, merge, per_layer

TRAINED_CONTEXT = 2048  # Mamba and Mamba-2's pretraining sequence length (module docstring)


def _ssm_only(c: HFConfig, mamba: dict[str, Any]) -> dict[str, Any]:
    """A stack of Mamba blocks: RMSNorm → mixer → residual, a final norm, the LM head."""
    return {
        "vocab_size": c["vocab_size"], "d_model": c["hidden_size"],
        "n_layers": c["num_hidden_layers"], "context_length": TRAINED_CONTEXT,
        "norm": {"kind": "rmsnorm", "placement": "pre"}, "position": {"kind": "none"},
        "layers": {"mixer_pattern": ["mamba"], "ffn_pattern": ["none"]}, "mamba": mamba,
        "tie_embeddings": c.flag("tie_word_embeddings"),
    }


def _inner(c: HFConfig) -> int:
    """configuration_mamba.py / _mamba2.py: intermediate_size = int(expand · hidden_size)."""
    expand = c["expand"]
    if isinstance(expand, bool) or not isinstance(expand, int | float) or expand <= 0:
        c.fail(f"expand={expand!r} must be a positive number")
    inner = int(expand * c.size("hidden_size"))
    if inner < 1:
        c.fail(f"expand={expand!r} × hidden_size={c['hidden_size']} must be at least 1")
    return inner


def _mamba(c: HFConfig) -> dict[str, Any]:
    # modeling_mamba.py, MambaMixer: in_proj d → 2D and out_proj (use_bias), conv1d over D
    # (use_conv_bias), x_proj D → R + 2N, dt_proj R → D with bias, A_log D × N, D; the rank R
    # is ⌈d/16⌉ when time_step_rank is "auto" (configuration_mamba.py).
    rank = c["time_step_rank"]
    rank = math.ceil(c.size("hidden_size") / 16) if rank == "auto" else c.size("time_step_rank")
    return _ssm_only(c, {
        "version": 1, "d_inner": _inner(c), "d_state": c.size("state_size"),
        "d_conv": c.size("conv_kernel"), "dt_rank": rank, "conv_bias": c.flag("use_conv_bias"),
        "bias": c.flag("use_bias")})


def _mamba2(c: HFConfig) -> dict[str, Any]:
    # modeling_mamba2.py, Mamba2Mixer: in_proj d → 2D + 2GN + H, conv1d over D + 2GN, dt_bias,
    # A_log and D per head, a gated RMSNorm over D; the heads must tile D (its forward views
    # the scan input as num_heads × head_dim).
    inner, h = _inner(c), c.size("num_heads")
    if h * c.size("head_dim") != inner:
        c.fail(f"num_heads={h} × head_dim={c['head_dim']} must equal expand × hidden_size = "
               f"{inner}")
    return _ssm_only(c, {
        "version": 2, "d_inner": inner, "d_state": c.size("state_size"),
        "d_conv": c.size("conv_kernel"), "n_heads": h, "n_groups": c.size("n_groups"),
        "conv_bias": c.flag("use_conv_bias"), "bias": c.flag("use_bias")})


def _qwen3_next(c: HFConfig) -> dict[str, Any]:
    # modeling_qwen3_next.py: layer_types (default: every full_attention_interval-th layer full
    # attention, the others linear_attention = gated DeltaNet). Full attention: q_proj gives the
    # queries and a sigmoid output gate (2·h·d_h), q_norm/k_norm per head, attention_bias on
    # q, k, v, o. FFN: the MoE (router without bias, one shared expert behind a gate
    # Linear(d, 1)) unless the layer is in mlp_only_layers or off decoder_sparse_step.
    layers = c.size("num_hidden_layers")
    if c.given("layer_types"):
        mixers, kinds = kinds_of(c)
    else:
        interval = (c.size("full_attention_interval")
                    if "full_attention_interval" in c.values else 4)
        mixers = ["deltanet" if (i + 1) % interval else "attention" for i in range(layers)]
        kinds = ["global" if m == "attention" else "" for m in mixers]
    only, step = c["mlp_only_layers"] or [], c.size("decoder_sparse_step")
    experts = c.size("num_experts", minimum=0)
    sparse = [i not in only and experts > 0 and (i + 1) % step == 0 for i in range(layers)]
    bias = c.flag("attention_bias")
    moe = any(sparse) and {
        "n_experts": experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", experts, "num_experts"),
        "n_shared_experts": 1, "d_shared": c.size("shared_expert_intermediate_size"),
        "shared_expert_gate": True}
    spec = decoder(c, heads(c), moe=moe or None, attention={
        "qkv_bias": bias, "out_bias": bias, "qk_norm": "head", "output_gate": True},
        deltanet={"n_k_heads": c.size("linear_num_key_heads"),
                  "n_v_heads": c.size("linear_num_value_heads"),
                  "d_k": c.size("linear_key_head_dim"), "d_v": c.size("linear_value_head_dim"),
                  "d_conv": c.size("linear_conv_kernel_dim")} if "deltanet" in mixers else None)
    return merge(spec, per_layer(c, mixers=mixers, attention=kinds, ffn=ffn_kinds(sparse)))


def _jamba(c: HFConfig) -> dict[str, Any]:
    # configuration_jamba.py: layer i is attention when i % attn_layer_period ==
    # attn_layer_offset, else Mamba; its FFN the MoE (num_experts > 1) when i %
    # expert_layer_period == expert_layer_offset, else the MLP of intermediate_size.
    # modeling_jamba.py: Mamba of mamba_expand × hidden_size channels with RMSNorms on Δ, B
    # and C; attention without biases or position encoding (the Mamba layers carry order);
    # input and pre-FFN RMSNorms; experts of intermediate_size, a router without bias.
    layers = c.size("num_hidden_layers")
    period, offset = c.size("attn_layer_period"), c.size("attn_layer_offset", 0)
    e_period, e_offset = c.size("expert_layer_period"), c.size("expert_layer_offset", 0)
    if offset >= period or e_offset >= e_period:
        c.fail("attn_layer_offset and expert_layer_offset must be below their periods "
               "(transformers' validate_architecture)")
    mixers = ["attention" if i % period == offset else "mamba" for i in range(layers)]
    experts = c.size("num_experts")
    sparse = [experts > 1 and i % e_period == e_offset for i in range(layers)]
    rank = c["mamba_dt_rank"]
    rank = (math.ceil(c.size("hidden_size") / 16) if rank == "auto"
            else c.size("mamba_dt_rank"))
    expand = c.size("mamba_expand")
    moe = any(sparse) and {
        "n_experts": experts, "d_expert": c.size("intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", experts, "num_experts")}
    spec = decoder(c, heads(c), moe=moe or None, position={"kind": "none"},
                   mamba={"version": 1, "d_inner": expand * c.size("hidden_size"),
                          "d_state": c.size("mamba_d_state"), "d_conv": c.size("mamba_d_conv"),
                          "dt_rank": rank, "conv_bias": c.flag("mamba_conv_bias"),
                          "bias": c.flag("mamba_proj_bias"), "dt_norms": True}
                   if "mamba" in mixers else None)
    kinds = ["global" if m == "attention" else "" for m in mixers]
    return merge(spec, per_layer(c, mixers=mixers, attention=kinds, ffn=ffn_kinds(sparse)))


def _lfm2(c: HFConfig) -> dict[str, Any]:
    # configuration_lfm2.py: layer_types, else full attention at full_attn_idxs (default all)
    # and short convolutions elsewhere; block_ff_dim and tie_embedding are the older names of
    # intermediate_size and tie_word_embeddings. modeling_lfm2.py: attention without biases
    # and with per-head q/k RMSNorms; the MLP's width is 2/3 of intermediate_size, times
    # block_ffn_dim_multiplier and rounded up to a multiple of block_multiple_of, when
    # block_auto_adjust_ff_dim; operator and FFN RMSNorms; embedding_norm is the final norm.
    layers = c.size("num_hidden_layers")
    if c.given("layer_types"):
        mixers, kinds = kinds_of(c)
        if set(kinds) - {"global", ""}:
            c.fail(f"layer_types={c['layer_types']!r}: lfm2 builds conv and full_attention")
    else:
        full = c["full_attn_idxs"]
        if full is not None and (not isinstance(full, list)
                                 or not all(isinstance(i, int) for i in full)):
            c.fail(f"full_attn_idxs={full!r} must list layer indices")
        full = list(range(layers)) if full is None else full
        mixers = ["attention" if i in full else "conv" for i in range(layers)]
        kinds = ["global" if m == "attention" else "" for m in mixers]
    # Lfm2Config pops the old names over the new ones
    width = c.size("block_ff_dim" if "block_ff_dim" in c.values else "intermediate_size")
    if c.flag("block_auto_adjust_ff_dim"):
        width = int(2 * width / 3)
        multiplier = c["block_ffn_dim_multiplier"]  # Lfm2Config types it float | int
        if isinstance(multiplier, bool) or not isinstance(multiplier, int | float):
            c.fail(f"block_ffn_dim_multiplier={multiplier!r} must be a number")
        step = c.size("block_multiple_of")
        width = step * ((int(multiplier * width) + step - 1) // step)
        if width < 1:
            c.fail(f"the MLP width block_auto_adjust_ff_dim gives is {width}; it must be >= 1")
    tie = c.flag("tie_embedding" if "tie_embedding" in c.values else "tie_word_embeddings")
    spec = decoder(c, heads(c), act_key=None,  # Lfm2MLP: F.silu
                   attention={"qk_norm": "head"},
                   short_conv={"d_conv": c.size("conv_L_cache"), "bias": c.flag("conv_bias")}
                   if "conv" in mixers else None)
    spec["ffn"]["d_ff"] = width
    spec["tie_embeddings"] = tie
    return merge(spec, per_layer(c, mixers=mixers, attention=kinds))


def _falcon_h1(c: HFConfig) -> dict[str, Any]:
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


READERS: dict[str, Callable[[HFConfig], dict[str, Any]]] = {
    "mamba": _mamba, "mamba2": _mamba2, "qwen3_next": _qwen3_next, "jamba": _jamba,
    "lfm2": _lfm2, "falcon_h1": _falcon_h1,
}
