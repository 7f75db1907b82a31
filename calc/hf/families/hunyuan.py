"""Hunyuan (Tencent): hunyuan_v1_dense, hunyuan_v1_moe (Hunyuan-A13B), hy_v3 (Hy3) and hy_v4
(Hy4: DeepSeek-V3.2's sparse attention with an output gate and sinks, in hyper-connected
layers)."""

from __future__ import annotations

from typing import Any

from calc.hf.families.deepseek import checked_indexer_types, read_mla_moe, write_dsa
from calc.hf.fields import (
    HFConfig,
    biased_decoder,
    decoder,
    decoder_defaults,
    heads,
    no_null_head_dim,
    top_k,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import ffn_kinds, merge, per_layer, sparse_layers
from calc.hf.writing import experts, llama_like, need, one_attention_bias
from calc.spec import ModelSpec


# ---- hunyuan_v1_dense -------------------------------------------------------------------------
def _read_dense(c: HFConfig) -> dict[str, Any]:
    # modeling_hunyuan_v1_dense.py: LlamaAttention (attention_bias on q, k, v, o) with RMSNorm
    # over each head's queries and keys (query_layernorm, key_layernorm); MLP without bias.
    # use_cla (K/V shared across layers) and use_qk_norm are the checkpoint's own code's
    # switches; transformers reads neither, so a file asking for another model is refused.
    no_null_head_dim(c)
    if c.values.get("use_cla", False) is not False:
        c.fail(f"use_cla={c.values['use_cla']!r}: transformers' hunyuan_v1_dense does not "
               f"share K/V across layers; the checkpoint's own code would count differently")
    if c.values.get("use_qk_norm", True) is not True:
        c.fail(f"use_qk_norm={c.values['use_qk_norm']!r}: transformers' hunyuan_v1_dense "
               f"always builds the q/k norms; the checkpoint's own code would not")
    bias = c.flag("attention_bias")
    return biased_decoder(c, bias, bias, False, attention={"qk_norm": "head"})


# No writer: qwen3's writer holds every spec it reads.
HUNYUAN_V1_DENSE = ModelType(
    "hunyuan_v1_dense", _read_dense,
    defaults=decoder_defaults(290943, 4096, 11008, 32, 32, None, "silu", 2048, False,
                              attention_bias=False, head_dim=None))


# ---- hunyuan_v1_moe ---------------------------------------------------------------------------
def _one_value(c: HFConfig, key: str) -> Any:
    """A field the checkpoint's code may list per layer: its one value."""
    value = c[key]
    if isinstance(value, list):
        if len(value) != c.size("num_hidden_layers") or len(set(value)) != 1:
            c.fail(f"{key}={value!r} must list one equal value per layer: calc's MoE has one "
                   f"value for every layer")
        value = value[0]
    return value


def _read_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_hunyuan_v1_moe.py: attention as hunyuan_v1_dense's (attention_bias on q, k, v,
    # o; RMSNorms over each head's queries and keys); every layer's MLP the MoE: a router
    # Linear(d, E) without bias, num_experts experts and one shared MLP, all of
    # intermediate_size, the shared one added ungated. The gate reads moe_topk per layer; the
    # experts read num_experts whole. moe_intermediate_size and num_shared_expert are the
    # checkpoint's own code's fields, which transformers does not read: a file whose values
    # would make that code build another model is refused, as use_cla is for the dense model.
    no_null_head_dim(c)
    width = c.size("intermediate_size")
    if "moe_intermediate_size" in c.values and _one_value(c, "moe_intermediate_size") != width:
        c.fail(f"moe_intermediate_size={c['moe_intermediate_size']!r}: transformers' "
               f"hunyuan_v1_moe builds its experts intermediate_size={width} wide")
    if "num_shared_expert" in c.values and _one_value(c, "num_shared_expert") != 1:
        c.fail(f"num_shared_expert={c['num_shared_expert']!r}: transformers' hunyuan_v1_moe "
               f"builds one shared MLP")
    for key, built in (("use_cla", False), ("use_qk_norm", True), ("use_mixed_mlp_moe", True)):
        if c.values.get(key, built) is not built:
            c.fail(f"{key}={c.values[key]!r}: transformers' hunyuan_v1_moe builds the model "
                   f"with {key}={built}; the checkpoint's own code would count differently")
    if isinstance(c["num_experts"], list):
        c.fail(f"num_experts={c['num_experts']!r}: transformers' hunyuan_v1_moe experts read "
               f"one number")
    n_experts = c.size("num_experts")
    chosen = _one_value(c, "moe_topk")
    if isinstance(chosen, bool) or not isinstance(chosen, int) or not 1 <= chosen <= n_experts:
        c.fail(f"moe_topk={c['moe_topk']!r} must be a whole number from 1 to "
               f"num_experts={n_experts}")
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head"},
                   moe={"n_experts": n_experts, "d_expert": width, "top_k": chosen,
                        "n_shared_experts": 1})


