"""Lara (Translated): lara_mini, Qwen3.5's gated-DeltaNet hybrid with sliding attention layers and
no gates on the attention output or the shared expert."""

from __future__ import annotations

from typing import Any

from calc.hf.families.qwen import read_gated_deltanet_hybrid
from calc.hf.fields import HFConfig
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import experts, layer_types, llama_like, window_field
from calc.spec import ModelSpec

# configuration_lara_mini.py: the released pattern, period 5
_PATTERN = ["linear_attention", "sliding_attention", "linear_attention", "full_attention",
            "sliding_attention"]


def _read_lara_mini(c: HFConfig) -> dict[str, Any]:
    # modeling_lara_mini.py: Qwen3.5's gated DeltaNet on linear_attention layers, attention
    # elsewhere (sliding_window on sliding_attention ones; q_norm/k_norm per head,
    # attention_bias on q, k, v, o, no output gate); every FFN the MoE with one shared expert
    # of shared_expert_intermediate_size added without a gate.
    layers = c.size("num_hidden_layers")
    return read_gated_deltanet_hybrid(
        c, [True] * layers, gated=False, d_ff=c.size("moe_intermediate_size"),
        default=[_PATTERN[i % len(_PATTERN)] for i in range(layers)])


def _write_lara_mini(spec: ModelSpec) -> dict[str, Any]:
    # Gated DeltaNet beside full and sliding attention, experts on every layer, no gates
    # (qwen3_next's writer gates the attention output and the shared expert).
    n, moe = spec.deltanet, experts(spec, "lara_mini")
    config = {**llama_like(spec, "lara_mini"), **window_field(spec),
              "layer_types": layer_types(spec, "lara_mini", "full_attention",
                                         "sliding_attention", "linear_attention"),
              "attention_bias": spec.attention.qkv_bias, "num_experts": moe.n_experts,
              "num_experts_per_tok": moe.top_k, "moe_intermediate_size": moe.d_expert,
              "shared_expert_intermediate_size": moe.shared_width}
    if n is not None:
        config.update(linear_num_key_heads=n.n_k_heads, linear_num_value_heads=n.n_v_heads,
                      linear_key_head_dim=n.d_k, linear_value_head_dim=n.d_v,
                      linear_conv_kernel_dim=n.d_conv)
    return config


LARA_MINI = ModelType(
    "lara_mini", _read_lara_mini, write=_write_lara_mini, traits=Traits(moe=True),
    defaults={
        "vocab_size": 151936, "hidden_size": 1024, "num_hidden_layers": 34,
        "num_attention_heads": 16, "num_key_value_heads": 4, "hidden_act": "silu",
        "max_position_embeddings": 131072, "tie_word_embeddings": True,
        "attention_bias": False, "head_dim": 128, "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 8,
        "linear_num_value_heads": 16, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "num_experts_per_tok": 4, "num_experts": 128,
        "layer_types": None, "sliding_window": 512,
    })
