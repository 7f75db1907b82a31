"""Kimi Linear (Moonshot AI): kimi_linear, Kimi Delta Attention layers beside multi-head latent
attention layers, and DeepSeek-V3's mixture of experts.

modeling_kimi_linear.py (transformers 5.24.0): a layer is KimiLinearAttention (MLA as
DeepSeek-V3's, without any rotary embedding: the rope part of the key is still shared) where
layer_types says full_attention, else KimiLinearDeltaAttention, which calc reads as its gated
DeltaNet with the channel gate (calc.spec.layers.DeltaNetSpec: q_proj, k_proj, v_proj, b_proj,
the decay through f_a_proj → f_b_proj, the output gate through g_a_proj → g_b_proj, both of rank
linear_head_dim); the FFN is KimiLinearMoE (a sigmoid router with an e_score_correction_bias
buffer, n_shared_experts shared experts as one MLP of n_shared · moe_intermediate_size) where
mlp_layer_types says sparse, else the dense MLP.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, top_k
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import ffn_kinds, merge, moe_layout, per_layer, sparse_layers
from calc.hf.writing import gated, need, one_group
from calc.spec import ModelSpec

# configuration_kimi_linear.py: the linear_attn_config keys __post_init__ reads, and the class
# fields they override
_LINEAR = {"head_dim": "linear_head_dim", "num_heads": "linear_num_heads",
           "short_conv_kernel_size": "linear_conv_kernel_dim"}
_KINDS = {"full_attention": "attention", "linear_attention": "deltanet"}


def _linear(c: HFConfig) -> dict[str, Any]:
    """linear_attn_config, the sub-dict released checkpoints carry (None: absent)."""
    value = c["linear_attn_config"]
    if value is None:
        return {}
    if not isinstance(value, dict):
        c.fail(f"linear_attn_config={value!r} must be a mapping")
    return value


def _linear_size(c: HFConfig, key: str) -> int:
    """A KDA size: linear_attn_config's value, else the class field's."""
    value = _linear(c).get(key)
    if value is None:
        return c.size(_LINEAR[key])
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        c.fail(f"linear_attn_config.{key}={value!r} must be a whole number >= 1")
    return value


def _mixers(c: HFConfig) -> list[str]:
    """Each layer's mixer: layer_types, else linear_attn_config's 1-based full_attn_layers and
    kda_layers, else (KimiLinearConfig.__post_init__) full attention on layers 4, 8, ..."""
    layers = c.size("num_hidden_layers")
    linear = _linear(c)
    if c.given("layer_types"):
        types = c["layer_types"]
    elif "full_attn_layers" in linear and "kda_layers" in linear:
        types = [None] * layers
        for key, kind in (("full_attn_layers", "full_attention"),
                          ("kda_layers", "linear_attention")):
            for index in linear[key]:
                if isinstance(index, bool) or not isinstance(index, int) \
                        or not 1 <= index <= layers:
                    c.fail(f"linear_attn_config.{key} has {index!r}; its layers are numbered "
                           f"1 to {layers}")
                types[index - 1] = kind
        if None in types:
            c.fail(f"layer {types.index(None) + 1} is in neither linear_attn_config."
                   f"full_attn_layers nor kda_layers (transformers' forward has no mask for it)")
    else:
        types = ["full_attention" if i and i % 4 == 0 else "linear_attention"
                 for i in range(layers)]
    return hybrid_mixers(c, types, layers)


def hybrid_mixers(c: HFConfig, types: Any, layers: int) -> list[str]:
    """Each layer's mixer from layer_types' full_attention and linear_attention (Kimi Linear's
    and Bailing's hybrids)."""
    if not isinstance(types, list) or len(types) != layers or not set(types) <= set(_KINDS):
        c.fail(f"layer_types must list 'full_attention' or 'linear_attention' for each of the "
               f"{layers} layers, got {types!r}")
    return [_KINDS[kind] for kind in types]


def read_mla_kda_moe(c: HFConfig, mixers: list[str], first_dense: int,
                     kda: dict[str, Any] | None, attention: dict[str, Any],
                     **fields: Any) -> dict[str, Any]:
    """Kimi Linear's model, which Bailing's hybrid shares: MLA layers (their own keys per head)
    beside the `kda` layers, DeepSeek-V3's MoE after the first `first_dense` layers unless
    mlp_layer_types says otherwise, and an LM head of its own. `attention`: the MLA layers'
    fields beyond their biases and latent shapes; `fields`: the decoder's others."""
    layers = c.size("num_hidden_layers")
    heads = c.size("num_attention_heads")
    if c.size("num_key_value_heads") != heads:
        # MLA gives every head its keys, which eager_attention_forward then repeats
        # heads // num_key_value_heads times: only equal counts run
        c.fail(f"num_key_value_heads={c['num_key_value_heads']} must equal "
               f"num_attention_heads={heads} (MLA's keys are per head; transformers repeats "
               f"them num_attention_heads // num_key_value_heads times)")
    sparse = sparse_layers(c, [i >= first_dense for i in range(layers)])
    n_experts = c.size("num_local_experts")
    placement, placed = moe_layout(c, sparse) if any(sparse) else (None, {})
    moe = placement is not None and {
        "n_experts": n_experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", n_experts, "num_local_experts"),
        "n_shared_experts": c.size("n_shared_experts", minimum=0), **placement,
        # e_score_correction_bias is a buffer of the router (KimiLinearTopkRouter,
        # BailingHybridTopkRouter), not a parameter
        "router_bias": False}
    bias = c.flag("attention_bias")
    read = decoder(
        c, {"n_heads": heads}, moe=moe or None, deltanet=kda or None,
        attention={"qkv_bias": bias, "out_bias": bias, **attention, "mla": {
            "q_lora_rank": c.size("q_lora_rank") if c.given("q_lora_rank") else None,
            "kv_lora_rank": c.size("kv_lora_rank"), "v_head_dim": c.size("v_head_dim"),
            "qk_nope_head_dim": c.size("qk_nope_head_dim", minimum=0),
            "qk_rope_head_dim": c.size("qk_rope_head_dim", minimum=0)}},
        # KimiLinearForCausalLM's and BailingHybridForCausalLM's _tied_weights_keys are empty:
        # the head is its own matrix whatever tie_word_embeddings says
        tie_embeddings=False, **fields)
    layout = per_layer(c, mixers=mixers,
                       attention=["global" if m == "attention" else "" for m in mixers],
                       ffn=ffn_kinds(sparse) if placed else None)
    return merge(read, layout)


def _read_kimi_linear(c: HFConfig) -> dict[str, Any]:
    mixers = _mixers(c)
    # KimiLinearConfig.__post_init__: the first first_k_dense_replace layers dense (a keyword
    # it takes and drops, default 1), unless mlp_layer_types lists them; moe_layer_freq, which
    # released configs carry, is not read by transformers
    first = (c.size("first_k_dense_replace", minimum=0)
             if c.given("first_k_dense_replace") else 1)
    kda = "deltanet" in mixers and {
        "n_k_heads": _linear_size(c, "num_heads"), "n_v_heads": _linear_size(c, "num_heads"),
        "d_k": _linear_size(c, "head_dim"), "d_v": _linear_size(c, "head_dim"),
        "d_conv": _linear_size(c, "short_conv_kernel_size"), "gate": "channel",
        # KimiLinearForgetGate's f_a_proj and the g_a_proj beside it: hidden → head_dim
        "gate_rank": _linear_size(c, "head_dim")}
    # no layer rotates anything: KDA has no positions and the MLA layers are NoPE
    return read_mla_kda_moe(c, mixers, first, kda or None, {}, position={"kind": "none"})


def write_mla_kda_moe(spec: ModelSpec, model_type: str, kda: dict[str, Any],
                      attention_kinds: tuple[str, ...]) -> dict[str, Any]:
    """Kimi Linear's config, which Bailing's hybrid shares (read_mla_kda_moe): the MLA layers
    (of `attention_kinds`) and KDA layers by layer_types, DeepSeek-V3's experts where
    mlp_layer_types says sparse, an untied head; `kda`: the type's own KDA fields."""
    mla, moe = spec.attention.mla, spec.moe
    need(not spec.tie_embeddings, f"tie_embeddings=true ({model_type} never ties its LM head)")
    need(mla is not None, f"attention.mla=None ({model_type}'s attention is multi-head latent "
                          f"attention)")
    assert mla is not None
    routed = {} if moe is None else {
        "num_local_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
        "moe_intermediate_size": moe.d_expert, "n_shared_experts": moe.n_shared_experts,
        **one_group(spec, model_type)}
    types = []
    for mixer, kind in zip(spec.mixer_kinds, spec.attention_kinds, strict=True):
        need(mixer in _KINDS.values() and kind in attention_kinds,
             f"a {mixer} {kind} layer ({model_type} builds MLA and Kimi Delta Attention layers)")
        types.append("full_attention" if mixer == "attention" else "linear_attention")
    return {"model_type": model_type, "vocab_size": spec.vocab_size,
            "hidden_size": spec.d_model, "num_hidden_layers": spec.n_layers,
            "num_attention_heads": spec.attention.n_heads,
            "num_key_value_heads": spec.attention.n_heads,
            "tie_word_embeddings": False, "pad_token_id": None,
            "bos_token_id": None, "eos_token_id": None,
            "intermediate_size": spec.ffn.d_ff if spec.ffn else 0,
            "hidden_act": gated(spec, model_type),
            "max_position_embeddings": spec.context_length,
            "attention_bias": spec.attention.qkv_bias, **mla.model_dump(), **kda,
            **routed,
            "layer_types": types,
            "mlp_layer_types": ["sparse" if s else "dense" for s in spec.moe_layers]}


def _write_kimi_linear(spec: ModelSpec) -> dict[str, Any]:
    n = spec.deltanet
    need(spec.position.kind == "none", f"position.kind={spec.position.kind!r} (kimi_linear "
                                       f"rotates nothing)")
    kda: dict[str, Any] = {}
    if n is not None:
        need(n.channel_gate, f"deltanet.gate={n.gate!r} (kimi_linear's is Kimi Delta "
                             f"Attention's channel gate)")
        need(n.n_k_heads == n.n_v_heads and n.d_k == n.d_v == n.gate_rank,
             f"deltanet n_k_heads={n.n_k_heads}, n_v_heads={n.n_v_heads}, d_k={n.d_k}, "
             f"d_v={n.d_v}, gate_rank={n.gate_rank} (kimi_linear has one head count and one "
             f"width for all of them)")
        kda = {"linear_num_heads": n.n_k_heads, "linear_head_dim": n.d_k,
               "linear_conv_kernel_dim": n.d_conv}
    return write_mla_kda_moe(spec, "kimi_linear", kda, ("global", "nope", ""))


KIMI_LINEAR = ModelType(
    "kimi_linear", _read_kimi_linear, write=_write_kimi_linear,
    traits=Traits(moe=True, mla=True), router_bias_buffer=True,
    # KimiLinearConfig.attribute_map: the names released config.json files use
    aliases={"num_experts": "num_local_experts", "num_experts_per_token": "num_experts_per_tok",
             "num_shared_experts": "n_shared_experts", "model_max_length":
             "max_position_embeddings", "num_expert_group": "n_group",
             "moe_renormalize": "norm_topk_prob"},
    # keywords KimiLinearConfig.__post_init__ takes from kwargs, not class fields
    getattr_fields=("linear_attn_config", "first_k_dense_replace"),
    defaults={
        "vocab_size": 163840, "hidden_size": 2304, "intermediate_size": 9216,
        "moe_intermediate_size": 1024, "num_hidden_layers": 27, "num_attention_heads": 32,
        "num_key_value_heads": 32, "n_shared_experts": 1, "kv_lora_rank": 512,
        "q_lora_rank": None, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "qk_nope_head_dim": 128, "num_experts_per_tok": 8, "hidden_act": "silu",
        "max_position_embeddings": 1048576, "tie_word_embeddings": False,
        "attention_bias": False, "num_local_experts": 256, "mlp_layer_types": None,
        "layer_types": None, "linear_head_dim": 128, "linear_num_heads": 32,
        "linear_conv_kernel_dim": 4, "n_group": 1, "norm_topk_prob": True,
    })
