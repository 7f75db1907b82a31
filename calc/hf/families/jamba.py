"""Jamba (AI21 Labs): jamba, Mamba and attention layers with a mixture of experts every other
layer.
"""

from __future__ import annotations

import math
from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import ffn_kinds, merge, per_layer
from calc.hf.writing import llama_like, need
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
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
    n_experts = c.size("num_experts")
    sparse = [n_experts > 1 and i % e_period == e_offset for i in range(layers)]
    rank = c["mamba_dt_rank"]
    rank = (math.ceil(c.size("hidden_size") / 16) if rank == "auto"
            else c.size("mamba_dt_rank"))
    expand = c.size("mamba_expand")
    moe = any(sparse) and {
        "n_experts": n_experts, "d_expert": c.size("intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts")}
    spec = decoder(c, heads(c), moe=moe or None, position={"kind": "none"},
                   mamba={"version": 1, "d_inner": expand * c.size("hidden_size"),
                          "d_state": c.size("mamba_d_state"), "d_conv": c.size("mamba_d_conv"),
                          "dt_rank": rank, "conv_bias": c.flag("mamba_conv_bias"),
                          "bias": c.flag("mamba_proj_bias"), "dt_norms": True}
                   if "mamba" in mixers else None)
    kinds = ["global" if m == "attention" else "" for m in mixers]
    return merge(spec, per_layer(c, mixers=mixers, attention=kinds, ffn=ffn_kinds(sparse)))


def _period(flags: list[bool], what: str) -> tuple[int, int]:
    """Jamba's rule: the layers i with i % period == offset (none: a period past the end)."""
    for period in range(1, len(flags) + 2):
        for offset in range(period):
            if all((i % period == offset) == flag for i, flag in enumerate(flags)):
                return period, offset
    need(False, f"{what} on layers {[i for i, f in enumerate(flags) if f]} (jamba places "
                f"them every period-th layer from an offset)")
    raise AssertionError  # need raised


def _write(spec: ModelSpec) -> dict[str, Any]:
    m, moe, ffn = spec.mamba, spec.moe, spec.ffn
    need(set(spec.mixer_kinds) <= {"attention", "mamba"}, "mixers other than attention and "
                                                          "mamba (jamba builds those two)")
    attention, every = _period([k == "attention" for k in spec.mixer_kinds], "attention")
    experts, e_every = _period(list(spec.moe_layers), "MoE layers")
    config = {**llama_like(spec, "jamba"), "attn_layer_period": attention,
              "attn_layer_offset": every, "expert_layer_period": experts,
              "expert_layer_offset": e_every, "num_experts": moe.n_experts if moe else 1,
              "num_experts_per_tok": moe.top_k if moe else 1}
    if moe and ffn:
        need(moe.d_expert == ffn.d_ff, f"moe.d_expert={moe.d_expert} ≠ ffn.d_ff={ffn.d_ff} "
                                       f"(jamba's experts are intermediate_size wide)")
    if m is not None:
        need(m.version == 1 and m.d_inner % spec.d_model == 0,
             "a mamba other than Mamba-1 of an integer expand × d_model (jamba's)")
        config.update({"mamba_expand": m.d_inner // spec.d_model, "mamba_d_state": m.d_state,
                       "mamba_d_conv": m.d_conv, "mamba_dt_rank": m.dt_rank,
                       "mamba_conv_bias": m.conv_bias, "mamba_proj_bias": m.bias})
    return config


JAMBA = ModelType(
    "jamba", _read, write=_write, traits=Traits(positions=("none",), moe=True, ssm=True),
    getattr_fields=("head_dim",), aliases={"num_local_experts": "num_experts"},
    defaults={
        "vocab_size": 65536, "tie_word_embeddings": False, "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "hidden_act": "silu", "max_position_embeddings": 262144,
        "num_experts_per_tok": 2, "num_experts": 16, "expert_layer_period": 2,
        "expert_layer_offset": 1, "attn_layer_period": 8, "attn_layer_offset": 4,
        "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": "auto",
        "mamba_conv_bias": True, "mamba_proj_bias": False,
    })
