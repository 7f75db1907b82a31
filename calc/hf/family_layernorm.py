"""LayerNorm decoders with rotary positions (or ALiBi): StarCoder2, StableLM, Persimmon, Phi,
Nemotron, Command R (cohere), MPT and OLMo 1.

Each reader repeats what transformers' modeling_<type>.py builds from the config
(calc.hf.defaults.TRANSFORMERS_VERSION); each writer maps a spec onto that type's config for
calc.hf.export. Partial rotary embeddings (partial_rotary_factor, rotary_dim) and logit scales
are neither parameters nor matrix products, so they change no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.family_llama import no_null_head_dim
from calc.hf.fields import HFConfig, divides, heads, layernorm_decoder
from calc.hf.writing import NO_TOKENS, base, gated, need, plain
from calc.spec import ModelSpec


# ---- readers ----------------------------------------------------------------------------------
def _starcoder2(c: HFConfig) -> dict[str, Any]:
    # modeling_starcoder2.py: use_bias on q, k, v, o, c_fc and c_proj; LayerNorms with β; a
    # plain MLP; every layer uses config.sliding_window (None: global).
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), c.flag("use_bias"),
                             position={"kind": "rope"})
    if c.given("sliding_window"):
        spec["attention"]["sliding_window"] = c.size("sliding_window")
    return spec


def _stablelm(c: HFConfig) -> dict[str, Any]:
    # modeling_stablelm.py: use_qkv_bias on q, k, v (o_proj has none), a gated MLP without
    # bias, LayerNorms with β; use_parallel_residual shares input_layernorm between attention
    # and MLP. qk_layernorm adds one LayerNorm without β per head (StableLmLayerNormPerHead)
    # while the block's norms have β: calc's norms share one bias switch.
    divides(c)
    if c.flag("qk_layernorm"):
        c.fail("qk_layernorm=true adds per-head LayerNorms without β beside the block's "
               "LayerNorms with β; calc's spec has one norm bias for both")
    spec = layernorm_decoder(c, heads(c, head_dim_key=None), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=True), False,
                             position={"kind": "rope"})
    spec["attention"]["qkv_bias"] = c.flag("use_qkv_bias")
    if c.flag("use_parallel_residual"):
        spec.update(parallel_block=True, parallel_norms=1)
    return spec


def _persimmon(c: HFConfig) -> dict[str, Any]:
    # modeling_persimmon.py: one fused query_key_value (3 × hidden) and dense, both with bias;
    # a plain MLP with biases; qk_layernorm: one LayerNorm (γ, β) over head_dim for all
    # query heads and one for all key heads.
    divides(c)
    spec = layernorm_decoder(c, heads(c, None, head_dim_key=None),
                             c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), True,
                             position={"kind": "rope"})
    if c.flag("qk_layernorm"):
        spec["attention"]["qk_norm"] = "head"
    return spec


def _phi(c: HFConfig) -> dict[str, Any]:
    # modeling_phi.py: biases on q, k, v, dense, fc1, fc2 and the LM head; attention and MLP
    # in parallel behind one input_layernorm; qk_layernorm: one LayerNorm (γ, β) of width
    # hidden_size / heads for all query heads, one for all key heads.
    no_null_head_dim(c)
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), True,
                             position={"kind": "rope"}, parallel_block=True, parallel_norms=1,
                             lm_head_bias=True)
    if c.flag("qk_layernorm"):
        width = c.size("hidden_size") // c.size("num_attention_heads")
        if c.given("head_dim") and c["head_dim"] != width:
            c.fail(f"head_dim={c['head_dim']} with qk_layernorm=true: Phi's q/k LayerNorms "
                   f"have width hidden_size / heads = {width}")
        spec["attention"]["qk_norm"] = "head"
    return spec


def _nemotron(c: HFConfig) -> dict[str, Any]:
    # modeling_nemotron.py: LayerNorm1P (γ stored as γ − 1, and β), attention_bias on q, k,
    # v, o, a plain MLP up_proj → act → down_proj with mlp_bias; the attention divides by
    # num_key_value_heads, so the file must give it.
    if not c.given("num_key_value_heads"):
        c.fail("num_key_value_heads=None: transformers' Nemotron attention divides by it and "
               "its config leaves it None")
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), c.flag("attention_bias"),
                             position={"kind": "rope"})
    spec["ffn"]["bias"] = c.flag("mlp_bias")
    return spec


def _cohere(c: HFConfig) -> dict[str, Any]:
    # modeling_cohere.py: LayerNorms without β (CohereLayerNorm), attention and a gated MLP in
    # parallel behind one input_layernorm, attention_bias on q, k, v, o; use_qk_norm: a
    # LayerNorm without β whose γ has one row per head, (heads, head_dim) for queries and
    # (kv_heads, head_dim) for keys: the parameters of a norm over each whole projection.
    no_null_head_dim(c)
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=True), c.flag("attention_bias"),
                             position={"kind": "rope"}, parallel_block=True, parallel_norms=1,
                             norm={"kind": "layernorm", "bias": False, "placement": "pre"})
    spec["ffn"]["bias"] = False
    if c.flag("use_qk_norm"):
        spec["attention"]["qk_norm"] = "projection"
    return spec


# transformers' MPT builds one model whatever these say (modeling_mpt.py): a 4·d GELU MLP, no
# biases, ALiBi, one attention kind. A file that asks for another is refused, as the count of
# the checkpoint's own code and transformers' would differ.
_MPT_FIXED = {"expansion_ratio": 4, "no_bias": True}
_MPT_ATTENTION = {"alibi": True, "qk_ln": False, "attn_type": "multihead_attention"}


def _mpt(c: HFConfig) -> dict[str, Any]:
    # modeling_mpt.py: Wqkv (3·d) and out_proj without bias, LayerNorms without β, up_proj
    # 4·d → GELU → down_proj, ALiBi over max_seq_len, tied by default; learned_pos_emb is not
    # read.
    for key, value in _MPT_FIXED.items():
        if c[key] != value:
            c.fail(f"{key}={c[key]!r}: transformers' MPT always builds {key}={value!r}; the "
                   f"checkpoint's own code would count differently")
    attn = c["attn_config"] or {}
    if not isinstance(attn, dict):
        c.fail(f"attn_config={attn!r} must be an object")
    for key, value in _MPT_ATTENTION.items():
        if attn.get(key, value) != value:
            c.fail(f"attn_config.{key}={attn[key]!r}: transformers' MPT always uses "
                   f"{key}={value!r}; the checkpoint's own code would count differently")
    divides(c, "n_heads", "d_model")
    d = c.size("d_model")
    return {
        "vocab_size": c["vocab_size"], "d_model": d, "n_layers": c["n_layers"],
        "context_length": c["max_seq_len"],
        "attention": {**heads(c, None, "n_heads", "d_model", None)},
        "ffn": {"activation": "gelu", "d_ff": 4 * d, "bias": False},
        "norm": {"kind": "layernorm", "bias": False, "placement": "pre"},
        "position": {"kind": "alibi"},
        "tie_embeddings": c.flag("tie_word_embeddings"),
    }


def _olmo(c: HFConfig) -> dict[str, Any]:
    # modeling_olmo.py: OlmoLayerNorm is F.layer_norm without γ or β (Groeneveld et al. 2024,
    # OLMo, §2.1 "non-parametric layer norm") before each sublayer and after the last layer;
    # Llama's attention (attention_bias on q, k, v, o) and SwiGLU-style MLP without bias.
    # clip_qkv clamps the projections' outputs: no parameter, no matrix product.
    no_null_head_dim(c)
    bias = c.flag("attention_bias")
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=True), bias,
                             position={"kind": "rope"},
                             norm={"kind": "layernorm", "weights": False, "bias": False,
                                   "placement": "pre"})
    spec["ffn"]["bias"] = False
    return spec


READERS = {"starcoder2": _starcoder2, "stablelm": _stablelm, "persimmon": _persimmon,
           "phi": _phi, "nemotron": _nemotron, "cohere": _cohere, "mpt": _mpt, "olmo": _olmo}


# ---- writers ----------------------------------------------------------------------------------
def _rope_layernorm(spec: ModelSpec, model_type: str, act: str) -> dict[str, Any]:
    return {**base(spec, model_type), "num_key_value_heads": spec.n_kv_heads,
            "head_dim": spec.head_dim_qk, "intermediate_size": spec.ffn.d_ff,
            "hidden_act": act, "max_position_embeddings": spec.context_length}


def _starcoder2_writer(spec: ModelSpec) -> dict[str, Any]:
    # Sequential LayerNorm block, plain MLP, one bias switch, GQA, one window for all layers.
    return {**_rope_layernorm(spec, "starcoder2", plain(spec, "starcoder2")),
            "use_bias": spec.ffn.bias, "sliding_window": spec.attention.sliding_window}


def _nemotron_writer(spec: ModelSpec) -> dict[str, Any]:
    # As StarCoder2 without windows, with separate attention and MLP bias switches.
    return {**_rope_layernorm(spec, "nemotron", plain(spec, "nemotron")),
            "attention_bias": spec.attention.qkv_bias, "mlp_bias": spec.ffn.bias}


def _same_width(spec: ModelSpec, arch: str) -> None:
    h = spec.attention.n_heads
    need(spec.head_dim_qk * h == spec.d_model,
         f"attention.head_dim={spec.head_dim_qk} with d_model={spec.d_model} and {h} heads "
         f"({arch}'s head width is hidden_size / heads)")


def _stablelm_writer(spec: ModelSpec) -> dict[str, Any]:
    # A gated MLP behind LayerNorms with β, in sequence or in parallel behind one norm.
    _same_width(spec, "stablelm")
    config = _rope_layernorm(spec, "stablelm", gated(spec, "stablelm"))
    del config["head_dim"]
    return {**config, "use_qkv_bias": spec.attention.qkv_bias,
            "use_parallel_residual": spec.parallel_block, "qk_layernorm": False}


def _persimmon_writer(spec: ModelSpec) -> dict[str, Any]:
    _same_width(spec, "persimmon")
    config = _rope_layernorm(spec, "persimmon", plain(spec, "persimmon"))
    del config["head_dim"], config["num_key_value_heads"]
    return {**config, "qk_layernorm": spec.attention.qk_norm == "head"}


def _phi_writer(spec: ModelSpec) -> dict[str, Any]:
    return {**_rope_layernorm(spec, "phi", plain(spec, "phi")),
            "qk_layernorm": spec.attention.qk_norm == "head"}


def _cohere_writer(spec: ModelSpec) -> dict[str, Any]:
    return {**_rope_layernorm(spec, "cohere", gated(spec, "cohere")),
            "attention_bias": spec.attention.qkv_bias,
            "use_qk_norm": spec.attention.qk_norm == "projection"}


def _olmo_writer(spec: ModelSpec) -> dict[str, Any]:
    # The one rotary type whose LayerNorms have no parameters (the round trip refuses others).
    return {**_rope_layernorm(spec, "olmo", gated(spec, "olmo")),
            "attention_bias": spec.attention.qkv_bias}


def _mpt_writer(spec: ModelSpec) -> dict[str, Any]:
    return {"model_type": "mpt", "vocab_size": spec.vocab_size, "d_model": spec.d_model,
            "n_heads": spec.attention.n_heads, "n_layers": spec.n_layers,
            "max_seq_len": spec.context_length, "tie_word_embeddings": spec.tie_embeddings,
            **NO_TOKENS}


WRITERS = {"starcoder2": _starcoder2_writer, "nemotron": _nemotron_writer,
           "stablelm": _stablelm_writer, "persimmon": _persimmon_writer, "phi": _phi_writer,
           "cohere": _cohere_writer, "mpt": _mpt_writer, "olmo": _olmo_writer}
COVERED_BY: dict[str, str] = {}
_LN = {"norm.kind": "layernorm", "moe": False, "mla": False}
TRAITS = {
    **{arch: {**_LN, "gated": False, "position.kind": ("rope",)}
       for arch in ("starcoder2", "nemotron", "persimmon", "phi")},
    **{arch: {**_LN, "gated": True, "position.kind": ("rope",)}
       for arch in ("stablelm", "cohere", "olmo")},
    "mpt": {**_LN, "gated": False, "position.kind": ("alibi",)},
}
