"""Bailing (inclusionAI's Ling 3): bailing_hybrid, Kimi Delta Attention layers beside gated
multi-head latent attention, and DeepSeek-V3's mixture of experts.

modeling_bailing_hybrid.py (transformers 5.24.0): a layer is BailingHybridAttention where
layer_types says full_attention (DeepSeek-V3's MLA with its interleaved RoPE, and g_proj d → h:
a sigmoid gate per head on the attention output, attention.output_gate_per "head"), else
BailingHybridDeltaAttention, Kimi Delta Attention (calc.spec.layers.DeltaNetSpec with the
channel gate) whose decay (BailingHybridForgetGate.f_proj) and output gate (g_proj) are each
one projection d → heads × head_dim, not Kimi Linear's low-rank pairs (deltanet.gate_rank
None); q_proj, k_proj, v_proj, b_proj, one depthwise conv1d over q, k and v without bias,
A_log per head, dt_bias per key channel, the gated RMSNorm of head_dim and o_proj as Kimi's.
The FFN is BailingHybridMoE (DeepSeek-V3's: a sigmoid router whose e_score_correction_bias is
a buffer, n_shared_experts shared experts as one MLP of n_shared · moe_intermediate_size)
where mlp_layer_types says sparse, else the dense MLP of intermediate_size. The
num_mtp_layers multi-token-prediction layers a checkpoint stores are not built
(BailingHybridModel._keys_to_ignore_on_load_unexpected).
"""

from __future__ import annotations

from typing import Any

from calc.hf.families.kimi import hybrid_mixers, read_mla_kda_moe, write_mla_kda_moe
from calc.hf.fields import HFConfig
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import need
from calc.spec import ModelSpec


def _mixers(c: HFConfig, layers: int) -> list[str]:
    """Each layer's mixer: layer_types, else (BailingHybridConfig.__post_init__) full
    attention on the last layer of every group of layer_group_size layers."""
    if c.given("layer_types"):
        types = c["layer_types"]
    else:
        group = c.size("layer_group_size")
        types = ["full_attention" if (i + 1) % group == 0 else "linear_attention"
                 for i in range(layers)]
    return hybrid_mixers(c, types, layers)


def _read_bailing_hybrid(c: HFConfig) -> dict[str, Any]:
    layers = c.size("num_hidden_layers")
    heads = c.size("num_attention_heads")
    mixers = _mixers(c, layers)
    # BailingHybridConfig.__post_init__: the first first_k_dense_replace layers dense unless
    # mlp_layer_types lists them
    first = c.size("first_k_dense_replace", minimum=0)
    # __post_init__ sets linear_num_heads to num_attention_heads and linear_head_dim to the
    # file's head_dim (before it turns head_dim into qk_rope_head_dim), whatever the file says
    width = c.size("head_dim")
    kda = "deltanet" in mixers and {
        "n_k_heads": heads, "n_v_heads": heads, "d_k": width, "d_v": width,
        "d_conv": c.size("short_conv_kernel_size"), "gate": "channel"}
    return read_mla_kda_moe(c, mixers, first, kda or None,
                            {"output_gate": True, "output_gate_per": "head"})


def _write_bailing_hybrid(spec: ModelSpec) -> dict[str, Any]:
    att, n = spec.attention, spec.deltanet
    need(att.output_gate and att.output_gate_per == "head",
         "no attention.output_gate per head (bailing_hybrid's g_proj d → heads)")
    kda: dict[str, Any] = {}
    if n is not None:
        need(n.full_rank_gates, f"deltanet.gate={n.gate!r}, gate_rank={n.gate_rank} "
                                f"(bailing_hybrid's is Kimi Delta Attention with full-rank "
                                f"gates)")
        need(n.n_k_heads == n.n_v_heads == att.n_heads and n.d_k == n.d_v,
             f"deltanet n_k_heads={n.n_k_heads}, n_v_heads={n.n_v_heads}, d_k={n.d_k}, "
             f"d_v={n.d_v} (bailing_hybrid's KDA has the attention's head count and one width)")
        kda = {"head_dim": n.d_k, "short_conv_kernel_size": n.d_conv}
    return write_mla_kda_moe(spec, "bailing_hybrid", kda, ("global", ""))


BAILING_HYBRID = ModelType(
    "bailing_hybrid", _read_bailing_hybrid, write=_write_bailing_hybrid,
    traits=Traits(moe=True, mla=True), router_bias_buffer=True,
    # BailingHybridConfig.attribute_map: the names released config.json files use
    aliases={"num_experts": "num_local_experts", "num_experts_per_token": "num_experts_per_tok",
             "num_shared_experts": "n_shared_experts", "model_max_length":
             "max_position_embeddings", "num_expert_group": "n_group",
             "moe_renormalize": "norm_topk_prob", "num_nextn_predict_layers": "num_mtp_layers"},
    defaults={
        "vocab_size": 157184, "hidden_size": 2560, "intermediate_size": 6144,
        "moe_intermediate_size": 768, "num_hidden_layers": 42, "num_attention_heads": 32,
        "num_key_value_heads": 32, "n_shared_experts": 1, "kv_lora_rank": 512,
        "q_lora_rank": None, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "qk_nope_head_dim": 128, "n_group": 8, "num_experts_per_tok": 8,
        "first_k_dense_replace": 2, "hidden_act": "silu", "max_position_embeddings": 262144,
        "tie_word_embeddings": False, "attention_bias": False, "num_local_experts": 512,
        "head_dim": 128, "short_conv_kernel_size": 4, "layer_group_size": 6,
        "layer_types": None, "mlp_layer_types": None, "norm_topk_prob": True,
        "num_mtp_layers": 1,
    })
