"""GPT-2's descendants: GPTBigCode (SantaCoder, StarCoder), GPT-Neo, GPT-J, CodeGen and the
original GPT (openai-gpt).

Each reader repeats what transformers' modeling_<type>.py builds from the config
(calc.hf.defaults.TRANSFORMERS_VERSION); each writer maps a spec onto that type's config for
calc.hf.export. All of them use LayerNorms with β and a plain MLP with biases; GPT-J and
CodeGen rotate only rotary_dim of each head's width, which changes no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, heads, layer_pattern
from calc.hf.writing import NO_TOKENS, need, plain
from calc.spec import ModelSpec


def _gpt(c: HFConfig, d_ff_key: str | None, act_key: str, **spec: Any) -> dict[str, Any]:
    """The fields these types share: GPT-2's names (hidden_size → n_embd, ... through each
    class's attribute_map), LayerNorms with β before each sublayer, a plain MLP with biases
    (d_ff_key, default 4·d)."""
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


# ---- readers ----------------------------------------------------------------------------------
def _gpt_bigcode(c: HFConfig) -> dict[str, Any]:
    # modeling_gpt_bigcode.py: c_attn projects to hidden + 2 × kv heads × head_dim (one K/V
    # head with multi_query), biases on every Linear but the head, learned positions
    # (n_positions rows), n_inner (default 4·n_embd), tied by default.
    if c.flag("add_cross_attention"):
        c.fail("add_cross_attention=true adds encoder-decoder attention; calc counts decoders")
    kv = 1 if c.flag("multi_query") else c.size("num_attention_heads")
    return _gpt(c, "n_inner", "activation_function", position={"kind": "learned"},
                attention={"n_kv_heads": kv, "qkv_bias": True, "out_bias": True})


def _gpt_neo(c: HFConfig) -> dict[str, Any]:
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


class _Window:
    """The config as calc.hf.fields.layer_pattern reads it: GPT-Neo names its sliding window
    window_size."""

    def __init__(self, c: HFConfig):
        self.c = c

    def size(self, key: str) -> int:
        return self.c.size("window_size")

    def fail(self, message: str) -> None:
        self.c.fail(message)


def _gptj(c: HFConfig) -> dict[str, Any]:
    # modeling_gptj.py, modeling_codegen.py: q, k, v (CodeGen: one fused qkv_proj) and
    # out_proj without bias, fc_in and fc_out with; attention and MLP in parallel behind one
    # ln_1; an LM head with bias; n_inner (default 4·n_embd).
    return _gpt(c, "n_inner", "activation_function", position={"kind": "rope"},
                attention={"qkv_bias": False, "out_bias": False}, parallel_block=True,
                parallel_norms=1, lm_head_bias=True)


# modeling_openai.py's ACT_FNS: the only activations its MLP accepts.
_OPENAI_ACTIVATIONS = ("relu", "silu", "gelu", "swish")


def _openai_gpt(c: HFConfig) -> dict[str, Any]:
    # modeling_openai.py: Conv1D c_attn and c_proj with biases, a 4·n_embd MLP with biases,
    # LayerNorms after each residual sum (n = ln_1(x + a); h = ln_2(n + m)) and none at the
    # end; learned positions (n_positions rows); the head tied to the token embedding.
    if c["afn"] not in _OPENAI_ACTIVATIONS:
        c.fail(f"afn={c['afn']!r}: openai-gpt accepts {', '.join(_OPENAI_ACTIVATIONS)}")
    spec = _gpt(c, None, "afn", position={"kind": "learned"},
                attention={"qkv_bias": True, "out_bias": True})
    spec["norm"] = {"kind": "layernorm", "placement": "post", "final": False}
    return spec


def _codegen(c: HFConfig) -> dict[str, Any]:
    # modeling_codegen.py: GPT-J's block; the fused qkv_proj is read as 4 interleaved shards
    # (mp_num = 4, the model parallelism CodeGen was trained with), so n_embd splits in 4.
    if c.size("hidden_size") % 4:
        c.fail(f"n_embd={c['hidden_size']} must be a multiple of 4: CodeGen's qkv_proj is "
               f"split into the 4 model-parallel shards it was trained with")
    return _gptj(c)


READERS = {"gpt_bigcode": _gpt_bigcode, "gpt_neo": _gpt_neo, "gptj": _gptj,
           "codegen": _codegen, "openai-gpt": _openai_gpt}


# ---- writers ----------------------------------------------------------------------------------
def _gpt_fields(spec: ModelSpec, model_type: str, positions: int) -> dict[str, Any]:
    h, d = spec.attention.n_heads, spec.d_model
    need(spec.head_dim_qk * h == d,
         f"attention.head_dim={spec.head_dim_qk} with d_model={d} and {h} heads ({model_type}'s "
         f"head width is n_embd / n_head)")
    return {"model_type": model_type, "vocab_size": spec.vocab_size, "n_embd": d,
            "n_layer": spec.n_layers, "n_head": h, "n_positions": positions,
            "n_inner": spec.ffn.d_ff, "activation_function": plain(spec, model_type),
            "tie_word_embeddings": spec.tie_embeddings, **NO_TOKENS}


def _gpt_bigcode_writer(spec: ModelSpec) -> dict[str, Any]:
    # Learned positions with multi-query attention (or multi-head).
    return {**_gpt_fields(spec, "gpt_bigcode", spec.position_table),
            "multi_query": spec.n_kv_heads == 1}


def _gpt_neo_writer(spec: ModelSpec) -> dict[str, Any]:
    # Learned positions, any pattern of global and local layers, a bias on out_proj only.
    config = _gpt_fields(spec, "gpt_neo", spec.position_table)
    return {"model_type": "gpt_neo", "vocab_size": spec.vocab_size, "hidden_size": spec.d_model,
            "num_layers": spec.n_layers, "num_heads": spec.attention.n_heads,
            "max_position_embeddings": spec.position_table, "intermediate_size": spec.ffn.d_ff,
            "activation_function": config["activation_function"],
            "attention_types": [[[kind], 1] for kind in spec.layer_kinds],
            "window_size": spec.attention.sliding_window or 256,
            "tie_word_embeddings": spec.tie_embeddings, **NO_TOKENS}


def _gptj_writer(spec: ModelSpec) -> dict[str, Any]:
    # GPT-J's parallel block with one norm, rotary positions and a biased LM head.
    return {**_gpt_fields(spec, "gptj", spec.context_length), "rotary_dim": None}


WRITERS = {"gpt_bigcode": _gpt_bigcode_writer, "gpt_neo": _gpt_neo_writer,
           "gptj": _gptj_writer}
# Every spec these types can hold, the named writer (calc.hf.export) writes exactly.
COVERED_BY = {"codegen": "gptj", "openai-gpt": "opt"}
_LN_PLAIN = {"norm.kind": "layernorm", "gated": False, "moe": False, "mla": False}
TRAITS = {
    "gpt_bigcode": {**_LN_PLAIN, "position.kind": ("learned",)},
    "gpt_neo": {**_LN_PLAIN, "position.kind": ("learned",)},
    "gptj": {**_LN_PLAIN, "position.kind": ("rope",)},
}
