"""DeepSeek: deepseek_v2, deepseek_v3 and deepseek_v32 (multi-head latent attention and mixtures
of experts with shared experts; V3.2 adds DeepSeek Sparse Attention's indexer), and SK Telecom's
axk1 (A.X-K1: DeepSeek-V3's layers with a norm over each MoE block's output) and axk2
(A.X-K2: DeepSeek-V3.2's layers with an output gate projected from the query latent and gated
norms).
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, divides, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import moe_layout, sparse_layers
from calc.hf.writing import base, experts, gated, need, one_group
from calc.spec import ModelSpec

_MLA: dict[str, Any] = {
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "kv_lora_rank": 512,
    "q_lora_rank": 1536, "attention_bias": False, "hidden_act": "silu",
    "tie_word_embeddings": False,
}
_TRAITS = Traits(moe=True, mla=True)
# their writers write attention.indexer
DSA_TYPES = ("deepseek_v32", "glm_moe_dsa", "hy_v4", "axk2")


def read_mla_moe(c: HFConfig, v3: bool, sparse: list[bool] | None = None,
          mtp: bool | None = None) -> dict[str, Any]:
    # modeling_deepseek_v2.py / _v3.py: MLA (q_lora_rank null projects queries directly),
    # attention_bias on q_a_proj, kv_a_proj_with_mqa and o_proj; layers from
    # first_k_dense_replace on are MoE with n_shared_experts shared experts (one MLP of
    # n_shared × moe_intermediate_size, the same weights as n_shared experts).
    if not v3:
        divides(c)
        if c.flag("mlp_bias"):
            c.fail("mlp_bias=true biases the dense and shared MLPs but not the routed "
                   "experts; calc's ffn.bias covers all of them")
    bias = c.flag("attention_bias")
    n_experts = c.size("n_routed_experts")
    layers = c.size("num_hidden_layers")
    if sparse is None:
        first = c.size("first_k_dense_replace", minimum=0)
        # moe_layer_freq: DeepSeek's own modeling_deepseek.py makes layer i MoE when i >=
        # first_k_dense_replace and i % moe_layer_freq == 0 (every released checkpoint has 1);
        # transformers 5.x ignores the field (calc.reports.verify says so and does not
        # compare).
        freq = c.size("moe_layer_freq") if "moe_layer_freq" in c.values else 1
        sparse = [i >= first and i % freq == 0 for i in range(layers)]
    placement, placed = moe_layout(c, sparse) if any(sparse) else (None, {})
    moe = placement is not None and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "n_routed_experts"),
        "n_shared_experts": c.size("n_shared_experts", minimum=0), **(placement or {}),
        # DeepSeek-V3's e_score_correction_bias is an nn.Buffer in transformers
        # (DeepseekV3TopkRouter), not a parameter, so transformers' count leaves out its
        # 58 × 256 values; an imported config matches transformers. The deepseek-v3 preset keeps
        # DeepSeek's published 671,026,419,200, which counts them (router_bias=true).
        "router_bias": False,
    }
    return decoder(
        c, {"n_heads": c.size("num_attention_heads")}, moe=moe or None, **placed,
        attention={"qkv_bias": bias, "out_bias": bias, "mla": {
            "q_lora_rank": c.size("q_lora_rank") if c.given("q_lora_rank") else None,
            "kv_lora_rank": c.size("kv_lora_rank"), "v_head_dim": c.size("v_head_dim"),
            "qk_nope_head_dim": c.size("qk_nope_head_dim", minimum=0),
            "qk_rope_head_dim": c.size("qk_rope_head_dim", minimum=0)}},
        mtp_modules=c.size("num_mtp_layers", minimum=0) if (v3 if mtp is None else mtp) else 0)


def _write(spec: ModelSpec, model_type: str) -> dict[str, Any]:
    mla, moe = spec.attention.mla, experts(spec, model_type)
    need(mla is not None, f"attention.mla=None ({model_type} uses multi-head latent attention)")
    need(spec.attention.indexer is None or model_type in DSA_TYPES,
         f"attention.indexer ({model_type} has no DeepSeek Sparse Attention; deepseek_v32 has)")
    return {**base(spec, model_type), "intermediate_size": spec.ffn.d_ff,
            # MLA gives every head its own key and value, yet transformers' attention still
            # repeats them num_attention_heads // num_key_value_heads times (repeat_kv in
            # modeling_deepseek_v3.py): only equal counts run, and DeepseekV3Config's default
            # of 128 empties the keys of any smaller model
            "num_key_value_heads": spec.attention.n_heads,
            "hidden_act": gated(spec, model_type),
            "max_position_embeddings": spec.context_length,
            "attention_bias": spec.attention.qkv_bias, **mla.model_dump(),
            "n_routed_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert, "n_shared_experts": moe.n_shared_experts,
            "first_k_dense_replace": moe.first_dense_layers}


# ---- deepseek_v2 ------------------------------------------------------------------------------
def _write_deepseek_v2(spec: ModelSpec) -> dict[str, Any]:
    # DeepSeek-V2's router takes the top-k of all experts (topk_method "greedy"): one group
    return {**_write(spec, "deepseek_v2"), "mlp_bias": False, "n_group": 1, "topk_group": 1}


DEEPSEEK_V2 = ModelType(
    "deepseek_v2", lambda c: read_mla_moe(c, v3=False), write=_write_deepseek_v2, traits=_TRAITS,
    aliases={"num_experts": "n_routed_experts"},
    defaults={
        **_MLA, "vocab_size": 102400, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
        "mlp_bias": False, "first_k_dense_replace": 0, "n_routed_experts": 64,
        "n_shared_experts": 2, "num_experts_per_tok": None, "moe_intermediate_size": 1407,
    })


# ---- deepseek_v3 ------------------------------------------------------------------------------
def _write_deepseek_v3(spec: ModelSpec) -> dict[str, Any]:
    return {**_write(spec, "deepseek_v3"), **one_group(spec, "deepseek_v3"),
            "num_nextn_predict_layers": spec.mtp_modules}


DEEPSEEK_V3 = ModelType(
    "deepseek_v3", lambda c: read_mla_moe(c, v3=True), write=_write_deepseek_v3, traits=_TRAITS,
    # e_score_correction_bias: a buffer of DeepseekV3TopkRouter (modeling_deepseek_v3.py)
    router_bias_buffer=True,
    aliases={"num_local_experts": "n_routed_experts",
             "num_nextn_predict_layers": "num_mtp_layers"},
    defaults={
        **_MLA, "vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
        "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
        "n_shared_experts": 1, "n_routed_experts": 256, "num_experts_per_tok": 8,
        "first_k_dense_replace": 3, "max_position_embeddings": 4096, "num_mtp_layers": 1,
    })


# ---- deepseek_v32 -----------------------------------------------------------------------------
def checked_indexer_types(c: HFConfig, types: Any, layers: int) -> list[str]:
    """indexer_types as GLM-5 and HunYuan V4 list them: for each layer "full" (its own
    indexer) or "shared" (the last full layer's selection), the first full, as transformers
    requires; one line naming the field otherwise."""
    if not isinstance(types, list) or len(types) != layers or not set(types) <= {"full",
                                                                                 "shared"}:
        c.fail(f"indexer_types must list 'full' or 'shared' for each of the {layers} layers, "
               f"got {types!r}")
    if types[0] == "shared":
        c.fail("indexer_types[0]='shared': no earlier layer selects its keys (transformers "
               "raises on it)")
    return types


def read_dsa(c: HFConfig, shared: tuple[int, ...] = (),
             sparse: list[bool] | None = None) -> dict[str, Any]:
    """DeepSeek-V3's layers with DSA's indexer on every attention layer (modeling_deepseek_v32.py:
    DeepseekV32Attention, DeepseekV32Indexer), the MoE where mlp_layer_types says "sparse"
    (configuration_deepseek_v32.py: default from layer first_k_dense_replace on; `sparse`, a
    type's own default); the MTP layers are not built (DeepseekV32PreTrainedModel ignores their
    weights)."""
    # AXK1Attention (which DeepseekV32Attention extends) always projects queries through
    # q_lora_rank, whose latent the indexer reads
    if not c.given("q_lora_rank"):
        c.fail("q_lora_rank=null: DSA's indexer reads MLA's query latent (transformers' "
               "DeepseekV32Attention always builds q_a_proj)")
    if sparse is None:
        layers = c.size("num_hidden_layers")
        first = c.size("first_k_dense_replace", minimum=0)
        sparse = sparse_layers(c, [i >= first for i in range(layers)])
    spec = read_mla_moe(c, v3=True, mtp=False, sparse=sparse)
    spec["attention"]["indexer"] = {
        "n_heads": c.size("index_n_heads"), "head_dim": c.size("index_head_dim"),
        "topk": c.size("index_topk"), "shared_layers": shared}
    if c.size("index_head_dim") < c.size("qk_rope_head_dim", minimum=0):
        c.fail(f"index_head_dim={c['index_head_dim']} < qk_rope_head_dim="
               f"{c['qk_rope_head_dim']}: the indexer's RoPE part does not fit its head")
    return spec


def write_dsa(spec: ModelSpec, model_type: str) -> dict[str, Any]:
    """deepseek_v32's fields (glm_moe_dsa's too): DeepSeek-V3's and the indexer's."""
    indexer = spec.attention.indexer
    need(indexer is not None, f"attention.indexer=None ({model_type} is DeepSeek Sparse "
                              f"Attention)")
    assert indexer is not None
    need(spec.mtp_modules == 0, f"mtp_modules={spec.mtp_modules} (transformers does not build "
                                f"{model_type}'s multi-token-prediction layers)")
    out = {**_write(spec, model_type), **one_group(spec, model_type),
           "index_n_heads": indexer.n_heads, "index_head_dim": indexer.head_dim,
           "index_topk": indexer.topk}
    out["mlp_layer_types"] = ["sparse" if moe else "dense" for moe in spec.moe_layers]
    return out


def _write_deepseek_v32(spec: ModelSpec) -> dict[str, Any]:
    need(not spec.attention.indexer or not spec.attention.indexer.shared_layers,
         "attention.indexer.shared_layers (deepseek_v32 gives every layer its own indexer)")
    return write_dsa(spec, "deepseek_v32")


DSA_DEFAULTS: dict[str, Any] = {
    **_MLA, "vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
    "n_shared_experts": 1, "n_routed_experts": 256, "num_experts_per_tok": 8,
    "first_k_dense_replace": 3, "max_position_embeddings": 163840, "mlp_layer_types": None,
    "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 64,
}
DEEPSEEK_V32 = ModelType(
    "deepseek_v32", read_dsa, write=_write_deepseek_v32, traits=_TRAITS,
    # e_score_correction_bias: a buffer of DeepseekV32TopkRouter (modeling_deepseek_v32.py)
    router_bias_buffer=True,
    aliases={"num_local_experts": "n_routed_experts"}, defaults=DSA_DEFAULTS)


# ---- axk1 -------------------------------------------------------------------------------------
def _axk_sparse(c: HFConfig) -> list[bool]:
    """configuration_axk1.py and configuration_axk2.py: mlp_layer_types defaults to "sparse"
    where i >= first_k_dense_replace and i % moe_layer_freq == 0 (two keywords their
    __post_init__ pops, default 1 each)."""
    layers = c.size("num_hidden_layers")
    first, freq = (c.size(key, minimum=0 if key == "first_k_dense_replace" else 1)
                   if c.given(key) else 1
                   for key in ("first_k_dense_replace", "moe_layer_freq"))
    return sparse_layers(c, [i >= first and i % freq == 0 for i in range(layers)])


def _read_axk1(c: HFConfig) -> dict[str, Any]:
    # modeling_axk1.py (transformers 5.24.0): DeepSeek-V3's MLA, always through q_lora_rank
    # (AXK1Attention builds q_a_proj whatever the config says), its router (the
    # e_score_correction_bias a buffer) and shared experts; AXK1MoE ends in post_mlp_layernorm,
    # an RMSNorm over the routed and shared experts' sum, on the MoE ("sparse") layers only.
    # configuration_axk1.py: mlp_layer_types defaults to "sparse" where i >=
    # first_k_dense_replace and i % moe_layer_freq == 0 (two keywords its __post_init__ pops,
    # default 1 each); the model builds no multi-token-prediction layer.
    if not c.given("q_lora_rank"):
        c.fail("q_lora_rank=null: transformers' AXK1Attention always projects queries "
               "through q_a_proj of q_lora_rank")
    spec = read_mla_moe(c, v3=True, mtp=False, sparse=_axk_sparse(c))
    if spec.get("moe"):
        spec["moe"]["output_norm"] = True
    return spec


def _write_axk1(spec: ModelSpec) -> dict[str, Any]:
    mla, moe = spec.attention.mla, experts(spec, "axk1")
    need(moe.output_norm, "moe.output_norm=false (A.X-K1's MoE blocks end in "
                          "post_mlp_layernorm)")
    need(mla is not None and mla.q_lora_rank is not None,
         "attention.mla.q_lora_rank=None (A.X-K1 always projects queries through a latent)")
    need(spec.mtp_modules == 0, f"mtp_modules={spec.mtp_modules} (transformers does not build "
                                f"axk1's multi-token-prediction layers)")
    out = {**_write(spec, "axk1"), **one_group(spec, "axk1")}
    del out["first_k_dense_replace"]
    return {**out, "mlp_layer_types": ["sparse" if m else "dense" for m in spec.moe_layers]}


AXK1 = ModelType(
    "axk1", _read_axk1, write=_write_axk1, traits=_TRAITS,
    # e_score_correction_bias: a buffer of AXK1TopkRouter (modeling_axk1.py)
    router_bias_buffer=True,
    aliases={"num_local_experts": "n_routed_experts"},
    # keywords configuration_axk1.py's __post_init__ pops, not fields
    getattr_fields=("first_k_dense_replace", "moe_layer_freq"),
    defaults={
        **_MLA, "vocab_size": 163840, "hidden_size": 7168, "intermediate_size": 18432,
        "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 64,
        "n_shared_experts": 1, "n_routed_experts": 192, "num_experts_per_tok": 8,
        "max_position_embeddings": 32768, "mlp_layer_types": None,
        "first_k_dense_replace": None, "moe_layer_freq": None,
    })


# ---- deepseek_v4 ------------------------------------------------------------------------------
# configuration_deepseek_v4.py: the legacy per-layer compress_ratios (0, 4, 128) name the
# attention of each layer
_RATIO_KINDS = {0: "sliding_attention", 4: "compressed_sparse_attention",
                128: "heavily_compressed_attention"}
V4_MLP_KINDS = ("hash_moe", "moe")
# configuration_deepseek_v4.py DeepseekV4Config.default_compress_rates, which __post_init__
# sets where compress_rates is None
_DEFAULT_RATES = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}


def _v4_layer_types(c: HFConfig, layers: int) -> list[str]:
    """layer_types as DeepseekV4Config.__post_init__ settles them: given, else from the legacy
    compress_ratios, else 2 heavily compressed layers then compressed sparse and heavily
    compressed in turn; cut to num_hidden_layers."""
    if c.given("layer_types"):
        types = c["layer_types"]
    elif c.given("compress_ratios"):
        ratios = c["compress_ratios"]
        if not isinstance(ratios, list) or not set(ratios) <= set(_RATIO_KINDS):
            c.fail(f"compress_ratios={ratios!r} must list 0, 4 or 128 for each layer")
        types = [_RATIO_KINDS[r] for r in ratios]
    else:
        types = (["heavily_compressed_attention"] * min(layers, 2)
                 + ["compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"
                    for i in range(max(layers - 2, 0))])
    types = list(types)[:layers] if isinstance(types, list) else types
    if not isinstance(types, list) or len(types) != layers or not set(types) <= set(
            _RATIO_KINDS.values()):
        c.fail(f"layer_types must give each of the {layers} layers one of "
               f"{', '.join(_RATIO_KINDS.values())}, got {types!r}")
    return types


def _v4_mlp_layer_types(c: HFConfig, layers: int) -> list[str]:
    """mlp_layer_types, else the first num_hash_layers (3 by default) hash_moe, the rest moe."""
    if c.given("mlp_layer_types"):
        types = c["mlp_layer_types"]
        types = list(types)[:layers] if isinstance(types, list) else types
    else:
        hashed = c.size("num_hash_layers", minimum=0) if c.given("num_hash_layers") else 3
        types = ["hash_moe"] * min(layers, hashed) + ["moe"] * max(0, layers - hashed)
    if not isinstance(types, list) or len(types) != layers or not set(types) <= set(
            V4_MLP_KINDS):
        c.fail(f"mlp_layer_types must give each of the {layers} layers hash_moe or moe, got "
               f"{types!r}")
    return types


def _v4_rates(c: HFConfig) -> dict[str, Any]:
    """compress_rates as DeepseekV4Config.__post_init__ settles them: the file's dict, else the
    defaults (4 and 128), the legacy compress_rate_csa and compress_rate_hca over either."""
    rates = c["compress_rates"]
    if rates is None:  # left out or null: the class's default_compress_rates
        rates = _DEFAULT_RATES
    if not isinstance(rates, dict):
        c.fail(f"compress_rates={rates!r} must map compressed_sparse_attention and "
               f"heavily_compressed_attention to whole numbers")
    rates = dict(rates)
    for key, kind in (("compress_rate_csa", "compressed_sparse_attention"),
                      ("compress_rate_hca", "heavily_compressed_attention")):
        if c.given(key):
            rates[kind] = c[key]
    return rates


def _v4_compression(c: HFConfig, types: list[str]) -> dict[str, Any] | None:
    """attention.compression from the layers' types, compress_rates and the indexer's sizes
    (None where every layer slides)."""
    sparse = tuple(i for i, t in enumerate(types) if t == "compressed_sparse_attention")
    heavy = tuple(i for i, t in enumerate(types) if t == "heavily_compressed_attention")
    if not sparse and not heavy:
        return None
    rates = _v4_rates(c)
    out: dict[str, Any] = {"sparse_layers": sparse, "heavy_layers": heavy}
    for layers, kind, name in ((sparse, "compressed_sparse_attention", "sparse_rate"),
                               (heavy, "heavily_compressed_attention", "heavy_rate")):
        if not layers:
            continue
        rate = rates.get(kind)
        if isinstance(rate, bool) or not isinstance(rate, int) or rate < 1:
            c.fail(f"compress_rates[{kind!r}]={rate!r} must be a whole number >= 1 (the "
                   f"{kind} layers pool that many tokens into one entry)")
        out[name] = rate
    if sparse:
        out["indexer"] = {"n_heads": c.size("index_n_heads"),
                          "head_dim": c.size("index_head_dim"),
                          "topk": c.size("index_topk")}
    return out


def _read_deepseek_v4(c: HFConfig) -> dict[str, Any]:
    # modeling_deepseek_v4.py (transformers 5.24.0). DeepseekV4Attention: queries through a
    # latent (q_a_proj d → q_lora_rank, q_a_norm, q_b_proj → h·head_dim, then q_b_norm, an
    # RMSNorm per head without weight), one key-and-value head (kv_proj d → head_dim, kv_norm
    # with weight; the same tensor is the keys and the values, whatever num_key_value_heads
    # says: num_key_value_groups = num_attention_heads), a sink logit per head, and the grouped
    # output projection (o_a_proj: o_groups blocks of h·head_dim/o_groups → o_lora_rank, then
    # o_b_proj o_groups·o_lora_rank → d), no biases (attention_bias builds nothing). Every
    # layer attends through the sliding-window mask (create_sliding_window_causal_mask).
    # DeepseekV4SparseMoeBlock on every
    # layer: n_routed_experts experts of moe_intermediate_size, the router a bare weight
    # (e_score_correction_bias a buffer; hash_moe layers' DeepseekV4HashRouter keeps the weight
    # and a tid2eid buffer) and one shared DeepseekV4MLP of moe_intermediate_size whatever
    # n_shared_experts says (it reads intermediate_size, mapped to moe_intermediate_size),
    # biased by mlp_bias as the experts are not. Each layer's two sublayers are wrapped in
    # DeepseekV4HyperConnection (hc_mult streams, with the stream mix), DeepseekV4HyperHead
    # collapses them before the final norm; the MTP layers are not built.
    # The compressed layers (layer_types compressed_sparse_attention, CSA, and
    # heavily_compressed_attention, HCA) slide as the others do and add a compressor's keys
    # (calc.spec.attention.CompressionSpec): DeepseekV4CSACompressor with its DeepseekV4Indexer
    # (index_n_heads, index_head_dim, index_topk) pooling compress_rates' CSA rate, and
    # DeepseekV4HCACompressor its HCA rate. With DeepseekV4Config's other defaults and the
    # compress_ratios of DeepSeek-V4-Flash's config.json (0, 0, then 4 and 128 in turn: 21 CSA,
    # 20 HCA layers) transformers counts 284,332,230,231 parameters, 487,194,752 of them the
    # compressors' and indexers'.
    layers = c.size("num_hidden_layers")
    attention_types = _v4_layer_types(c, layers)
    if c.flag("mlp_bias"):
        c.fail("mlp_bias=true biases the shared MLP but not the routed experts; calc's "
               "ffn.bias covers both")
    heads, width = c.size("num_attention_heads"), c.size("head_dim")
    groups = c.size("o_groups")
    if heads * width % groups:
        c.fail(f"o_groups={groups} must divide num_attention_heads·head_dim = {heads * width} "
               f"(o_a_proj splits the heads' outputs into o_groups blocks)")
    n_experts = c.size("n_routed_experts")
    hashed = tuple(i for i, t in enumerate(_v4_mlp_layer_types(c, layers)) if t == "hash_moe")
    return decoder(
        c, {"n_heads": heads, "n_kv_heads": 1, "head_dim": width}, d_ff=c.size(
            "moe_intermediate_size"),
        # one key-and-value head, cached once (DeepseekV4HCACache.update: values = keys)
        attention={"k_eq_v": True, "kv_cached_once": True, "qk_norm": "head",
                   "q_norm_weights": False,
                   "q_lora_rank": c.size("q_lora_rank"), "sinks": True,
                   "output_groups": {"groups": groups, "rank": c.size("o_lora_rank")},
                   "sliding_window": c.size("sliding_window"),
                   "compression": _v4_compression(c, attention_types)},
        moe={"n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
             "top_k": top_k(c, "num_experts_per_tok", n_experts, "n_routed_experts"),
             "n_shared_experts": 1, "hash_layers": hashed},
        hyper_connections={"streams": c.size("hc_mult"), "residual_mix": True})


def _v4_write_types(spec: ModelSpec) -> list[str]:
    compression = spec.attention.compression
    sparse = compression.sparse_layers if compression else ()
    heavy = compression.heavy_layers if compression else ()
    return ["compressed_sparse_attention" if i in sparse else
            "heavily_compressed_attention" if i in heavy else "sliding_attention"
            for i in range(spec.n_layers)]


def _v4_write_rates(spec: ModelSpec) -> dict[str, Any]:
    compression = spec.attention.compression
    if compression is None:
        return {}
    out: dict[str, Any] = {"compress_rates": {
        "compressed_sparse_attention": compression.sparse_rate,
        "heavily_compressed_attention": compression.heavy_rate}}
    if compression.indexer is not None:
        out.update(index_n_heads=compression.indexer.n_heads,
                   index_head_dim=compression.indexer.head_dim,
                   index_topk=compression.indexer.topk)
    return out


def _write_deepseek_v4(spec: ModelSpec) -> dict[str, Any]:
    att, moe, hc = spec.attention, experts(spec, "deepseek_v4"), spec.hyper_connections
    groups = att.output_groups
    need(att.q_lora_rank is not None and groups is not None,
         "attention.q_lora_rank or attention.output_groups None (deepseek_v4's queries come "
         "through a latent and its W_O is grouped)")
    assert groups is not None
    need(hc is not None and hc.residual_mix,
         "hyper_connections (deepseek_v4's layers are in mHC streams with the stream mix)")
    assert hc is not None
    need(att.k_eq_v and att.kv_cached_once, "attention.k_eq_v or attention.kv_cached_once "
                                            "false (deepseek_v4's one KV head is its keys and "
                                            "its values, cached once)")
    need(set(spec.layer_kinds) == {"local"}, "attention layers that are not all sliding "
                                            "(deepseek_v4's layers all slide, its compressed "
                                            "ones too)")
    need(all(spec.moe_layers), "dense FFN layers (every deepseek_v4 layer is an MoE layer)")
    need(moe.n_shared_experts == 1 and moe.shared_width == moe.d_expert,
         "moe.n_shared_experts/d_shared (deepseek_v4 has one shared MLP of d_expert)")
    return {**base(spec, "deepseek_v4"), "head_dim": spec.head_dim_qk,
            "hidden_act": gated(spec, "deepseek_v4"), "q_lora_rank": att.q_lora_rank,
            "o_groups": groups.groups, "o_lora_rank": groups.rank,
            "sliding_window": att.sliding_window, "max_position_embeddings":
                spec.context_length,
            "layer_types": _v4_write_types(spec), **_v4_write_rates(spec),
            "mlp_layer_types": ["hash_moe" if i in moe.hash_layers else "moe"
                                for i in range(spec.n_layers)],
            "n_routed_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert, "hc_mult": hc.streams}


# A writer: no other type's attention is DeepSeek-V4's.
DEEPSEEK_V4 = ModelType(
    "deepseek_v4", _read_deepseek_v4, write=_write_deepseek_v4, traits=Traits(moe=True),
    aliases={"num_local_experts": "n_routed_experts"},
    # keywords DeepseekV4Config.__post_init__ pops, not fields
    getattr_fields=("compress_ratios", "num_hash_layers", "compress_rate_csa",
                    "compress_rate_hca"),
    defaults={
        "vocab_size": 129280, "hidden_size": 4096, "moe_intermediate_size": 2048,
        "num_hidden_layers": 43, "num_attention_heads": 64, "head_dim": 512,
        "q_lora_rank": 1024, "num_experts_per_tok": 6, "n_routed_experts": 256,
        "max_position_embeddings": 1048576, "layer_types": None, "mlp_layer_types": None,
        "hc_mult": 4, "sliding_window": 128, "o_groups": 8, "o_lora_rank": 1024,
        "hidden_act": "silu", "tie_word_embeddings": False, "mlp_bias": False,
        "compress_rates": None,
        "index_n_heads": 64, "index_head_dim": 128, "index_topk": 512,
    })


# ---- axk2 -------------------------------------------------------------------------------------
def _read_axk2(c: HFConfig) -> dict[str, Any]:
    # modular_axk2.py (transformers 5.24.0): DeepSeek-V3.2's layers (the indexer on every layer,
    # whatever layer_types says: AXK2Attention always builds it) whose AXK2Attention has no
    # q_b_proj: q_gate_proj (bias=False) reads cat([q_a_layernorm(c_q), c_q]), 2·q_lora_rank,
    # and yields each head's query (qk_head_dim) and a sigmoid gate (v_head_dim) on its output
    # before o_proj (attention.mla.latent_gate). AXK2DecoderLayer's input_layernorm, and its
    # post_attention_layernorm on the "sparse" layers, are AXK2GatedRMSNorm: the norm, then a
    # sigmoid gate through AXK2GateMLP, fc1 hidden → gated_norm_rank → fc2 hidden, no biases
    # (norm.gate_rank). The router groups experts or not (n_group), which no count sees.
    if not c.given("q_lora_rank"):
        c.fail("q_lora_rank=null: A.X-K2's indexer and output gate read the query latent "
               "(AXK2Config requires a positive q_lora_rank)")
    layers = c.size("num_hidden_layers")
    kinds = c["layer_types"]
    if kinds is not None and kinds != ["indexed_attention"] * layers:
        c.fail(f"layer_types={kinds!r}: every A.X-K2 layer is indexed attention (AXK2Attention "
               f"always builds its indexer)")
    spec = read_dsa(c, sparse=_axk_sparse(c))
    spec["attention"].update(output_gate=True)
    spec["attention"]["mla"]["latent_gate"] = True
    spec["norm"]["gate_rank"] = c.size("gated_norm_rank")
    return spec


def _write_axk2(spec: ModelSpec) -> dict[str, Any]:
    att, norm = spec.attention, spec.norm
    need(att.mla is not None and att.mla.latent_gate,
         "attention.mla.latent_gate=false (A.X-K2 projects its output gate from the query "
         "latent)")
    need(norm.gate_rank is not None, "norm.gate_rank=None (A.X-K2's pre-norms are gated)")
    need(not att.indexer or not att.indexer.shared_layers,
         "attention.indexer.shared_layers (axk2 gives every layer its own indexer)")
    out = write_dsa(spec, "axk2")
    del out["first_k_dense_replace"]
    # n_group None: AXK2TopkRouter ranks all experts without groups
    return {**out, "n_group": None, "topk_group": None, "gated_norm_rank": norm.gate_rank}


AXK2 = ModelType(
    "axk2", _read_axk2, write=_write_axk2, traits=_TRAITS,
    # e_score_correction_bias: a buffer of AXK2TopkRouter (DeepseekV32TopkRouter's)
    router_bias_buffer=True,
    aliases={"num_local_experts": "n_routed_experts"},
    # keywords configuration_axk2.py's __post_init__ pops, not fields
    getattr_fields=("first_k_dense_replace", "moe_layer_freq"),
    defaults={
        **_MLA, "vocab_size": 163840, "hidden_size": 2048, "intermediate_size": 5120,
        "moe_intermediate_size": 512, "num_hidden_layers": 48, "num_attention_heads": 32,
        "n_shared_experts": 1, "n_routed_experts": 128, "num_experts_per_tok": 8,
        "kv_lora_rank": 128, "q_lora_rank": 384, "qk_rope_head_dim": 32, "v_head_dim": 64,
        "qk_nope_head_dim": 64, "max_position_embeddings": 131072, "mlp_layer_types": None,
        "first_k_dense_replace": None, "moe_layer_freq": None, "layer_types": None,
        "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 16, "gated_norm_rank": 16,
    })
