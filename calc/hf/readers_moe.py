"""Readers for mixture-of-experts decoders the uniform spec could not place or shape: OLMoE.

Each repeats what transformers/models/<type>/modeling_<type>.py (calc.hf.defaults'
TRANSFORMERS_VERSION) builds; calc.hf.layout writes per-layer lists compactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, top_k


def _olmoe(c: HFConfig) -> dict[str, Any]:
    # modeling_olmoe.py: q_norm over hidden_size and k_norm over (hidden_size / heads) · KV
    # heads (the whole projections, as OLMo 2), pre-norm; every FFN is the MoE: a router
    # without bias, experts of intermediate_size; attention_bias on q, k, v, o.
    h = heads(c)
    if h["head_dim"] is not None and h["head_dim"] * h["n_heads"] != c.size("hidden_size"):
        c.fail(f"head_dim={h['head_dim']}: OLMoE's q_norm spans hidden_size="
               f"{c['hidden_size']}, not num_attention_heads × head_dim")
    bias = c.flag("attention_bias")
    experts = c.size("num_experts")
    return decoder(c, h, attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "projection"},
                   moe={"n_experts": experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", experts, "num_experts")})


READERS: dict[str, Callable[[HFConfig], dict[str, Any]]] = {"olmoe": _olmoe}
