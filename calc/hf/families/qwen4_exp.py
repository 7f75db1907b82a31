"""Qwen4-Exp's language model (qwen4_exp_text; the multimodal qwen4_exp through
calc.hf.multimodal): Qwen3.5-MoE's gated DeltaNet and MoE layers in hyper-connected streams.

transformers 5.24.0 modular_qwen4_exp.py: Qwen4ExpTextDecoderLayer wraps the mixer and the
MoE (Qwen3NextSparseMoeBlock: router without bias, one shared expert behind a Linear(d, 1)
gate) in a Qwen4ExpTextGatedResidual each (hc_count streams, the gated low-rank maps of rank
hc_lowrank: calc.spec.layers.HyperConnectionsSpec.gate_rank) and has no input or
post-attention norm; Qwen4ExpTextModel repeats the embedding over the streams and collapses
them by hyper_connection_mixer (a map without block_inject_weight) instead of a final norm.
Qwen4ExpTextGatedDeltaNet is Qwen3.5's, its gated norm's activation output_gate_type (sigmoid
or silu: no count changes). No writer: no other type holds the gated maps.

Its indexed_attention layers are Qwen3.5's gated attention (q_proj with the output gate,
q_norm/k_norm per head) selecting keys by Qwen4ExpTextQSAIndexer (attention.indexer.pooled:
one fused index_qk_proj d → (h_I + 1)·d_I, keys mean-pooled over indexer_compress_ratio
tokens, each query attending to the top indexer_budget / ratio complete blocks plus its
unfinished tail). Not read yet, refused in one line: the hashed n-gram per-layer embeddings of
ple_layer_ids (Qwen4ExpTextPLELayer).
"""

from __future__ import annotations

from typing import Any

from calc.hf.families.qwen import QWEN3_5_TEXT_DEFAULTS, read_gated_deltanet_hybrid
from calc.hf.fields import HFConfig
from calc.hf.model_type import ModelType

PLE = ("Qwen4ExpTextPLELayer's hashed n-gram embeddings keyed per residual stream are not read "
       "yet")


def _layer_types(c: HFConfig) -> list[str]:
    """configuration_qwen4_exp.py __post_init__: layer_types, its full_attention entries
    indexed_attention, else every full_attention_interval-th layer indexed_attention (a key
    __post_init__ takes and drops; 4 by default)."""
    layers = c.size("num_hidden_layers")
    if c.given("layer_types"):
        types = list(c["layer_types"])
        if len(types) != layers:
            c.fail(f"layer_types has {len(types)} entries for num_hidden_layers={layers}")
        types = ["indexed_attention" if t == "full_attention" else t for t in types]
        wrong = sorted(set(types) - {"linear_attention", "indexed_attention"})
        if wrong:
            c.fail(f"layer_types has {wrong}: Qwen4-Exp builds linear_attention and "
                   f"indexed_attention layers")
        return types
    interval = c.size("full_attention_interval") if "full_attention_interval" in c.values else 4
    return ["linear_attention" if (i + 1) % interval else "indexed_attention"
            for i in range(layers)]


# configuration_qwen4_exp.py validate_architecture: every QSA field set (or none, which builds
# no indexed_attention layer), one key head, the budget whole blocks
_QSA_FIELDS = ("indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget",
               "indexer_compress_ratio")


def _indexer(c: HFConfig) -> dict[str, Any]:
    """attention.indexer of the indexed_attention layers (Qwen4ExpTextQSAIndexer):
    index_qk_proj d → (h_I + 1)·d_I without bias, q_layernorm and k_layernorm RMSNorms of d_I
    with γ; indexer_budget / indexer_compress_ratio blocks of indexer_compress_ratio keys."""
    missing = [key for key in _QSA_FIELDS if not c.given(key)]
    if missing:
        c.fail(f"{missing[0]}=None: Qwen4-Exp's indexed_attention layers build a QSA indexer, "
               f"which needs {', '.join(_QSA_FIELDS)} (transformers cannot build it without)")
    if c.size("indexer_kv_heads") != 1:
        c.fail(f"indexer_kv_heads={c['indexer_kv_heads']}: Qwen4-Exp's QSA has one key head")
    budget, ratio = c.size("indexer_budget"), c.size("indexer_compress_ratio")
    if budget % ratio:
        c.fail(f"indexer_budget={budget} must be a multiple of indexer_compress_ratio={ratio}")
    width = c.size("indexer_head_dim")
    rope = c["rope_parameters"] or {}
    rotary = int(c.size("head_dim") * rope.get("partial_rotary_factor", 1.0))
    if rotary > width:
        c.fail(f"indexer_head_dim={width} < the attention's rotary width {rotary} (head_dim × "
               f"partial_rotary_factor): the QSA index head turns it")
    return {"n_heads": c.size("indexer_n_heads"), "head_dim": width, "topk": budget // ratio,
            "block_size": ratio, "pooled": True}


def _read_qwen4_exp_text(c: HFConfig) -> dict[str, Any]:
    types = _layer_types(c)
    if c["ple_layer_ids"]:
        c.fail(f"ple_layer_ids={c['ple_layer_ids']}: {PLE}")
    streams = c.size("hc_count", minimum=2)  # validate_architecture: hc_count > 1
    gate = c["output_gate_type"] or c["hidden_act"]
    if gate not in ("sigmoid", "silu"):
        c.fail(f"output_gate_type={gate!r} must be sigmoid or silu (Qwen4-Exp's "
               f"validate_architecture)")
    # the layer types as __post_init__ leaves them, full_attention for the shared reader
    plain = ["full_attention" if t == "indexed_attention" else t for t in types]
    if c.given("layer_types"):
        c.values["layer_types"] = plain
    spec = read_gated_deltanet_hybrid(
        c, [True] * len(types), default=plain, d_ff=c.size("moe_intermediate_size"))
    # validate_architecture checks the QSA fields once any is set, indexed layers or not
    indexer = (_indexer(c) if "indexed_attention" in types
               or any(c.given(key) for key in _QSA_FIELDS) else None)
    if "indexed_attention" in types:
        spec["attention"] = {**spec["attention"], "indexer": indexer}
    spec["norm"] = {**spec.get("norm", {}), "kind": "rmsnorm", "final": False}
    spec["hyper_connections"] = {"streams": streams, "gate_rank": c.size("hc_lowrank")}
    return spec


QWEN4_EXP_TEXT = ModelType(
    "qwen4_exp_text", _read_qwen4_exp_text,
    # Qwen3.5's text fields (Qwen4ExpTextConfig inherits them), with Qwen3-Next's expert sizes
    defaults={
        **QWEN3_5_TEXT_DEFAULTS, "hidden_size": 2048, "num_hidden_layers": 40,
        "num_attention_heads": 16, "num_key_value_heads": 2, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "num_experts_per_tok": 10, "num_experts": 512,
        "hc_count": 4, "hc_lowrank": 320, "ple_layer_ids": None,
        "ple_embed_dim": None, "ple_conv_kernel_size": 4, "ngram_size": 3,
        "heads_per_ngram": 8, "ngram_vocab_size_base": 20_000_000,
        "make_ngram_vocab_size_divisible_by": 128, "seed": 1234, "split_ngram_parts": 512,
        "indexer_n_heads": None, "indexer_kv_heads": None, "indexer_head_dim": None,
        "indexer_budget": None, "indexer_compress_ratio": None, "norm_topk_prob": True,
        "output_gate_type": None, "rope_parameters": None,
    })
