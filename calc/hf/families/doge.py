"""Doge (SmallDoge): doge.

transformers 5.24.0 modeling_doge.py: a Llama-shaped decoder (RMSNorm before each sublayer, RoPE,
q_norm and k_norm per head) whose attention is DogeAttention's dynamic mask
(attention.dynamic_mask: dt_proj h_kv·d_h → h_kv and A per key/value head, the keep_window_size
best-scored keys a query attends to), whose residual sums are scaled by input_residual and
post_attention_residual (residual_scales: one vector of d per sublayer), and whose FFN is a gated
MLP, or with is_moe DogeCDMoE on every layer: that MLP as a shared expert beside num_experts
single-neuron experts routed by product keys (moe.product_keys).
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import NO_TOKENS, gated, need
from calc.spec import ModelSpec

_ARCH = "doge"


def _read(c: HFConfig) -> dict[str, Any]:
    # DogeAttention: attention_bias on q, k, v, o and dt_proj; DogeMLP and DogeCDMoE's shared
    # gate/up/down take mlp_bias; router_gate and the expert embeddings have none
    if c.given("sliding_window"):
        # DogeModel masks with create_sliding_window_causal_mask and prepare_dynamic_mask then
        # picks among the window's keys: a window and a selection together
        c.fail(f"sliding_window={c['sliding_window']}: calc reads Doge's dynamic mask over all "
               f"earlier keys (a selection inside a sliding window is not in the spec); leave "
               f"it null")
    bias = c.flag("attention_bias")
    attention = {"qkv_bias": bias, "out_bias": bias, "qk_norm": "head",
                 "dynamic_mask": {"keep": c.size("keep_window_size"), "bias": bias}}
    spec = decoder(c, heads(c), ffn_bias=c.flag("mlp_bias"), attention=attention,
                   residual_scales={})
    if c.flag("is_moe"):
        spec["moe"] = {"n_experts": c.size("num_experts"),
                       "top_k": c.size("num_experts_per_tok"), "d_expert": 1,
                       "n_shared_experts": 1, "d_shared": c.size("intermediate_size"),
                       "product_keys": True}
    return spec


def _write(spec: ModelSpec) -> dict[str, Any]:
    att, moe, ffn = spec.attention, spec.moe, spec.ffn
    act = gated(spec, _ARCH)
    mask = att.dynamic_mask
    need(mask is not None, f"attention.dynamic_mask=None ({_ARCH}'s attention is the dynamic "
                           f"mask's)")
    assert mask is not None and ffn is not None
    need(att.qkv_bias == att.out_bias == mask.bias,
         f"attention.qkv_bias={att.qkv_bias}, out_bias={att.out_bias} and dynamic_mask.bias="
         f"{mask.bias} ({_ARCH}'s attention_bias sets all three)")
    need(att.qk_norm == "head" and att.qk_norm_weights and att.q_norm_weights,
         f"attention.qk_norm={att.qk_norm!r} ({_ARCH} norms queries and keys per head)")
    scales = spec.residual_scales
    need(scales is not None and scales.per_sublayer == 1,
         f"residual_scales={scales} ({_ARCH} scales the residual by one vector per sublayer)")
    need(spec.norm.kind == "rmsnorm" and spec.norm.placement == "pre" and spec.norm.final,
         f"norm ({_ARCH}: RMSNorm before each sublayer and at the end)")
    need(spec.position.kind == "rope", f"position.kind={spec.position.kind!r} ({_ARCH}: RoPE)")
    config = {
        "model_type": _ARCH, "vocab_size": spec.vocab_size, "hidden_size": spec.d_model,
        "num_hidden_layers": spec.n_layers, "num_attention_heads": att.n_heads,
        "num_key_value_heads": spec.n_kv_heads, "head_dim": spec.head_dim_qk,
        "intermediate_size": ffn.d_ff, "hidden_act": act,
        "max_position_embeddings": spec.context_length, "attention_bias": mask.bias,
        "mlp_bias": ffn.bias, "keep_window_size": mask.keep, "sliding_window": None,
        "tie_word_embeddings": spec.tie_embeddings, "is_moe": moe is not None, **NO_TOKENS}
    if moe is not None:
        need(moe.product_keys and moe.n_shared_experts == 1 and moe.shared_width == ffn.d_ff,
             f"moe ({_ARCH}'s CDMoE: product-key experts beside one shared MLP of "
             f"intermediate_size)")
        config.update(num_experts=moe.n_experts, num_experts_per_tok=moe.top_k)
    return config


DOGE = ModelType(
    _ARCH, _read, write=_write, traits=Traits(), getattr_fields=("head_dim",),
    defaults={
        "vocab_size": 32768, "hidden_size": 1024, "intermediate_size": 2048,
        "num_hidden_layers": 32, "num_attention_heads": 8, "num_key_value_heads": None,
        "hidden_act": "silu", "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "attention_bias": False, "mlp_bias": False, "sliding_window": None,
        "keep_window_size": 2048, "is_moe": False, "num_experts": 16384,
        "num_experts_per_tok": 64,
    })
