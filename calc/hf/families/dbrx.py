"""DBRX (Databricks): dbrx."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import NO_TOKENS, experts, gated, need
from calc.spec import ModelSpec


def _sub_config(c: HFConfig, key: str, defaults: dict[str, Any]) -> dict[str, Any]:
    """A nested config (DBRX's attn_config, ffn_config) over its class's defaults."""
    value = c[key] or {}
    if not isinstance(value, dict):
        c.fail(f"{key}={value!r} must be an object")
    return {**defaults, **value}


def _whole(c: HFConfig, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        c.fail(f"{key}={value!r} must be a whole number >= 1")
    return value


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_dbrx.py: Wqkv d → d + 2·kv_n_heads·(d / n_heads) and out_proj, without biases;
    # LayerNorms without bias (norm_1, norm_2, norm_f); every FFN the MoE: a router without
    # bias, moe_num_experts GLU experts (w1, v1, w2) of ffn_hidden_size with ffn_act_fn,
    # moe_top_k of them per token. DbrxConfig refuses tied embeddings (validate_architecture).
    attn = _sub_config(c, "attn_config", {"kv_n_heads": 1})
    ffn = _sub_config(c, "ffn_config", {"ffn_hidden_size": 3584, "moe_num_experts": 4,
                                        "moe_top_k": 1, "ffn_act_fn": None})
    d, h = c.size("d_model"), c.size("n_heads")
    if d % h:  # Wqkv's queries are d wide, its keys and values heads of d // n_heads
        c.fail(f"n_heads={h} must divide d_model={d}: DBRX's queries are d_model wide and its "
               f"keys n_heads-th of it")
    if "rope_theta" not in attn:
        c.fail("attn_config has no rope_theta: transformers' DbrxAttention reads it, with no "
               "default")
    if attn.get("clip_qkv") is None:
        c.fail("attn_config.clip_qkv=None: transformers' DbrxAttention clamps Wqkv's output "
               "by it on every forward and fails without a bound")
    kv = _whole(c, "attn_config.kv_n_heads", attn["kv_n_heads"])
    if h % kv:
        c.fail(f"attn_config.kv_n_heads={kv} must divide n_heads={h}")
    if c.flag("tie_word_embeddings"):
        c.fail("tie_word_embeddings=true: DbrxConfig refuses it (validate_architecture)")
    act = (ffn["ffn_act_fn"] or {"name": "silu"})
    name = act.get("name", "silu") if isinstance(act, dict) else c.fail(
        f"ffn_config.ffn_act_fn={act!r} must be an object with a name")
    width = _whole(c, "ffn_config.ffn_hidden_size", ffn["ffn_hidden_size"])
    n_experts = _whole(c, "ffn_config.moe_num_experts", ffn["moe_num_experts"])
    chosen = _whole(c, "ffn_config.moe_top_k", ffn["moe_top_k"])
    if chosen > n_experts:
        c.fail(f"ffn_config.moe_top_k={chosen} must not exceed moe_num_experts={n_experts}")
    activation = c.activation_of("ffn_config.ffn_act_fn.name", name, gated=True)
    return {
        "vocab_size": c["vocab_size"], "d_model": d, "n_layers": c["n_layers"],
        "context_length": c["max_seq_len"],
        "attention": {"n_heads": h, "n_kv_heads": kv},
        "ffn": {"activation": activation, "d_ff": width, "bias": False},
        "moe": {"n_experts": n_experts, "d_expert": width, "top_k": chosen},
        "norm": {"kind": "layernorm", "bias": False, "placement": "pre"},
        "position": {"kind": "rope"}, "tie_embeddings": False,
    }


def _write(spec: ModelSpec) -> dict[str, Any]:
    moe = experts(spec, "dbrx")
    need(not spec.tie_embeddings, "tie_embeddings=True (DbrxConfig refuses tied embeddings)")
    return {"model_type": "dbrx", "vocab_size": spec.vocab_size, "d_model": spec.d_model,
            "n_heads": spec.attention.n_heads, "n_layers": spec.n_layers,
            "max_seq_len": spec.context_length, "tie_word_embeddings": False,
            # transformers' DbrxAttention needs both; neither changes a count (DBRX's values)
            "attn_config": {"kv_n_heads": spec.n_kv_heads, "rope_theta": 500000.0,
                            "clip_qkv": 8.0},
            "ffn_config": {"ffn_hidden_size": moe.d_expert, "moe_num_experts": moe.n_experts,
                           "moe_top_k": moe.top_k, "ffn_act_fn": {"name": gated(spec, "dbrx")}},
            **NO_TOKENS}


DBRX = ModelType(
    "dbrx", _read, write=_write, traits=Traits(norm="layernorm", moe=True),
    aliases={"hidden_size": "d_model", "num_attention_heads": "n_heads",
             "num_hidden_layers": "n_layers", "max_position_embeddings": "max_seq_len"},
    defaults={
        "d_model": 2048, "n_heads": 16, "n_layers": 24, "max_seq_len": 2048,
        "vocab_size": 32000, "attn_config": None, "ffn_config": None,
        "tie_word_embeddings": False,
    })