def _write_moe(spec: ModelSpec) -> dict[str, Any]:
    moe = experts(spec, "hunyuan_v1_moe")
    bias = one_attention_bias(spec, "hunyuan_v1_moe")
    return {**llama_like(spec, "hunyuan_v1_moe"), "attention_bias": bias,
            "intermediate_size": moe.d_expert, "num_experts": moe.n_experts,
            "moe_topk": moe.top_k}


HUNYUAN_V1_MOE = ModelType(
    "hunyuan_v1_moe", _read_moe, write=_write_moe, traits=Traits(moe=True),
    aliases={"num_experts_per_tok": "moe_topk", "num_local_experts": "num_experts"},
    defaults={
        "vocab_size": 290943, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": None,
        "hidden_act": "silu", "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "attention_bias": False, "num_experts": 1, "moe_topk": 1, "head_dim": None,
    })


# ---- hy_v3 ------------------------------------------------------------------------------------
def _read_hy_v3(c: HFConfig) -> dict[str, Any]:
    # modeling_hy_v3.py (Hy3): attention_bias on q, k, v, o, q_norm/k_norm per head; the MoE
    # where mlp_layer_types says "sparse" (configuration_hy_v3.py: every layer but the first):
    # a router without bias (e_score_correction_bias is a buffer), num_experts experts and
    # num_shared_experts shared ones as one MLP of num_shared × moe_intermediate_size; the
    # dense layers' MLP of intermediate_size. mlp_bias biases the dense and shared MLPs only.
    layers = c.size("num_hidden_layers")
    sparse = sparse_layers(c, [i >= 1 for i in range(layers)])
    if c.flag("mlp_bias") and any(sparse):
        c.fail("mlp_bias=true biases the dense and shared MLPs but not the routed experts; "
               "calc's ffn.bias covers all of them")
    n_experts = c.size("num_experts")
    # HYV3MLP(intermediate_size=0) falls back to intermediate_size: with num_shared_experts 0
    # the shared MLP is as wide as the dense one
    shared = c.size("num_shared_experts", minimum=0)
    moe = any(sparse) and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts"),
        "n_shared_experts": 1,
        "d_shared": shared * c.size("moe_intermediate_size") or c.size("intermediate_size")}
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), ffn_bias=c.flag("mlp_bias"), moe=moe or None,
                   attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head"})
    return merge(spec, per_layer(c, ffn=ffn_kinds(sparse)))


# No writer: exaone_moe's holds its specs without attention biases.
HY_V3 = ModelType(
    "hy_v3", _read_hy_v3, aliases={"num_local_experts": "num_experts"},
    defaults={
        "vocab_size": 120832, "hidden_size": 4096, "intermediate_size": 13312,
        "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
        "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 131072,
        "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
        "num_experts": 192, "num_experts_per_tok": 8, "num_shared_experts": 1,
        "moe_intermediate_size": 1536, "mlp_layer_types": None,
    })


# ---- hy_v4 ------------------------------------------------------------------------------------
def _indexer_types(c: HFConfig, layers: int) -> list[str]:
    """indexer_types, else configuration_hy_v4.py's rule: layer i has its own indexer ("full")
    when i == 0 or (i − 1) % 4 == 0, else reuses the last one's keys ("shared")."""
    if not c.given("indexer_types"):
        return ["full" if i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(layers)]
    return checked_indexer_types(c, c["indexer_types"], layers)


