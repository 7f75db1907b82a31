"""RecurrentGemma (Google): recurrent_gemma, Griffin's stack of recurrent blocks and local
attention (De et al. 2024, arXiv 2402.19427; Botev et al. 2024, "RecurrentGemma", arXiv
2404.07839).

modeling_recurrent_gemma.py (transformers 5.24.0): each RecurrentGemmaDecoderLayer is
temporal_pre_norm → temporal_block → residual, channel_pre_norm → mlp_block → residual, with
RMSNorms of (1 + γ) (d weights each) and final_norm before the head. The temporal block is
layers_block_type[i]: block_types repeated over the layers ("recurrent": Griffin's recurrent
block, calc.spec.layers.GriffinSpec; anything else: RecurrentGemmaAttention), the attention a
sliding window of attention_window_size keys, q/k/v biased by attention_bias and o_proj always
biased, heads of head_dim (hidden_size / num_attention_heads unless the file gives head_dim,
which the config's __post_init__ keeps). RecurrentGemmaMlp is gated (gate_proj, up_proj,
down_proj, all biased) at intermediate_size // 2. The head is tied unless tie_word_embeddings
is false (_tied_weights_keys). What counts no parameter and no matrix FLOP: the embedding's
√d scale (the `normalizer` buffer), the partial rotary embedding (partial_rotary_factor 0.5),
and logits_soft_cap's tanh on the logits.

The config has no position limit (its attention slides and its recurrence has a fixed state):
the default sequence length is the one RecurrentGemma was pre-trained at, sequences of 8,192
tokens (Botev et al. 2024, arXiv 2404.07839, its training details); --seq-len sets another.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, no_null_head_dim
from calc.hf.model_type import TRANSFORMERS_VERSION, ModelType, Traits
from calc.hf.writing import NO_TOKENS, gated, need
from calc.spec import ModelSpec

TRAINED_CONTEXT = 8192  # RecurrentGemma's pretraining sequence length (module docstring)
BLOCKS = {"recurrent": "griffin", "attention": "attention"}
# (block_types * 100)[:num_hidden_layers] in RecurrentGemmaConfig.layers_block_type
REPEATS = 100


def _block_types(c: HFConfig) -> list[str]:
    types = c["block_types"]
    if not isinstance(types, list | tuple) or not types or any(t not in BLOCKS for t in types):
        c.fail(f"block_types={types!r} must be a non-empty list of 'recurrent' and 'attention'")
    # the 4.x config's attribute, which 5.24's RecurrentGemmaConfig no longer reads: a file that
    # gives it another pattern than block_types means a model transformers would not build
    legacy = c.values.get("_block_types")
    if legacy is not None and list(legacy) != list(types):
        c.fail(f"_block_types={legacy!r} differs from block_types={list(types)!r}: transformers "
               f"{TRANSFORMERS_VERSION} reads block_types only; give the pattern there")
    layers = c.size("num_hidden_layers")
    if layers > REPEATS * len(types):
        c.fail(f"num_hidden_layers={layers} exceeds {REPEATS} × len(block_types)="
               f"{REPEATS * len(types)}: RecurrentGemmaConfig.layers_block_type repeats the "
               f"pattern {REPEATS} times")
    return list(types)


def _read_recurrent_gemma(c: HFConfig) -> dict[str, Any]:
    d, h = c.size("hidden_size"), c.size("num_attention_heads")
    kv = c.size("num_key_value_heads") if c.given("num_key_value_heads") else h
    if kv > h:  # RecurrentGemmaConfig.validate_architecture
        c.fail(f"num_key_value_heads={kv} must not exceed num_attention_heads={h}")
    if h % kv:  # repeat_kv expands each key/value head to h / kv query heads
        c.fail(f"num_key_value_heads={kv} must divide num_attention_heads={h}")
    # head_dim is no field of RecurrentGemmaConfig: __post_init__ sets hidden_size // heads,
    # and a head_dim in the file (kept as an extra attribute after it) replaces that, a null
    # too, on which RecurrentGemmaAttention fails
    no_null_head_dim(c)
    head_dim = c.size("head_dim") if c.given("head_dim") else d // h
    if head_dim < 1:
        c.fail(f"num_attention_heads={h} exceeds hidden_size={d} and no head_dim is given")
    # RecurrentGemmaRglru: the gates are num_attention_heads blocks of lru_width // heads
    lru = c.size("lru_width") if c.given("lru_width") else d
    if lru % h:
        c.fail(f"lru_width={lru} must be a multiple of num_attention_heads={h} (the RG-LRU's "
               f"gates are num_attention_heads square blocks)")
    d_ff = c.size("intermediate_size") // 2
    if d_ff < 1:
        c.fail(f"intermediate_size={c['intermediate_size']} must be at least 2 "
               f"(RecurrentGemmaMlp is intermediate_size // 2 wide)")
    rope = c.values.get("rope_parameters") or c.values.get("rope_scaling") or {}
    if isinstance(rope, dict) and rope.get("rope_type", rope.get("type", "default")) != "default":
        c.fail(f"rope_parameters={rope!r}: RecurrentGemmaRotaryEmbedding supports the default "
               f"RoPE only")
    types = _block_types(c)
    spec: dict[str, Any] = {
        "vocab_size": c.size("vocab_size"), "d_model": d,
        "n_layers": c.size("num_hidden_layers"), "context_length": TRAINED_CONTEXT,
        "norm": {"kind": "rmsnorm", "placement": "pre"}, "position": {"kind": "rope"},
        "ffn": {"activation": c.activation("hidden_activation", gated=True), "d_ff": d_ff,
                "bias": True},
        "layers": {"mixer_pattern": [BLOCKS[t] for t in types], "ffn_pattern": ["dense"]},
        "tie_embeddings": c.flag("tie_word_embeddings"),
    }
    used = {types[i % len(types)] for i in range(c.size("num_hidden_layers"))}
    if "recurrent" in used:
        spec["griffin"] = {"d_lru": lru, "n_blocks": h, "d_conv": c.size("conv1d_width")}
    spec["attention"] = {"n_heads": h, "n_kv_heads": kv, "head_dim": head_dim,
                         "qkv_bias": c.flag("attention_bias"), "out_bias": True}
    if "attention" in used:  # every attention layer slides (RecurrentGemmaAttention)
        spec["attention"]["sliding_window"] = c.size("attention_window_size")
    return spec


def _write_recurrent_gemma(spec: ModelSpec) -> dict[str, Any]:
    mixers = set(spec.mixer_kinds)
    need(mixers <= {"griffin", "attention"},
         f"mixers {sorted(mixers)} (recurrent_gemma has Griffin's recurrent block and attention)")
    gr, att, ffn = spec.griffin, spec.attention, spec.ffn
    need(not spec.layers.exceptions,
         "layers.exceptions (recurrent_gemma repeats one block_types pattern)")
    need(gr is None or gr.n_blocks == att.n_heads,
         f"griffin.n_blocks={gr and gr.n_blocks} ≠ attention.n_heads={att.n_heads} "
         f"(recurrent_gemma's gates have num_attention_heads blocks)")
    need(not spec.n_attention_layers or spec.n_local_layers == spec.n_attention_layers,
         "attention layers other than sliding-window ones (recurrent_gemma's attention is local)")
    need(ffn is not None and ffn.bias and set(spec.ffn_kinds) == {"dense"},
         "an FFN other than a dense one with biases on every layer (RecurrentGemmaMlp)")
    assert ffn is not None
    need(att.out_bias, "attention.out_bias=false (recurrent_gemma's o_proj has a bias)")
    types = [next(t for t, m in BLOCKS.items() if m == kind) for kind in spec.layers.mixer_pattern]
    return {"model_type": "recurrent_gemma", "vocab_size": spec.vocab_size,
            "hidden_size": spec.d_model, "num_hidden_layers": spec.n_layers,
            "num_attention_heads": att.n_heads, "num_key_value_heads": spec.n_kv_heads,
            "head_dim": spec.head_dim_qk, "intermediate_size": 2 * ffn.d_ff,
            "hidden_activation": gated(spec, "recurrent_gemma"), "block_types": types,
            "lru_width": gr.d_lru if gr else spec.d_model,
            "conv1d_width": gr.d_conv if gr else 4,
            "attention_window_size": att.sliding_window or spec.context_length,
            "attention_bias": att.qkv_bias, "tie_word_embeddings": spec.tie_embeddings,
            **NO_TOKENS}


RECURRENT_GEMMA = ModelType(
    "recurrent_gemma", _read_recurrent_gemma, write=_write_recurrent_gemma,
    traits=Traits(),
    aliases={"sliding_window": "attention_window_size"},
    defaults={
        "num_hidden_layers": 26, "vocab_size": 256000, "hidden_size": 2560,
        "intermediate_size": 3 * 2560, "num_attention_heads": 10, "lru_width": None,
        "attention_window_size": 2048, "conv1d_width": 4, "hidden_activation":
        "gelu_pytorch_tanh", "block_types": ("recurrent", "recurrent", "attention"),
        "num_key_value_heads": None, "attention_bias": False, "tie_word_embeddings": True,
    },
    getattr_fields=("head_dim", "_block_types"))
