"""Command R (Cohere): cohere (Command R, R+) and cohere2 (Command R7B, Command A; the
multimodal cohere2_vision config is read through it: calc.hf.multimodal).

Logit scales are neither parameters nor matrix products, so they change no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import (
    HFConfig,
    decoder,
    decoder_defaults,
    heads,
    layer_kinds,
    layernorm_decoder,
    no_null_head_dim,
    top_k,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import ffn_kinds, kinds_or, merge, per_layer, sparse_layers
from calc.hf.writing import (
    experts,
    full_or_sliding,
    gated,
    llama_like,
    need,
    rope_decoder,
    window_field,
)
from calc.spec import ModelSpec


# ---- cohere -----------------------------------------------------------------------------------
def _read_cohere(c: HFConfig) -> dict[str, Any]:
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


def _write_cohere(spec: ModelSpec) -> dict[str, Any]:
    return {**rope_decoder(spec, "cohere", gated(spec, "cohere")),
            "attention_bias": spec.attention.qkv_bias,
            "use_qk_norm": spec.attention.qk_norm == "projection"}


COHERE = ModelType(
    "cohere", _read_cohere, write=_write_cohere, traits=Traits(norm="layernorm"),
    getattr_fields=("head_dim",),
    defaults=decoder_defaults(256000, 8192, 22528, 40, 64, None, "silu", 8192, True,
                              attention_bias=False, use_qk_norm=False))


# ---- cohere2 ----------------------------------------------------------------------------------
def _read_cohere2(c: HFConfig) -> dict[str, Any]:
    # modeling_cohere2.py: one LayerNorm (weight, no bias) feeds attention and MLP in parallel;
    # the sliding layers have RoPE, the full ones none; configuration_cohere2.py: layer_types,
    # else every sliding_window_pattern-th layer (default 4) full; head_dim is
    # hidden_size / heads whatever the file says.
    pattern = c.size("sliding_window_pattern") if "sliding_window_pattern" in c.values else 4
    kinds = kinds_or(c, lambda i: "local" if (i + 1) % pattern else "global")
    return _parallel(c, ["nope" if k == "global" else k for k in kinds])


def _parallel(c: HFConfig, kinds: list[str]) -> dict[str, Any]:
    """Cohere 2's layers: one LayerNorm without bias before attention and MLP in parallel,
    heads hidden_size / heads wide, attention_bias on q, k, v, o; `kinds` per layer."""
    h = heads(c, head_dim_key=None)
    bias = c.flag("attention_bias")
    spec = decoder(c, h, attention={"qkv_bias": bias, "out_bias": bias},
                   norm={"kind": "layernorm", "bias": False, "placement": "pre"},
                   parallel_block=True, parallel_norms=1)
    return merge(spec, per_layer(c, attention=kinds))


def _write_cohere2(spec: ModelSpec) -> dict[str, Any]:
    config = {**llama_like(spec, "cohere2"), "attention_bias": spec.attention.qkv_bias,
              **window_field(spec)}
    config["layer_types"] = ["sliding_attention" if kind == "local" else "full_attention"
                             for kind in spec.attention_kinds]
    config.pop("head_dim")  # cohere2's heads are hidden_size / heads wide, whatever is given
    return config


COHERE2 = ModelType(
    "cohere2", _read_cohere2, write=_write_cohere2, traits=Traits(norm="layernorm"),
    defaults={
        "hidden_act": "silu", "num_key_value_heads": None, "vocab_size": 256000,
        "hidden_size": 8192, "intermediate_size": 22528, "num_hidden_layers": 40,
        "num_attention_heads": 64, "max_position_embeddings": 8192,
        "tie_word_embeddings": True, "attention_bias": False, "sliding_window": 4096,
        "layer_types": None,
    })


# ---- cohere_compass_text ----------------------------------------------------------------------
def _read_cohere_compass_text(c: HFConfig) -> dict[str, Any]:
    # modeling_cohere_compass.py: Cohere 2's parallel layers (configuration_cohere_compass.py
    # sets head_dim to hidden_size / heads); layer_types, else every layer full attention with
    # RoPE; sliding_window on the sliding ones. Its rotary embedding looks up
    # rope_parameters[layer type] for every type the layers use and fails without one.
    kinds = kinds_or(c, lambda i: "global")
    rope = c.values.get("rope_parameters") or {}
    used = {"local": "sliding_attention", "global": "full_attention"}
    for kind in sorted(set(kinds)):
        if not isinstance(rope, dict) or used[kind] not in rope:
            c.fail(f"rope_parameters={rope!r} has no {used[kind]!r} entry: transformers' "
                   f"CohereCompass reads one per layer type and fails without it")
    return _parallel(c, kinds)


# No writer: cohere2's holds its specs.
COHERE_COMPASS_TEXT = ModelType(
    "cohere_compass_text", _read_cohere_compass_text,
    defaults=COHERE2.defaults)


# ---- cohere2_moe ------------------------------------------------------------------------------
def _read_cohere2_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_cohere2_moe.py: Cohere 2's parallel layer (one norm: RMSNorm when rms_norm_eps
    # is set, else LayerNorm without bias; attention and FFN read it and add to the residual;
    # attention_bias on q, k, v, o; head_dim from the file). configuration_cohere2_moe.py:
    # first_k_dense_replace (a keyword __post_init__ pops) dense layers, sliding except every
    # prefix_dense_sliding_window_pattern-th among them and every sliding_window_pattern-th
    # among the rest, unless layer_types says; the MoE where mlp_layer_types says "sparse":
    # a router without bias, num_experts experts of intermediate_size and, with
    # num_shared_experts, one shared MLP of num_shared × intermediate_size averaged in (no
    # parameter); the dense layers' MLP of prefix_dense_intermediate_size.
    layers = c.size("num_hidden_layers")
    first = c.values.get("first_k_dense_replace", 0)
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        c.fail(f"first_k_dense_replace={first!r} must be a whole number >= 0")
    prefix, rest = c.size("prefix_dense_sliding_window_pattern"), c.size("sliding_window_pattern")
    kinds = layer_kinds(c, [
        ("local" if (i + 1) % prefix else "global") if i < first
        else ("local" if (i - first + 1) % rest else "global") for i in range(layers)])
    sparse = sparse_layers(c, [i >= first for i in range(layers)])
    n_experts, width = c.size("num_experts"), c.size("intermediate_size")
    shared = c.size("num_shared_experts", minimum=0)
    moe = any(sparse) and {
        "n_experts": n_experts, "d_expert": width,
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_experts"),
        **({"n_shared_experts": 1, "d_shared": shared * width} if shared else {})}
    bias = c.flag("attention_bias")
    norm = ({"kind": "rmsnorm", "placement": "pre"} if c.given("rms_norm_eps")
            else {"kind": "layernorm", "bias": False, "placement": "pre"})
    spec = decoder(c, heads(c), moe=moe or None, norm=norm, parallel_block=True,
                   parallel_norms=1, attention={"qkv_bias": bias, "out_bias": bias},
                   d_ff=(c.size("prefix_dense_intermediate_size") if not all(sparse)
                         else width))
    return merge(spec, per_layer(c, attention=kinds, ffn=ffn_kinds(sparse)))


def _write_cohere2_moe(spec: ModelSpec) -> dict[str, Any]:
    # The one writer of a parallel layer with experts (sliding and full, dense prefix layers).
    moe, ffn = experts(spec, "cohere2_moe"), spec.ffn
    need(spec.parallel_block, "parallel_block=False (cohere2_moe's attention and FFN read one "
                              "norm in parallel)")
    assert ffn is not None
    shared = moe.shared_width // moe.d_expert if moe.n_shared_experts else 0
    return {**llama_like(spec, "cohere2_moe"), **full_or_sliding(spec, "cohere2_moe"),
            "attention_bias": spec.attention.qkv_bias,
            "mlp_layer_types": ["sparse" if sparse else "dense" for sparse in spec.moe_layers],
            "intermediate_size": moe.d_expert, "num_experts": moe.n_experts,
            "num_experts_per_tok": moe.top_k, "num_shared_experts": shared,
            "prefix_dense_intermediate_size": ffn.d_ff,
            "rms_norm_eps": 1e-5 if spec.norm.kind == "rmsnorm" else None}


COHERE2_MOE = ModelType(
    "cohere2_moe", _read_cohere2_moe, write=_write_cohere2_moe,
    traits=Traits(norm="layernorm", moe=True),
    getattr_fields=("first_k_dense_replace",),
    defaults={
        "vocab_size": 256000, "hidden_size": 8192, "intermediate_size": 22528,
        "num_hidden_layers": 40, "num_attention_heads": 64, "num_key_value_heads": None,
        "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 8192,
        "tie_word_embeddings": True, "attention_bias": False, "sliding_window": 4096,
        "num_experts_per_tok": 2, "num_experts": 8, "num_shared_experts": 0,
        "layer_types": None, "mlp_layer_types": None, "prefix_dense_sliding_window_pattern": 1,
        "prefix_dense_intermediate_size": None, "sliding_window_pattern": 4,
        "rms_norm_eps": None,
    })
