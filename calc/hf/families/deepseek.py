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
