"""Meituan LongCat-Flash: longcat_flash (arXiv 2509.01322; transformers'
modeling_longcat_flash.py).

Each of transformers' decoder layers (LongcatFlashDecoderLayer) is two attention blocks, each
with its dense MLP, and one MoE block beside them: the MoE reads the input of the first dense
MLP and its output joins the residual stream after the second (the shortcut-connected MoE). calc
reads one such layer as two layers (transformers' own num_hidden_layers = 2 · num_layers): an
MoE layer whose dense MLP is its shared expert (the same weights, run on the same input, every
token) and whose experts take moe.shortcut, then a dense layer. The router scores the FFN
experts and zero_expert_num zero-computation (identity) experts (moe.n_zero_experts).
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import moe_layout
from calc.hf.writing import base, experts, gated, need
from calc.spec import ModelSpec


def _layers(c: HFConfig) -> int:
    """transformers' decoder layers: num_layers, or half a num_hidden_layers the file gives
    (LongcatFlashConfig's num_hidden_layers setter: num_layers = value // 2, which wins over
    num_layers when a file has both)."""
    given = c.values.get("num_hidden_layers")
    if given is None:
        return c.size("num_layers")
    if isinstance(given, bool) or not isinstance(given, int) or given < 2:
        c.fail(f"num_hidden_layers={given!r} must be a whole number >= 2 (two attention "
               f"blocks per decoder layer)")
    if given % 2:
        c.fail(f"num_hidden_layers={given} must be even: transformers builds num_hidden_layers "
               f"// 2 = {given // 2} decoder layers of two attention blocks each, "
               f"{given - 1} blocks")
    return given // 2


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_longcat_flash.py (transformers 5.24.0). LongcatFlashMLA: DeepSeek-V3's latent
    # attention, queries always through q_lora_rank, attention_bias on q_a_proj,
    # kv_a_proj_with_mqa and o_proj. LongcatFlashMLP: SwiGLU of ffn_hidden_size, no biases.
    # LongcatFlashMoE: a router Linear(d, n_routed + zero_expert_num) (a bias where the config
    # says router_bias, read with getattr), top moe_topk of that pool; n_routed_experts SwiGLU
    # experts of expert_ffn_hidden_size; a token's slot on a zero expert is its input itself.
    heads = c.size("num_attention_heads")
    kv = c["num_key_value_heads"]
    if kv is not None and kv != heads:
        # repeat_kv by num_attention_heads // num_key_value_heads on keys that already have
        # one head each (expand_kv): transformers' forward fails for any other count
        c.fail(f"num_key_value_heads={kv} must equal num_attention_heads={heads}: latent "
               f"attention gives every head its own keys and values")
    nope, rope = c.size("qk_nope_head_dim", minimum=0), c.size("qk_rope_head_dim")
    if c.given("qk_head_dim") and c["qk_head_dim"] != nope + rope:
        c.fail(f"qk_head_dim={c['qk_head_dim']} must be qk_nope_head_dim + qk_rope_head_dim = "
               f"{nope + rope} (q_b_proj's heads are split into those two parts)")
    if c["head_dim"] != rope:
        # LongcatFlashRotaryEmbedding takes its width from head_dim, and the rotation is
        # applied to the qk_rope_head_dim part
        c.fail(f"head_dim={c['head_dim']} must equal qk_rope_head_dim={rope}: transformers "
               f"builds its rotary table head_dim wide for the rope part of each head")
    if not c.given("q_lora_rank"):
        c.fail("q_lora_rank must be given: LongCat-Flash's queries always pass through it")
    n_experts = c.size("n_routed_experts")
    zero = c["zero_expert_num"] or 0  # LongcatFlashExperts: `config.zero_expert_num or 0`
    if isinstance(zero, bool) or not isinstance(zero, int) or zero < 0:
        c.fail(f"zero_expert_num={zero!r} must be a whole number >= 0")
    chosen = c.size("moe_topk")
    if chosen > n_experts + zero:
        c.fail(f"moe_topk={chosen} must not exceed n_routed_experts + zero_expert_num = "
               f"{n_experts + zero}")
    if zero and (chosen * n_experts) % (n_experts + zero):
        c.fail(f"moe_topk={chosen}, n_routed_experts={n_experts}, zero_expert_num={zero}: calc "
               f"counts the FFN experts a token uses in expectation, moe_topk·n_routed/(n_routed "
               f"+ zero) = {chosen * n_experts}/{n_experts + zero}, which must be whole")
    d_ff = c.size("ffn_hidden_size")
    layers = 2 * _layers(c)
    placement, placed = moe_layout(c, [i % 2 == 0 for i in range(layers)])
    bias = c.flag("attention_bias")
    return {
        **decoder(
            c, {"n_heads": heads}, d_ff=d_ff, **placed,
            moe={"n_experts": n_experts, "d_expert": c.size("expert_ffn_hidden_size"),
                 "top_k": chosen, "n_zero_experts": zero, "shortcut": True,
                 # the first sublayer's dense MLP (mlps[0]) reads the MoE's input: a shared
                 # expert of ffn_hidden_size, ungated
                 "n_shared_experts": 1, "d_shared": d_ff,
                 "router_bias": bool(c["router_bias"]), **placement},
            attention={"qkv_bias": bias, "out_bias": bias, "mla": {
                "q_lora_rank": c.size("q_lora_rank"), "kv_lora_rank": c.size("kv_lora_rank"),
                "v_head_dim": c.size("v_head_dim"), "qk_nope_head_dim": nope,
                "qk_rope_head_dim": rope}}),
        "n_layers": layers,
    }


def _write(spec: ModelSpec) -> dict[str, Any]:
    mla, moe = spec.attention.mla, experts(spec, "longcat_flash")
    need(mla is not None and mla.q_lora_rank is not None,
         "attention.mla with a q_lora_rank (longcat_flash's queries pass through one)")
    assert mla is not None and spec.ffn is not None
    need(moe.shortcut, "moe.shortcut=False (longcat_flash's MoE is shortcut-connected)")
    written = base(spec, "longcat_flash")
    del written["num_hidden_layers"]
    return {**written, "num_layers": spec.n_layers // 2,
            "num_key_value_heads": spec.attention.n_heads,
            "hidden_act": gated(spec, "longcat_flash"),
            "max_position_embeddings": spec.context_length,
            "attention_bias": spec.attention.qkv_bias, "q_lora_rank": mla.q_lora_rank,
            "kv_lora_rank": mla.kv_lora_rank, "qk_nope_head_dim": mla.qk_nope_head_dim,
            "qk_rope_head_dim": mla.qk_rope_head_dim, "head_dim": mla.qk_rope_head_dim,
            "v_head_dim": mla.v_head_dim, "ffn_hidden_size": spec.ffn.d_ff,
            "n_routed_experts": moe.n_experts, "zero_expert_num": moe.n_zero_experts,
            "moe_topk": moe.top_k, "expert_ffn_hidden_size": moe.d_expert,
            "router_bias": moe.router_bias}


LONGCAT_FLASH = ModelType(
    "longcat_flash", _read, write=_write, traits=Traits(moe=True, mla=True),
    zero_expert_rows=True,
    aliases={"num_local_experts": "n_routed_experts", "num_experts_per_tok": "moe_topk",
             "intermediate_size": "ffn_hidden_size",
             "moe_intermediate_size": "expert_ffn_hidden_size"},
    # router_bias: read with getattr (LongcatFlashTopkRouter); num_hidden_layers: a property of
    # LongcatFlashConfig, not a field, that a file may still set (_layers)
    getattr_fields=("router_bias", "num_hidden_layers"),
    defaults={
        "vocab_size": 131072, "hidden_size": 6144, "num_layers": 28, "num_attention_heads": 64,
        "num_key_value_heads": None, "hidden_act": "silu", "max_position_embeddings": 131072,
        "tie_word_embeddings": False, "attention_bias": False, "ffn_hidden_size": 12288,
        "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "head_dim": 64, "v_head_dim": 128, "qk_head_dim": None,
        "moe_topk": 12, "n_routed_experts": 512, "zero_expert_num": 256,
        "expert_ffn_hidden_size": 2048,
    })
