"""GLM (Zhipu AI): glm, glm4, glm4_moe (GLM-4.5), glm4_moe_lite (GLM-4.7-Flash: DeepSeek-V3's
latent attention and experts) and glm_moe_dsa (GLM-5: DeepSeek-V3.2's sparse attention, with
layers that reuse an earlier layer's selection).

Partial rotary embeddings (partial_rotary_factor) change no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.families.deepseek import (
    DSA_DEFAULTS,
    checked_indexer_types,
    read_dsa,
    read_mla_moe,
    write_dsa,
)
from calc.hf.fields import (
    HFConfig,
    biased_decoder,
    decoder,
    decoder_defaults,
    no_null_head_dim,
    top_k,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import sparse_layers
from calc.hf.writing import experts, llama_like, one_group
from calc.spec import ModelSpec


def _read_glm(c: HFConfig) -> dict[str, Any]:
    # modeling_glm.py: attention_bias on q, k, v only (o_proj has none); Phi-3's fused gate_up
    # MLP without bias. glm4 adds post_self_attn_layernorm and post_mlp_layernorm: a norm
    # before and after each sublayer.
    no_null_head_dim(c)
    spec = biased_decoder(c, c.flag("attention_bias"), False, False)
    if c.type == "glm4":
        spec["norm"] = {"kind": "rmsnorm", "placement": "sandwich"}
    return spec


# ---- glm --------------------------------------------------------------------------------------
# No writer: seed_oss's writer holds every spec it reads.
GLM = ModelType(
    "glm", _read_glm,
    defaults=decoder_defaults(151552, 4096, 13696, 40, 32, 2, "silu", 131072, False,
                              attention_bias=True, head_dim=128))


# ---- glm4 -------------------------------------------------------------------------------------
def _write_glm4(spec: ModelSpec) -> dict[str, Any]:
    return {**llama_like(spec, "glm4"), "attention_bias": spec.attention.qkv_bias}


GLM4 = ModelType(
    "glm4", _read_glm, write=_write_glm4, traits=Traits(),
    defaults=decoder_defaults(151552, 4096, 13696, 40, 32, 2, "silu", 131072, False,
                              attention_bias=True, head_dim=128))


# ---- glm4_moe ---------------------------------------------------------------------------------
def _read_glm4_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_glm4_moe.py: attention_bias on q, k, v (o_proj has none), q/k norms per head when
    # use_qk_norm; from first_k_dense_replace on, the MoE: a router without bias
    # (e_score_correction_bias is a buffer), n_shared_experts shared experts as one MLP of
    # n_shared × moe_intermediate_size; before it the dense MLP of intermediate_size. The
    # num_nextn_predict_layers MTP layers of the release are not built by transformers: calc
    # counts them apart, as for DeepSeek-V3.
    layers, first = c.size("num_hidden_layers"), c.size("first_k_dense_replace", minimum=0)
    n_experts = c.size("n_routed_experts")
    # getattr(config, "head_dim", hidden_size // heads): floor division when heads do not
    # divide the width (the class's own default, 96 heads over 4096)
    h, d = c.size("num_attention_heads"), c.size("hidden_size")
    kv = c.size("num_key_value_heads") if c.given("num_key_value_heads") else h
    if h % kv:
        c.fail(f"num_key_value_heads={kv} must divide num_attention_heads={h}")
    width = c.size("head_dim") if c.given("head_dim") else d // h
    moe = first < layers and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "n_routed_experts"),
        "n_shared_experts": c.size("n_shared_experts", minimum=0), "first_dense_layers": first}
    return decoder(c, {"n_heads": h, "n_kv_heads": kv, "head_dim": width}, moe=moe or None,
                   mtp_modules=c.size("num_mtp_layers", 0),
                   attention={"qkv_bias": c.flag("attention_bias"),
                              "qk_norm": "head" if c.flag("use_qk_norm") else "none"})


def _write_glm4_moe(spec: ModelSpec) -> dict[str, Any]:
    moe = experts(spec, "glm4_moe")
    return {**llama_like(spec, "glm4_moe"), "attention_bias": spec.attention.qkv_bias,
            "use_qk_norm": spec.attention.qk_norm != "none",
            "n_routed_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert, "n_shared_experts": moe.n_shared_experts,
            "first_k_dense_replace": moe.first_dense_layers, **one_group(spec, "glm4_moe"),
            "num_nextn_predict_layers": spec.mtp_modules}


GLM4_MOE = ModelType(
    "glm4_moe", _read_glm4_moe, write=_write_glm4_moe, traits=Traits(moe=True),
    getattr_fields=("head_dim",),
    aliases={"num_local_experts": "n_routed_experts",
             "num_nextn_predict_layers": "num_mtp_layers"},
    defaults={
        "hidden_act": "silu", "vocab_size": 151552,
        "hidden_size": 4096, "intermediate_size": 10944, "num_hidden_layers": 46,
        "num_attention_heads": 96, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "attention_bias": False, "moe_intermediate_size": 1408, "num_experts_per_tok": 8,
        "n_shared_experts": 1, "n_routed_experts": 128, "first_k_dense_replace": 1,
        "use_qk_norm": False, "num_mtp_layers": 1,
    })


# ---- glm4_moe_lite ----------------------------------------------------------------------------
def _read_glm4_moe_lite(c: HFConfig) -> dict[str, Any]:
    # modeling_glm4_moe_lite.py: DeepSeek-V3's layers (multi-head latent attention with
    # attention_bias on q_a, kv_a and o; n_shared_experts as one MLP; the routing bias a
    # buffer), the MoE where mlp_layer_types says "sparse" (configuration_glm4_moe_lite.py:
    # default every layer but the first); no MTP layers.
    layers = c.size("num_hidden_layers")
    return read_mla_moe(c, v3=True, mtp=False,
                         sparse=sparse_layers(c, [i >= 1 for i in range(layers)]))


# No writer: deepseek_v3's holds its specs.
GLM4_MOE_LITE = ModelType(
    "glm4_moe_lite", _read_glm4_moe_lite,
    aliases={"num_local_experts": "n_routed_experts", "head_dim": "qk_rope_head_dim"},
    defaults={
        "vocab_size": 154880, "hidden_size": 2048, "intermediate_size": 10240,
        "moe_intermediate_size": 1536, "num_hidden_layers": 47, "num_attention_heads": 20,
        "n_shared_experts": 1, "n_routed_experts": 64, "kv_lora_rank": 512,
        "q_lora_rank": 768, "qk_rope_head_dim": 64, "v_head_dim": 256, "qk_nope_head_dim": 192,
        "num_experts_per_tok": 4, "hidden_act": "silu", "max_position_embeddings": 202752,
        "tie_word_embeddings": False, "mlp_layer_types": None, "attention_bias": False,
    })


# ---- glm_moe_dsa ------------------------------------------------------------------------------
def _read_glm_moe_dsa(c: HFConfig) -> dict[str, Any]:
    # modeling_glm_moe_dsa.py: DeepSeek-V3.2's layers (calc.hf.families.deepseek.read_dsa); a
    # layer whose indexer_types entry is "shared" builds no indexer and reuses the previous
    # layer's top-k (GlmMoeDsaAttention). configuration_glm_moe_dsa.py: indexer_types, else
    # index_topk_pattern ("F"/"S" per layer), else layer i is full when
    # max(i - index_skip_topk_offset + 1, 0) % index_topk_freq == 0.
    layers = c.size("num_hidden_layers")
    if c.given("indexer_types"):
        types = c["indexer_types"]
    elif c.given("index_topk_pattern"):
        pattern = c["index_topk_pattern"]
        types = ([{"F": "full", "S": "shared"}.get(ch, ch) for ch in pattern]
                 if isinstance(pattern, str) else pattern)
    else:  # kwargs, not fields: transformers' fallbacks 1 and 2
        freq = max(c.size("index_topk_freq", minimum=0) if c.given("index_topk_freq") else 1, 1)
        offset = (c.size("index_skip_topk_offset", minimum=0)
                  if c.given("index_skip_topk_offset") else 2)
        types = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared"
                 for i in range(layers)]
    types = checked_indexer_types(c, types, layers)
    return read_dsa(c, tuple(i for i, kind in enumerate(types) if kind == "shared"))


def _write_glm_moe_dsa(spec: ModelSpec) -> dict[str, Any]:
    out = write_dsa(spec, "glm_moe_dsa")
    indexer = spec.attention.indexer
    shared = set(indexer.shared_layers) if indexer else set()
    return {**out, "indexer_types": ["shared" if i in shared else "full"
                                     for i in range(spec.n_layers)]}


GLM_MOE_DSA = ModelType(
    "glm_moe_dsa", _read_glm_moe_dsa, write=_write_glm_moe_dsa,
    traits=Traits(moe=True, mla=True), router_bias_buffer=True,
    aliases={"num_local_experts": "n_routed_experts"},
    # index_topk_pattern, index_topk_freq and index_skip_topk_offset: keywords
    # GlmMoeDsaConfig.__post_init__ reads from its kwargs, not fields
    getattr_fields=("index_topk_pattern", "index_topk_freq", "index_skip_topk_offset"),
    defaults={
        **DSA_DEFAULTS, "vocab_size": 154880, "hidden_size": 6144, "intermediate_size": 12288,
        "num_hidden_layers": 78, "num_attention_heads": 64, "q_lora_rank": 2048,
        "v_head_dim": 256, "qk_nope_head_dim": 192, "max_position_embeddings": 202752,
        "index_n_heads": 32, "indexer_types": None,
    })