def _read_hy_v4(c: HFConfig) -> dict[str, Any]:
    # modeling_hy_v4.py (transformers 5.24.0): HYV4Attention is DeepSeek-V3.2's MLA (q_a_proj
    # always built, attention_bias on q_a_proj, kv_a_proj_with_mqa and o_proj) with its DSA
    # indexer (HYV4Indexer, a DeepseekV32Indexer: wq_b, wk, k_norm LayerNorm, weights_proj) on
    # the "full" layers of indexer_types, plus gate_proj Linear(d, h·v_head_dim, bias=False)
    # whose sigmoid multiplies each head's output and one learned sink logit per head (sinks).
    # HYV4MoE where mlp_layer_types says "sparse" (default: all but layer 0): a router
    # without bias (e_score_correction_bias is a buffer), n_routed_experts experts of
    # moe_intermediate_size and one shared MLP of n_shared_experts × moe_intermediate_size;
    # HYV4MLP of intermediate_size elsewhere. HYV4DecoderLayer wraps the attention and the MLP
    # in a HYV4HyperConnection each (hc_mult streams, no stream mix), HYV4Model collapses the
    # streams by HYV4HyperHead before the final norm. The MTP layers are not built
    # (_keys_to_ignore_on_load_unexpected). layer_types only keys the one causal mask.
    if not c.given("q_lora_rank"):
        c.fail("q_lora_rank=null: HYV4Attention always projects queries through q_a_proj, "
               "whose latent the indexer reads")
    layers = c.size("num_hidden_layers")
    sparse = sparse_layers(c, [i >= 1 for i in range(layers)])
    spec = read_mla_moe(c, v3=True, sparse=sparse, mtp=False)
    types = _indexer_types(c, layers)
    if c.size("index_head_dim") < c.size("qk_rope_head_dim", minimum=0):
        c.fail(f"index_head_dim={c['index_head_dim']} < qk_rope_head_dim="
               f"{c['qk_rope_head_dim']}: the indexer's RoPE part does not fit its head")
    spec["attention"].update({
        "sinks": True, "output_gate": True,
        "indexer": {"n_heads": c.size("index_n_heads"), "head_dim": c.size("index_head_dim"),
                    "topk": c.size("index_topk"),
                    "shared_layers": tuple(i for i, t in enumerate(types) if t == "shared")}})
    spec["hyper_connections"] = {"streams": c.size("hc_mult")}
    return spec


def _write_hy_v4(spec: ModelSpec) -> dict[str, Any]:
    att, hc = spec.attention, spec.hyper_connections
    need(hc is not None, "hyper_connections=None (hy_v4's layers are hyper-connected)")
    assert hc is not None
    need(not hc.residual_mix, "hyper_connections.residual_mix (hy_v4's maps do not mix the "
                              "streams; DeepSeek-V4's do)")
    need(att.sinks, "attention.sinks=false (hy_v4's attention has a sink per head)")
    need(att.output_gate and att.output_gate_per == "channel",
         "attention.output_gate (hy_v4 gates each channel of the attention output)")
    need(att.qkv_bias == att.out_bias, f"attention.qkv_bias={att.qkv_bias} with out_bias="
                                       f"{att.out_bias} (hy_v4's attention_bias is both)")
    dense = spec.moe is None
    if dense:  # every layer's MLP dense: the experts' fields build nothing (mlp_layer_types)
        spec = spec.updated(**{"moe": {"n_experts": 2, "top_k": 1, "d_expert": 1},
                               "layers.ffn_pattern": ["moe"], "layers.exceptions": []})
    out = write_dsa(spec, "hy_v4")
    if dense:
        out["mlp_layer_types"] = ["dense"] * spec.n_layers
    indexer = att.indexer
    shared = set(indexer.shared_layers) if indexer else set()
    # HYV4Config has no first_k_dense_replace: mlp_layer_types places the MoE
    del out["first_k_dense_replace"]
    return {**out, "hc_mult": hc.streams,
            "indexer_types": ["shared" if i in shared else "full" for i in range(spec.n_layers)]}


HY_V4 = ModelType(
    "hy_v4", _read_hy_v4, write=_write_hy_v4, traits=Traits(moe=True, mla=True),
    # e_score_correction_bias: a buffer of HYV4TopkRouter (modeling_hy_v4.py)
    router_bias_buffer=True, aliases={"num_local_experts": "n_routed_experts"},
    defaults={
        "vocab_size": 120832, "hidden_size": 2816, "intermediate_size": 6912,
        "moe_intermediate_size": 768, "num_hidden_layers": 34, "num_attention_heads": 32,
        "hidden_act": "silu", "max_position_embeddings": 262144, "tie_word_embeddings": False,
        "attention_bias": False, "n_routed_experts": 256, "n_shared_experts": 1,
        "num_experts_per_tok": 8, "q_lora_rank": 1536, "kv_lora_rank": 512,
        "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256,
        "mlp_layer_types": None, "index_topk": 2048, "index_head_dim": 128,
        "index_n_heads": 16, "indexer_types": None, "hc_mult": 4,
    })
