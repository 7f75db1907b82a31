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

Not read yet, each refused in one line naming it: the indexed_attention layers
(Qwen4ExpTextAttention with Qwen4ExpTextQSAIndexer: one fused index_qk_proj d → (h_I + 1)·d_I,
keys mean-pooled over indexer_compress_ratio tokens, each query attending to the top
indexer_budget / ratio complete blocks plus its unfinished tail) and the hashed n-gram
per-layer embeddings of ple_layer_ids (Qwen4ExpTextPLELayer).
"""

from __future__ import annotations

from typing import Any

from calc.hf.families.qwen import read_gated_deltanet_hybrid
from calc.hf.fields import HFConfig
from calc.hf.model_type import ModelType

QSA = ("their QSA indexer (Qwen4ExpTextQSAIndexer: blocks of mean-pooled keys selected per "
       "query) is not read yet")
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


def _read_qwen4_exp_text(c: HFConfig) -> dict[str, Any]:
    types = _layer_types(c)
    indexed = [i for i, t in enumerate(types) if t == "indexed_attention"]
    if indexed:
        c.fail(f"layers {indexed} are indexed_attention: {QSA}")
    if c["ple_layer_ids"]:
        c.fail(f"ple_layer_ids={c['ple_layer_ids']}: {PLE}")
    streams = c.size("hc_count", minimum=2)  # validate_architecture: hc_count > 1
    gate = c["output_gate_type"] or c["hidden_act"]
    if gate not in ("sigmoid", "silu"):
        c.fail(f"output_gate_type={gate!r} must be sigmoid or silu (Qwen4-Exp's "
               f"validate_architecture)")
    spec = read_gated_deltanet_hybrid(
        c, [True] * len(types), default=types, d_ff=c.size("moe_intermediate_size"))
    spec["norm"] = {**spec.get("norm", {}), "kind": "rmsnorm", "final": False}
    spec["hyper_connections"] = {"streams": streams, "gate_rank": c.size("hc_lowrank")}
    return spec


QWEN4_EXP_TEXT = ModelType(
    "qwen4_exp_text", _read_qwen4_exp_text,
    defaults={
        "vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": 40,
        "num_attention_heads": 16, "num_key_value_heads": 2, "hidden_act": "silu",
        "max_position_embeddings": 32768, "tie_word_embeddings": False,
        "attention_bias": False, "head_dim": 256, "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16,
        "linear_num_value_heads": 32, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "num_experts_per_tok": 10, "num_experts": 512,
        "layer_types": None, "hc_count": 4, "hc_lowrank": 320, "ple_layer_ids": None,
        "ple_embed_dim": None, "ple_conv_kernel_size": 4, "ngram_size": 3,
        "heads_per_ngram": 8, "ngram_vocab_size_base": 20_000_000,
        "make_ngram_vocab_size_divisible_by": 128, "seed": 1234, "split_ngram_parts": 512,
        "indexer_n_heads": None, "indexer_kv_heads": None, "indexer_head_dim": None,
        "indexer_budget": None, "indexer_compress_ratio": None, "norm_topk_prob": True,
        "output_gate_type": None,
    })
