"""GPT and the models named after it: gpt2, the original GPT (openai-gpt), GPTBigCode
(SantaCoder, StarCoder), EleutherAI's gpt_neo, gptj and gpt_neox, ABEJA's gpt_neox_japanese,
CodeGen (GPT-J's block) and OpenAI's gpt_oss.

All but gpt_oss use LayerNorms with β and a plain MLP with biases; GPT-J, CodeGen and GPT-NeoX
rotate only part of each head's width (rotary_dim, rotary_pct), which changes no count.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from calc.hf.fields import (
    HFConfig,
    decoder,
    divides,
    heads,
    layer_pattern,
    layernorm_decoder,
    top_k,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import kinds_of, merge, per_layer
from calc.hf.writing import (
    NO_TOKENS,
    base,
    experts,
    layer_types,
    llama_like,
    need,
    plain,
    window_field,
)
from calc.spec import ModelSpec

# GPT-2's names for the fields (each class's attribute_map): {name in a file: name calc reads}
_GPT2_NAMES = {"hidden_size": "n_embd", "max_position_embeddings": "n_positions",
               "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}
_LEARNED = Traits(norm="layernorm", positions=("learned",), gated=False)


def _gpt(c: HFConfig, d_ff_key: str | None, act_key: str, **spec: Any) -> dict[str, Any]:
    """The fields GPT-2's descendants share: GPT-2's names (hidden_size → n_embd, ... through
    each class's attribute_map), LayerNorms with β before each sublayer, a plain MLP with
    biases (d_ff_key, default 4·d)."""
    d = c.size("hidden_size")
    d_ff = c.size(d_ff_key) if d_ff_key and c.given(d_ff_key) else 4 * d
    attention = {**heads(c, None, head_dim_key=None), **spec.pop("attention")}
    return {
        "vocab_size": c["vocab_size"], "d_model": d, "n_layers": c["num_hidden_layers"],
        "context_length": c["max_position_embeddings"], "attention": attention,
        "ffn": {"activation": c.activation(act_key, gated=False), "d_ff": d_ff, "bias": True},
        "norm": {"kind": "layernorm", "placement": "pre"},
        "tie_embeddings": c.flag("tie_word_embeddings"), **spec,
    }


def _gpt_fields(spec: ModelSpec, model_type: str, positions: int) -> dict[str, Any]:
    h, d = spec.attention.n_heads, spec.d_model
    need(spec.head_dim_qk * h == d,
         f"attention.head_dim={spec.head_dim_qk} with d_model={d} and {h} heads ({model_type}'s "
         f"head width is n_embd / n_head)")
    return {"model_type": model_type, "vocab_size": spec.vocab_size, "n_embd": d,
            "n_layer": spec.n_layers, "n_head": h, "n_positions": positions,
            "n_inner": spec.ffn.d_ff, "activation_function": plain(spec, model_type),
            "tie_word_embeddings": spec.tie_embeddings, **NO_TOKENS}


# ---- gpt2 -------------------------------------------------------------------------------------
def _read_gpt2(c: HFConfig) -> dict[str, Any]:
    # modeling_gpt2.py: Conv1D c_attn/c_proj/c_fc with biases, LayerNorms, learned positions
    # (n_positions rows), n_inner (default 4·n_embd).
    if c.flag("add_cross_attention"):
        c.fail("add_cross_attention=true adds encoder-decoder attention; calc counts decoders")
    d = c.size("n_embd")
    return {
        "vocab_size": c["vocab_size"], "d_model": d, "n_layers": c["n_layer"],
        "context_length": c["n_positions"],
        "attention": {**heads(c, None, "n_head", "n_embd", None), "qkv_bias": True,
                      "out_bias": True},
        "ffn": {"activation": c.activation("activation_function", gated=False),
                "d_ff": c.size("n_inner") if c.given("n_inner") else 4 * d, "bias": True},
        "norm": {"kind": "layernorm", "placement": "pre"},
        "position": {"kind": "learned"},
        "tie_embeddings": c.flag("tie_word_embeddings"),
    }


def _write_gpt2(spec: ModelSpec) -> dict[str, Any]:
    h, d = spec.attention.n_heads, spec.d_model
    need(spec.head_dim_qk * h == d,
         f"attention.head_dim={spec.head_dim_qk} with d_model={d} and {h} heads (gpt2's head "
         f"width is n_embd / n_head = {d / h:g})")
    need(spec.position.kind == "learned",
         f"position.kind={spec.position.kind!r} (gpt2 learns a position table)")
    return {"model_type": "gpt2", "vocab_size": spec.vocab_size, "n_embd": d,
            "n_layer": spec.n_layers, "n_head": h, "n_positions": spec.position_table,
            "n_inner": spec.ffn.d_ff, "activation_function": plain(spec, "gpt2"),
            "tie_word_embeddings": spec.tie_embeddings, **NO_TOKENS}


GPT2 = ModelType(
    "gpt2", _read_gpt2, write=_write_gpt2, traits=_LEARNED, aliases=_GPT2_NAMES,
    defaults={
        "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
        "n_inner": None, "activation_function": "gelu_new", "add_cross_attention": False,
        "tie_word_embeddings": True,
    })


# ---- gpt-sw3 ----------------------------------------------------------------------------------
# GPT-SW3 (AI Sweden) has its own model_type but GPT2Config and GPT2LMHeadModel
# (models/auto/configuration_auto.py, modeling_auto.py): GPT-2's reader and defaults. No writer:
# gpt2's holds its specs.
GPT_SW3 = dataclasses.replace(GPT2, name="gpt-sw3", write=None, traits=None)


# ---- openai-gpt -------------------------------------------------------------------------------
# modeling_openai.py's ACT_FNS: the only activations its MLP accepts.
_OPENAI_ACTIVATIONS = ("relu", "silu", "gelu", "swish")


def _read_openai_gpt(c: HFConfig) -> dict[str, Any]:
    # modeling_openai.py: Conv1D c_attn and c_proj with biases, a 4·n_embd MLP with biases,
    # LayerNorms after each residual sum (n = ln_1(x + a); h = ln_2(n + m)) and none at the
    # end; learned positions (n_positions rows); the head tied to the token embedding.
    if c["afn"] not in _OPENAI_ACTIVATIONS:
        c.fail(f"afn={c['afn']!r}: openai-gpt accepts {', '.join(_OPENAI_ACTIVATIONS)}")
    spec = _gpt(c, None, "afn", position={"kind": "learned"},
                attention={"qkv_bias": True, "out_bias": True})
    spec["norm"] = {"kind": "layernorm", "placement": "post", "final": False}
    return spec


# No writer: opt's writer holds every spec it reads (post-LayerNorm, no final norm).
OPENAI_GPT = ModelType(
    "openai-gpt", _read_openai_gpt, aliases=_GPT2_NAMES,
    defaults={
        "vocab_size": 40478, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 512,
        "afn": "gelu", "tie_word_embeddings": True,
    })


# ---- gpt_bigcode ------------------------------------------------------------------------------
def _read_gpt_bigcode(c: HFConfig) -> dict[str, Any]:
    # modeling_gpt_bigcode.py: c_attn projects to hidden + 2 × kv heads × head_dim (one K/V
    # head with multi_query), biases on every Linear but the head, learned positions
    # (n_positions rows), n_inner (default 4·n_embd), tied by default.
    if c.flag("add_cross_attention"):
        c.fail("add_cross_attention=true adds encoder-decoder attention; calc counts decoders")
    kv = 1 if c.flag("multi_query") else c.size("num_attention_heads")
    return _gpt(c, "n_inner", "activation_function", position={"kind": "learned"},
                attention={"n_kv_heads": kv, "qkv_bias": True, "out_bias": True})


def _write_gpt_bigcode(spec: ModelSpec) -> dict[str, Any]:
    # Learned positions with multi-query attention (or multi-head).
    return {**_gpt_fields(spec, "gpt_bigcode", spec.position_table),
            "multi_query": spec.n_kv_heads == 1}


GPT_BIGCODE = ModelType(
    "gpt_bigcode", _read_gpt_bigcode, write=_write_gpt_bigcode, traits=_LEARNED,
    aliases=_GPT2_NAMES,
    defaults={
        "vocab_size": 50257, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
        "n_inner": None, "activation_function": "gelu_pytorch_tanh", "multi_query": True,
        "tie_word_embeddings": True, "add_cross_attention": False,
    })


# ---- gpt_neo ----------------------------------------------------------------------------------
class _Window:
    """The config as calc.hf.fields.layer_pattern reads it: GPT-Neo names its sliding window
    window_size."""

    def __init__(self, c: HFConfig):
        self.c = c

    def size(self, key: str) -> int:
        return self.c.size("window_size")

    def fail(self, message: str) -> None:
        self.c.fail(message)


def _read_gpt_neo(c: HFConfig) -> dict[str, Any]:
    # modeling_gpt_neo.py: q, k, v without bias, out_proj with; learned positions;
    # configuration_gpt_neo.py expands attention_types ([[kinds, repeats], ...]) into one kind
    # per layer; a local layer sees the window_size most recent keys, itself included.
    types = c["attention_types"] or [[["global", "local"], 12]]
    try:
        kinds = [kind for pattern, repeats in types for _ in range(repeats) for kind in pattern]
    except (TypeError, ValueError):
        c.fail(f"attention_types={types!r} must list [[kinds], repeats] pairs")
    if len(kinds) != c.size("num_hidden_layers") or not set(kinds) <= {"global", "local"}:
        c.fail(f"attention_types={types!r} must give 'global' or 'local' for each of the "
               f"{c['num_hidden_layers']} layers")
    window = layer_pattern(_Window(c), kinds)
    return _gpt(c, "intermediate_size", "activation_function", position={"kind": "learned"},
                attention={"qkv_bias": False, "out_bias": True, **window})


def _write_gpt_neo(spec: ModelSpec) -> dict[str, Any]:
    # Learned positions, any pattern of global and local layers, a bias on out_proj only.
    config = _gpt_fields(spec, "gpt_neo", spec.position_table)
    return {"model_type": "gpt_neo", "vocab_size": spec.vocab_size, "hidden_size": spec.d_model,
            "num_layers": spec.n_layers, "num_heads": spec.attention.n_heads,
            "max_position_embeddings": spec.position_table, "intermediate_size": spec.ffn.d_ff,
            "activation_function": config["activation_function"],
            "attention_types": [[[kind], 1] for kind in spec.layer_kinds],
            "window_size": spec.attention.sliding_window or 256,
            "tie_word_embeddings": spec.tie_embeddings, **NO_TOKENS}


GPT_NEO = ModelType(
    "gpt_neo", _read_gpt_neo, write=_write_gpt_neo, traits=_LEARNED,
    aliases={"num_attention_heads": "num_heads", "num_hidden_layers": "num_layers"},
    defaults={
        "vocab_size": 50257, "hidden_size": 2048, "num_heads": 16, "num_layers": 24,
        "max_position_embeddings": 2048, "intermediate_size": None, "window_size": 256,
        "attention_types": None, "activation_function": "gelu_new", "tie_word_embeddings": True,
    })


# ---- gptj -------------------------------------------------------------------------------------
def _read_gptj(c: HFConfig) -> dict[str, Any]:
    # modeling_gptj.py, modeling_codegen.py: q, k, v (CodeGen: one fused qkv_proj) and
    # out_proj without bias, fc_in and fc_out with; attention and MLP in parallel behind one
    # ln_1; an LM head with bias; n_inner (default 4·n_embd).
    return _gpt(c, "n_inner", "activation_function", position={"kind": "rope"},
                attention={"qkv_bias": False, "out_bias": False}, parallel_block=True,
                parallel_norms=1, lm_head_bias=True)


def _write_gptj(spec: ModelSpec) -> dict[str, Any]:
    # GPT-J's parallel block with one norm, rotary positions and a biased LM head. GPTJConfig
    # types rotary_dim an int (None is refused) and rotates channel pairs: the even part of
    # each head (how many channels rotate changes no count).
    config, width = _gpt_fields(spec, "gptj", spec.context_length), spec.head_dim_qk
    need(width >= 2, f"attention.head_dim={width} (gptj rotates pairs of each head's channels)")
    return {**config, "rotary_dim": width - width % 2}


_GPTJ_DEFAULTS = {
    "vocab_size": 50400, "n_embd": 4096, "n_head": 16, "n_layer": 28, "n_positions": 2048,
    "n_inner": None, "activation_function": "gelu_new", "tie_word_embeddings": False,
}
GPTJ = ModelType(
    "gptj", _read_gptj, write=_write_gptj,
    traits=Traits(norm="layernorm", gated=False), aliases=_GPT2_NAMES,
    defaults=_GPTJ_DEFAULTS)


# ---- codegen ----------------------------------------------------------------------------------
def _read_codegen(c: HFConfig) -> dict[str, Any]:
    # modeling_codegen.py: GPT-J's block; the fused qkv_proj is read as 4 interleaved shards
    # (mp_num = 4, the model parallelism CodeGen was trained with), so n_embd splits in 4.
    if c.size("hidden_size") % 4:
        c.fail(f"n_embd={c['hidden_size']} must be a multiple of 4: CodeGen's qkv_proj is "
               f"split into the 4 model-parallel shards it was trained with")
    return _read_gptj(c)


# No writer: gptj's writer holds every spec it reads.
CODEGEN = ModelType("codegen", _read_codegen, aliases=_GPT2_NAMES,
                    defaults=dict(_GPTJ_DEFAULTS))


# ---- gpt_neox ---------------------------------------------------------------------------------
def _read_gpt_neox(c: HFConfig) -> dict[str, Any]:
    # modeling_gpt_neox.py: attention_bias on query_key_value and dense, the MLP always has
    # biases; use_parallel_residual: x + attn(ln1(x)) + mlp(ln2(x)), else sequential.
    divides(c)
    spec = layernorm_decoder(c, heads(c, None, head_dim_key=None), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False),
                             c.flag("attention_bias"), position={"kind": "rope"})
    spec["ffn"]["bias"] = True
    if c.flag("use_parallel_residual"):
        spec.update(parallel_block=True, parallel_norms=2)
    return spec


def _write_gpt_neox(spec: ModelSpec) -> dict[str, Any]:
    return {**base(spec, "gpt_neox"), "intermediate_size": spec.ffn.d_ff,
            "hidden_act": plain(spec, "gpt_neox"),
            "max_position_embeddings": spec.context_length,
            "use_parallel_residual": spec.parallel_block,
            "attention_bias": spec.attention.qkv_bias}


GPT_NEOX = ModelType(
    "gpt_neox", _read_gpt_neox, write=_write_gpt_neox,
    traits=Traits(norm="layernorm", gated=False),
    defaults={
        "vocab_size": 50432, "hidden_size": 6144, "num_hidden_layers": 44,
        "num_attention_heads": 64, "intermediate_size": 24576, "hidden_act": "gelu",
        "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "use_parallel_residual": True, "attention_bias": True,
    })


# ---- gpt_neox_japanese -------------------------------------------------------------------------
def _read_gpt_neox_japanese(c: HFConfig) -> dict[str, Any]:
    # modeling_gpt_neox_japanese.py (transformers 5.24.0): LayerNorms with β before each
    # sublayer, in sequence; query_key_value (d → 3d) and dense (d → d) without bias, and
    # dense_bias (d values) on the last layer only (GPTNeoXJapaneseLayer: use_bias =
    # layer_number == num_hidden_layers - 1), added before the residual; dense_h_to_4h and
    # dense_4h_to_h without bias, int(hidden_size × intermediate_multiple_size) wide; RoPE on
    # rotary_pct of each head (no count); embed_out tied to embed_in by default.
    d, h = c.size("hidden_size"), c.size("num_attention_heads")
    if d % h:
        c.fail(f"num_attention_heads={h} must divide hidden_size={d}: the attention splits the "
               f"fused query_key_value into heads of hidden_size // num_attention_heads")
    spec = layernorm_decoder(c, {"n_heads": h}, d * c.size("intermediate_multiple_size"),
                             c.activation("hidden_act", gated=False), False,
                             position={"kind": "rope"})
    spec["attention"]["last_layer_out_bias"] = True
    return spec


def _write_gpt_neox_japanese(spec: ModelSpec) -> dict[str, Any]:
    att, ffn = spec.attention, spec.ffn
    need(att.last_layer_out_bias, "attention.last_layer_out_bias=false (GPT-NeoX-Japanese's "
                                  "last layer has dense_bias)")
    need(not att.qkv_bias and not att.out_bias, "attention.qkv_bias/out_bias "
                                                "(GPT-NeoX-Japanese's projections have none)")
    need(ffn is not None and not ffn.bias, "ffn.bias=true (GPT-NeoX-Japanese's MLP has none)")
    assert ffn is not None
    need(ffn.d_ff % spec.d_model == 0, f"ffn.d_ff={ffn.d_ff} (GPT-NeoX-Japanese's is a whole "
                                       f"multiple of d_model={spec.d_model})")
    return {**base(spec, "gpt_neox_japanese"),
            "intermediate_multiple_size": ffn.d_ff // spec.d_model,
            "hidden_act": plain(spec, "gpt_neox_japanese"),
            "max_position_embeddings": spec.context_length}


GPT_NEOX_JAPANESE = ModelType(
    "gpt_neox_japanese", _read_gpt_neox_japanese, write=_write_gpt_neox_japanese,
    traits=Traits(norm="layernorm", gated=False),
    defaults={
        "vocab_size": 32000, "hidden_size": 2560, "num_hidden_layers": 32,
        "num_attention_heads": 32, "intermediate_multiple_size": 4, "hidden_act": "gelu",
        "max_position_embeddings": 2048, "tie_word_embeddings": True,
    })


# ---- gpt_oss ----------------------------------------------------------------------------------
def _read_gpt_oss(c: HFConfig) -> dict[str, Any]:
    # modeling_gpt_oss.py: attention_bias on q, k, v, o and one sink logit per head; layers
    # alternate sliding (window 128) and full (layer_types); every FFN is the MoE: a router
    # Linear(d, E) with bias, experts with biases on gate_up and down, top-k.
    if c.given("layer_types"):
        _, kinds = kinds_of(c)
    else:
        kinds = ["local" if (i + 1) % 2 else "global" for i in range(c.size("num_hidden_layers"))]
    bias = c.flag("attention_bias")
    n_experts = c.size("num_local_experts")
    spec = decoder(c, heads(c), ffn_bias=True,
                   attention={"qkv_bias": bias, "out_bias": bias, "sinks": True},
                   moe={"n_experts": n_experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", n_experts,
                                       "num_local_experts"),
                        "router_bias": True})
    return merge(spec, per_layer(c, attention=kinds))


def _write_gpt_oss(spec: ModelSpec) -> dict[str, Any]:
    moe = experts(spec, "gpt_oss")
    return {**llama_like(spec, "gpt_oss"), **window_field(spec),
            "layer_types": layer_types(spec, "gpt_oss", "full_attention", "sliding_attention"),
            "intermediate_size": moe.d_expert, "num_local_experts": moe.n_experts,
            "num_experts_per_tok": moe.top_k, "attention_bias": spec.attention.qkv_bias}


GPT_OSS = ModelType(
    "gpt_oss", _read_gpt_oss, write=_write_gpt_oss, traits=Traits(moe=True),
    aliases={"num_experts": "num_local_experts"},
    defaults={
        "vocab_size": 201088, "hidden_size": 2880, "intermediate_size": 2880,
        "num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8,
        "head_dim": 64, "hidden_act": "silu", "max_position_embeddings": 131072,
        "tie_word_embeddings": False, "attention_bias": True, "sliding_window": 128,
        "layer_types": None, "num_local_experts": 128, "num_experts_per_tok": 4,
    })
