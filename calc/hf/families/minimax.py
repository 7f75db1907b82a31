"""MiniMax: minimax (MiniMax-Text-01 and MiniMax-M1: lightning attention beside softmax attention,
a mixture of experts on every layer) and minimax_m2 (MiniMax-M2, a mixture of experts with
QK-norm over the projections).

modeling_minimax.py (transformers 5.24.0): a layer is MiniMaxLightningAttention where
layer_types says linear_attention (calc.spec.layers.LightningSpec: qkv_proj, output_gate, an
RMSNorm over num_attention_heads · head_dim channels, out_proj; its decay slopes are buffers),
else MiniMaxAttention (Mixtral's: GQA with RoPE, no biases, config.sliding_window on every
attention layer when set); the FFN is MiniMaxSparseMoeBlock on every layer (a router without
bias, softmax top-k, num_local_experts gated experts of intermediate_size). The residual scales
(full_attn_alpha_factor, ..., mlp_beta_factor) are scalars of the forward, not parameters.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import merge, moe_layout, per_layer, sparse_layers
from calc.hf.writing import experts, llama_like, need
from calc.spec import ModelSpec

# MiniMaxDecoderLayer: linear_attention builds lightning attention, anything else attention; the
# forward's masks exist for these two only (causal_mask_mapping in MiniMaxModel.forward)
_KINDS = {"full_attention": "attention", "linear_attention": "lightning"}


def _mixers(c: HFConfig) -> list[str]:
    """layer_types, else MiniMaxConfig.__post_init__'s: full attention on the even layers
    (0, 2, ...), lightning attention on the odd ones."""
    layers = c.size("num_hidden_layers")
    if not c.given("layer_types"):
        return ["attention" if (i + 1) % 2 else "lightning" for i in range(layers)]
    types = c["layer_types"]
    if not isinstance(types, list) or len(types) != layers or not set(types) <= set(_KINDS):
        c.fail(f"layer_types must list 'full_attention' or 'linear_attention' for each of the "
               f"{layers} layers, got {types!r}")
    return [_KINDS[kind] for kind in types]


def _read_minimax(c: HFConfig) -> dict[str, Any]:
    att = heads(c)
    mixers = _mixers(c)
    n_experts = c.size("num_local_experts")
    # MiniMaxLightningAttention: getattr(config, "head_dim", None) or hidden_size // heads,
    # the attention's own head width and head count
    width = att["head_dim"] or c.size("hidden_size") // att["n_heads"]
    window = c.size("sliding_window") if c.given("sliding_window") else None
    read = decoder(
        c, att, attention={"sliding_window": window},
        moe={"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
             "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_local_experts")},
        lightning={"n_heads": att["n_heads"], "d_head": width}
        if "lightning" in mixers else None)
    kind = "local" if window else "global"
    return merge(read, per_layer(c, mixers=mixers,
                                 attention=[kind if m == "attention" else "" for m in mixers]))


def _write_minimax(spec: ModelSpec) -> dict[str, Any]:
    # lightning layers beside attention, experts on every layer; an all-attention spec is
    # Mixtral's (its writer comes first)
    moe, la = experts(spec, "minimax"), spec.lightning
    need(la is not None, "lightning=None (minimax's other layers are lightning attention)")
    assert la is not None
    need(la.n_heads == spec.attention.n_heads and la.d_head == spec.head_dim_qk
         and spec.head_dim_qk == spec.head_dim_v,
         f"lightning n_heads={la.n_heads}, d_head={la.d_head} with attention n_heads="
         f"{spec.attention.n_heads}, head_dim={spec.head_dim_qk} (minimax's lightning attention "
         f"takes the attention's heads and head width)")
    types = []
    for mixer, kind in zip(spec.mixer_kinds, spec.attention_kinds, strict=True):
        need(mixer in _KINDS.values() and kind in ("global", "local", ""),
             f"a {mixer} {kind} layer (minimax builds attention and lightning-attention layers)")
        types.append("full_attention" if mixer == "attention" else "linear_attention")
    local = spec.n_local_layers
    need(local in (0, spec.n_attention_layers),
         f"{local} sliding layers of {spec.n_attention_layers} attention layers (minimax's "
         f"sliding_window is on every attention layer or none)")
    return {**llama_like(spec, "minimax"), "intermediate_size": moe.d_expert,
            "num_local_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "sliding_window": spec.attention.sliding_window if local else None,
            "layer_types": types}


MINIMAX = ModelType(
    "minimax", _read_minimax, write=_write_minimax, traits=Traits(moe=True),
    aliases={"num_experts": "num_local_experts"},
    defaults={
        "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": None, "hidden_act": "silu", "max_position_embeddings": 131072,
        "tie_word_embeddings": False, "sliding_window": None, "num_experts_per_tok": 2,
        "num_local_experts": 8, "layer_types": None,
        # the lightning layers' block of the blocked form (calc.verify.hf_implementation)
        "block_size": 256,
    })


def _read_minimax_m2(c: HFConfig) -> dict[str, Any]:
    # modeling_minimax_m2.py: no biases; q_norm and k_norm over the whole projections
    # (num_attention_heads · head_dim and num_key_value_heads · head_dim wide); every FFN is the
    # MoE: a router without bias (e_score_correction_bias is a buffer, not a parameter) and
    # num_local_experts experts of intermediate_size; no sliding window.
    n_experts = c.size("num_local_experts")
    return decoder(c, heads(c), attention={"qk_norm": "projection"},
                   moe={"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", n_experts,
                                       "num_local_experts")})


def _write_minimax_m2(spec: ModelSpec) -> dict[str, Any]:
    # QK-norm over the projections with experts on every layer and any head width (olmoe's
    # writer holds only heads that span hidden_size, the width of its q_norm).
    moe = experts(spec, "minimax_m2")
    return {**llama_like(spec, "minimax_m2"), "intermediate_size": moe.d_expert,
            "num_local_experts": moe.n_experts, "num_experts_per_tok": moe.top_k}


MINIMAX_M2 = ModelType(
    "minimax_m2", _read_minimax_m2, write=_write_minimax_m2, traits=Traits(moe=True),
    aliases={"num_experts": "num_local_experts"},
    defaults={
        "vocab_size": 200064, "hidden_size": 3072, "intermediate_size": 1536,
        "num_hidden_layers": 62, "num_attention_heads": 48, "num_key_value_heads": 8,
        "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 196608,
        "tie_word_embeddings": False, "num_experts_per_tok": 8, "num_local_experts": 256,
    })


# ---- minimax_m3_vl_text -----------------------------------------------------------------------
# configuration_minimax_m3_vl.py (transformers 5.24.0), MiniMaxM3VLTextConfig.__post_init__:
# the legacy sparse_attention_config's keys and moe_layer_freq, keywords it takes from kwargs
_M3_SPARSE = "minimax_m3_sparse"
_M3_LEGACY_INDEX = {"index_n_heads": "sparse_num_index_heads", "index_head_dim": "sparse_index_dim",
                    "index_block_size": "sparse_block_size",
                    "index_topk_blocks": "sparse_topk_blocks",
                    "index_local_blocks": "sparse_local_block"}


def _m3_layer_types(c: HFConfig, layers: int) -> list[str]:
    """layer_types, else sparse_attention_config's sparse_attention_freq (a flag per layer),
    else full attention everywhere."""
    if c.given("layer_types"):
        types = c["layer_types"]
    else:
        legacy = c["sparse_attention_config"] or {}
        if not isinstance(legacy, dict):
            c.fail(f"sparse_attention_config={legacy!r} must be a mapping")
        freq = legacy.get("sparse_attention_freq")
        types = (["full_attention"] * layers if freq is None or not isinstance(freq, list)
                 else [_M3_SPARSE if flag else "full_attention" for flag in freq])
    if (not isinstance(types, list) or len(types) != layers
            or not set(types) <= {"full_attention", _M3_SPARSE}):
        c.fail(f"layer_types must list 'full_attention' or '{_M3_SPARSE}' for each of the "
               f"{layers} layers, got {types!r}")
    return types


def _m3_sparse(c: HFConfig, layers: int) -> list[bool]:
    """Which layers' FFN is the MoE: mlp_layer_types, else moe_layer_freq (a flag per layer),
    else every layer."""
    if not c.given("mlp_layer_types") and isinstance(c["moe_layer_freq"], list):
        freq = c["moe_layer_freq"]
        if len(freq) != layers:
            c.fail(f"moe_layer_freq must give one flag for each of the {layers} layers, "
                   f"got {freq!r}")
        return [bool(flag) for flag in freq]
    return sparse_layers(c, [True] * layers)


def _m3_indexer(c: HFConfig, n_heads: int, types: list[str]) -> dict[str, Any]:
    """MiniMaxM3VLIndexer on the minimax_m3_sparse layers (calc.spec.attention.IndexerSpec
    without MLA): each of index_n_heads heads picks index_topk_blocks blocks of
    index_block_size keys per query, the index_local_blocks blocks up to the query's own scored
    +inf. calc counts the own block's visible keys and index_topk_blocks − 1 whole earlier
    blocks: exact where the own block is always picked (index_local_blocks >= 1) and the local
    blocks fit in the top-k (else topk chooses among tied +inf blocks)."""
    # MiniMaxM3VLTextConfig.__post_init__: sparse_attention_config's legacy keys replace them
    legacy = c["sparse_attention_config"] or {}
    for flat, old in _M3_LEGACY_INDEX.items():
        if old in legacy:
            c.values[flat] = legacy[old]
    topk, local = c.size("index_topk_blocks"), c.size("index_local_blocks", 0)
    if local < 1 or local > topk:
        c.fail(f"index_local_blocks={local!r}: calc counts MiniMax-M3's block selection where "
               f"the query's own block is always picked, 1 <= index_local_blocks <= "
               f"index_topk_blocks={topk}")
    index_heads = c.size("index_n_heads")
    if n_heads % index_heads:
        # build_block_mask repeats each indexer head's selection over n_heads // index_n_heads
        c.fail(f"index_n_heads={index_heads} must divide num_attention_heads={n_heads} (each "
               f"indexer head selects the blocks of a group of query heads)")
    return {"n_heads": index_heads, "head_dim": c.size("index_head_dim"), "topk": topk,
            "block_size": c.size("index_block_size"),
            "dense_layers": [i for i, kind in enumerate(types) if kind != _M3_SPARSE]}


def _read_minimax_m3(c: HFConfig) -> dict[str, Any]:
    # modeling_minimax_m3_vl.py: MiniMaxM3VLAttention is GQA without biases, a Gemma-style
    # RMSNorm of head_dim on each query and key head (q_norm, k_norm: one γ each, applied as
    # 1 + γ), RoPE on rotary_dim channels of each head; its minimax_m3_sparse layers add
    # MiniMaxM3VLIndexer. MiniMaxM3VLSparseMoeBlock: a sigmoid router without bias
    # (e_score_correction_bias is a buffer), num_local_experts experts of intermediate_size and
    # one shared MLP of shared_intermediate_size, where mlp_layer_types says sparse; else
    # MiniMaxM3VLDenseMLP of dense_intermediate_size. Every MLP is SwiGLU with a clamp
    # (swiglu_alpha, swiglu_limit: element-wise), whatever hidden_act says (__post_init__ sets
    # it to silu). The mtp.* weights a checkpoint stores are not built.
    layers = c.size("num_hidden_layers")
    types = _m3_layer_types(c, layers)
    att = heads(c)
    if _M3_SPARSE in types:
        att["indexer"] = _m3_indexer(c, att["n_heads"], types)
    sparse = _m3_sparse(c, layers)
    n_experts = c.size("num_local_experts")
    placement, placed = moe_layout(c, sparse) if any(sparse) else (None, {})
    moe = placement is not None and {
        "n_experts": n_experts, "d_expert": c.size("intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_local_experts"),
        "n_shared_experts": 1, "d_shared": c.size("shared_intermediate_size"), **placement}
    spec = decoder(c, att, act_key=None, d_ff=c.size("dense_intermediate_size"),
                   attention={"qk_norm": "head"}, moe=moe or None, **placed)
    return spec


MINIMAX_M3_VL_TEXT = ModelType(
    "minimax_m3_vl_text", _read_minimax_m3, router_bias_buffer=True,
    aliases={"num_experts": "num_local_experts"},
    # keywords MiniMaxM3VLTextConfig.__post_init__ takes from kwargs, not class fields
    getattr_fields=("sparse_attention_config", "moe_layer_freq"),
    defaults={
        "vocab_size": 200064, "hidden_size": 6144, "intermediate_size": 3072,
        "num_hidden_layers": 60, "num_attention_heads": 64, "num_key_value_heads": 4,
        "head_dim": 128, "max_position_embeddings": 524288, "tie_word_embeddings": False,
        "num_experts_per_tok": 4, "num_local_experts": 128, "dense_intermediate_size": 12288,
        "shared_intermediate_size": 3072, "mlp_layer_types": None, "layer_types": None,
        "index_n_heads": 4, "index_head_dim": 128, "index_block_size": 128,
        "index_topk_blocks": 16, "index_local_blocks": 1,
    })
