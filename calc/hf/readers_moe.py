"""Readers for mixture-of-experts decoders: OLMoE, GLM-4.5 (glm4_moe), Granite MoE, Phi-3.5-MoE
(phimoe), ERNIE 4.5 MoE, dots.llm1 (dots1), Hunyuan-A13B (hunyuan_v1_moe), DBRX, JetMoE and
Flint.

Each repeats what transformers/models/<type>/modeling_<type>.py (calc.hf.defaults'
TRANSFORMERS_VERSION) builds; calc.hf.layout writes per-layer lists compactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calc.hf.family_llama import no_null_head_dim
from calc.hf.fields import HFConfig, decoder, heads, layer_kinds, top_k
from calc.hf.layout import ffn_kinds, merge, moe_layout, per_layer


def _olmoe(c: HFConfig) -> dict[str, Any]:
    # modeling_olmoe.py: q_norm over hidden_size and k_norm over (hidden_size / heads) · KV
    # heads (the whole projections, as OLMo 2), pre-norm; every FFN is the MoE: a router
    # without bias, experts of intermediate_size; attention_bias on q, k, v, o.
    h = heads(c)
    if h["head_dim"] is not None and h["head_dim"] * h["n_heads"] != c.size("hidden_size"):
        c.fail(f"head_dim={h['head_dim']}: OLMoE's q_norm spans hidden_size="
               f"{c['hidden_size']}, not num_attention_heads × head_dim")
    bias = c.flag("attention_bias")
    experts = c.size("num_experts")
    return decoder(c, h, attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "projection"},
                   moe={"n_experts": experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", experts, "num_experts")})


def _glm4_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_glm4_moe.py: attention_bias on q, k, v (o_proj has none), q/k norms per head when
    # use_qk_norm; from first_k_dense_replace on, the MoE: a router without bias
    # (e_score_correction_bias is a buffer), n_shared_experts shared experts as one MLP of
    # n_shared × moe_intermediate_size; before it the dense MLP of intermediate_size. The
    # num_nextn_predict_layers MTP layers of the release are not built by transformers: calc
    # counts them apart, as for DeepSeek-V3.
    layers, first = c.size("num_hidden_layers"), c.size("first_k_dense_replace", minimum=0)
    experts = c.size("n_routed_experts")
    # getattr(config, "head_dim", hidden_size // heads): floor division when heads do not
    # divide the width (the class's own default, 96 heads over 4096)
    h, d = c.size("num_attention_heads"), c.size("hidden_size")
    kv = c.size("num_key_value_heads") if c.given("num_key_value_heads") else h
    if h % kv:
        c.fail(f"num_key_value_heads={kv} must divide num_attention_heads={h}")
    width = c.size("head_dim") if c.given("head_dim") else d // h
    moe = first < layers and {
        "n_experts": experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", experts, "n_routed_experts"),
        "n_shared_experts": c.size("n_shared_experts", minimum=0), "first_dense_layers": first}
    return decoder(c, {"n_heads": h, "n_kv_heads": kv, "head_dim": width}, moe=moe or None,
                   mtp_modules=c.size("num_mtp_layers", 0),
                   attention={"qkv_bias": c.flag("attention_bias"),
                              "qk_norm": "head" if c.flag("use_qk_norm") else "none"})


def _granitemoe(c: HFConfig) -> dict[str, Any]:
    # modeling_granitemoe.py: every FFN is the MoE (ParallelExperts of intermediate_size, a
    # router without bias); attention_bias on q, k, v, o; the multipliers are scalars.
    bias = c.flag("attention_bias")
    experts = c.size("num_local_experts")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias},
                   moe={"n_experts": experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", experts, "num_local_experts")})


def _phimoe(c: HFConfig) -> dict[str, Any]:
    # modeling_phimoe.py: LayerNorms with β, attention_bias on q, k, v, o, an LM-head bias when
    # lm_head_bias, every FFN the MoE (router without bias); sliding_window on every layer.
    # Its router (sparsemixer) sends every token to exactly two experts.
    bias = c.flag("attention_bias")
    experts = c.size("num_local_experts", minimum=2)
    if c["num_experts_per_tok"] != 2:
        c.fail(f"num_experts_per_tok={c['num_experts_per_tok']!r}: Phi-3.5-MoE's sparsemixer "
               f"router picks exactly 2 experts per token whatever this says")
    window = c.size("sliding_window") if c.given("sliding_window") else None
    return decoder(c, heads(c), lm_head_bias=c.flag("lm_head_bias"),
                   attention={"qkv_bias": bias, "out_bias": bias, "sliding_window": window},
                   norm={"kind": "layernorm", "placement": "pre"},
                   moe={"n_experts": experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", experts, "num_local_experts")})


def _ernie4_5_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_ernie4_5_moe.py: use_bias on q, k, v, o, the dense and shared MLPs and the LM
    # head, not on the routed experts; MoE on layers moe_layer_start_index..end_index (-1: the
    # last) every moe_layer_interval-th; a router without bias whose e_score_correction_bias is
    # a parameter (E values a layer); moe_num_shared_experts shared experts as one MLP.
    if c.flag("use_bias"):
        c.fail("use_bias=true biases the dense and shared MLPs but not the routed experts; "
               "calc's ffn.bias covers all of them")
    layers = c.size("num_hidden_layers")
    start, end = c.size("moe_layer_start_index", 0), c["moe_layer_end_index"]
    end = layers - 1 if end == -1 else c.size("moe_layer_end_index", 0)
    step = c.size("moe_layer_interval")
    sparse = [(i + 1) % step == 0 and start <= i <= end for i in range(layers)]
    experts = c.size("moe_num_experts")
    placement, placed = moe_layout(c, sparse) if any(sparse) else (None, {})
    moe = placement is not None and {
        "n_experts": experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "moe_k", experts, "moe_num_experts"), "router_bias": True,
        "n_shared_experts": c.size("moe_num_shared_experts", 0), **(placement or {})}
    return decoder(c, heads(c), moe=moe or None, **placed)


def _dots1(c: HFConfig) -> dict[str, Any]:
    # modeling_dots1.py: attention_bias on q, k, v and o, per-head q/k RMSNorms; layer_types,
    # else the sliding window from layer max_window_layers on (configuration_dots1.py); from
    # first_k_dense_replace on, the MoE: a router without bias (e_score_correction_bias is a
    # buffer), n_shared_experts shared experts as one MLP of n_shared × moe_intermediate_size;
    # before it, the dense MLP of intermediate_size.
    layers, first = c.size("num_hidden_layers"), c.size("first_k_dense_replace", minimum=0)
    start, window = c.size("max_window_layers", minimum=0), c["sliding_window"]
    kinds = layer_kinds(c, ["local" if window is not None and i >= start else "global"
                            for i in range(layers)])
    experts = c.size("n_routed_experts")
    moe = first < layers and {
        "n_experts": experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", experts, "n_routed_experts"),
        "n_shared_experts": c.size("n_shared_experts", minimum=0), "first_dense_layers": first}
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), moe=moe or None,
                   attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head"})
    return merge(spec, per_layer(c, attention=kinds))


def _one_value(c: HFConfig, key: str) -> Any:
    """A field the checkpoint's code may list per layer: its one value."""
    value = c[key]
    if isinstance(value, list):
        if len(value) != c.size("num_hidden_layers") or len(set(value)) != 1:
            c.fail(f"{key}={value!r} must list one equal value per layer: calc's MoE has one "
                   f"value for every layer")
        value = value[0]
    return value


def _hunyuan_v1_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_hunyuan_v1_moe.py: attention as hunyuan_v1_dense's (attention_bias on q, k, v,
    # o; RMSNorms over each head's queries and keys); every layer's MLP the MoE: a router
    # Linear(d, E) without bias, num_experts experts and one shared MLP, all of
    # intermediate_size, the shared one added ungated. The gate reads moe_topk per layer; the
    # experts read num_experts whole. moe_intermediate_size and num_shared_expert are the
    # checkpoint's own code's fields, which transformers does not read: a file whose values
    # would make that code build another model is refused, as use_cla is for the dense model.
    no_null_head_dim(c)
    width = c.size("intermediate_size")
    if "moe_intermediate_size" in c.values and _one_value(c, "moe_intermediate_size") != width:
        c.fail(f"moe_intermediate_size={c['moe_intermediate_size']!r}: transformers' "
               f"hunyuan_v1_moe builds its experts intermediate_size={width} wide")
    if "num_shared_expert" in c.values and _one_value(c, "num_shared_expert") != 1:
        c.fail(f"num_shared_expert={c['num_shared_expert']!r}: transformers' hunyuan_v1_moe "
               f"builds one shared MLP")
    for key, built in (("use_cla", False), ("use_qk_norm", True), ("use_mixed_mlp_moe", True)):
        if c.values.get(key, built) is not built:
            c.fail(f"{key}={c.values[key]!r}: transformers' hunyuan_v1_moe builds the model "
                   f"with {key}={built}; the checkpoint's own code would count differently")
    if isinstance(c["num_experts"], list):
        c.fail(f"num_experts={c['num_experts']!r}: transformers' hunyuan_v1_moe experts read "
               f"one number")
    experts = c.size("num_experts")
    chosen = _one_value(c, "moe_topk")
    if isinstance(chosen, bool) or not isinstance(chosen, int) or not 1 <= chosen <= experts:
        c.fail(f"moe_topk={c['moe_topk']!r} must be a whole number from 1 to "
               f"num_experts={experts}")
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head"},
                   moe={"n_experts": experts, "d_expert": width, "top_k": chosen,
                        "n_shared_experts": 1})


def _sub_config(c: HFConfig, key: str, defaults: dict[str, Any]) -> dict[str, Any]:
    """A nested config (DBRX's attn_config, ffn_config) over its class's defaults."""
    value = c[key] or {}
    if not isinstance(value, dict):
        c.fail(f"{key}={value!r} must be an object")
    return {**defaults, **value}


def _whole(c: HFConfig, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        c.fail(f"{key}={value!r} must be a whole number >= 1")
    return value


def _dbrx(c: HFConfig) -> dict[str, Any]:
    # modeling_dbrx.py: Wqkv d → d + 2·kv_n_heads·(d / n_heads) and out_proj, without biases;
    # LayerNorms without bias (norm_1, norm_2, norm_f); every FFN the MoE: a router without
    # bias, moe_num_experts GLU experts (w1, v1, w2) of ffn_hidden_size with ffn_act_fn,
    # moe_top_k of them per token. DbrxConfig refuses tied embeddings (validate_architecture).
    attn = _sub_config(c, "attn_config", {"kv_n_heads": 1})
    ffn = _sub_config(c, "ffn_config", {"ffn_hidden_size": 3584, "moe_num_experts": 4,
                                        "moe_top_k": 1, "ffn_act_fn": None})
    d, h = c.size("d_model"), c.size("n_heads")
    if d % h:  # Wqkv's queries are d wide, its keys and values heads of d // n_heads
        c.fail(f"n_heads={h} must divide d_model={d}: DBRX's queries are d_model wide and its "
               f"keys n_heads-th of it")
    if "rope_theta" not in attn:
        c.fail("attn_config has no rope_theta: transformers' DbrxAttention reads it, with no "
               "default")
    if attn.get("clip_qkv") is None:
        c.fail("attn_config.clip_qkv=None: transformers' DbrxAttention clamps Wqkv's output "
               "by it on every forward and fails without a bound")
    kv = _whole(c, "attn_config.kv_n_heads", attn["kv_n_heads"])
    if h % kv:
        c.fail(f"attn_config.kv_n_heads={kv} must divide n_heads={h}")
    if c.flag("tie_word_embeddings"):
        c.fail("tie_word_embeddings=true: DbrxConfig refuses it (validate_architecture)")
    act = (ffn["ffn_act_fn"] or {"name": "silu"})
    name = act.get("name", "silu") if isinstance(act, dict) else c.fail(
        f"ffn_config.ffn_act_fn={act!r} must be an object with a name")
    width = _whole(c, "ffn_config.ffn_hidden_size", ffn["ffn_hidden_size"])
    experts = _whole(c, "ffn_config.moe_num_experts", ffn["moe_num_experts"])
    chosen = _whole(c, "ffn_config.moe_top_k", ffn["moe_top_k"])
    if chosen > experts:
        c.fail(f"ffn_config.moe_top_k={chosen} must not exceed moe_num_experts={experts}")
    activation = HFConfig({"model_type": c.type, "ffn_act_fn.name": name},
                          c.where).activation("ffn_act_fn.name", gated=True)
    return {
        "vocab_size": c["vocab_size"], "d_model": d, "n_layers": c["n_layers"],
        "context_length": c["max_seq_len"],
        "attention": {"n_heads": h, "n_kv_heads": kv},
        "ffn": {"activation": activation, "d_ff": width, "bias": False},
        "moe": {"n_experts": experts, "d_expert": width, "top_k": chosen},
        "norm": {"kind": "layernorm", "bias": False, "placement": "pre"},
        "position": {"kind": "rope"}, "tie_embeddings": False,
    }


# The names of JetMoE's release (its own configuration_jetmoe.py, which the jetmoe/jetmoe-8b
# config.json uses) and the fields transformers' JetMoeConfig reads in their place; it ignores
# the old names, so where both are given they must agree.
_JETMOE_OLD_NAMES = {"ffn_hidden_size": "intermediate_size",
                     "moe_num_experts": "num_local_experts", "moe_top_k": "num_experts_per_tok"}


def _jetmoe(c: HFConfig) -> dict[str, Any]:
    # modeling_jetmoe.py: a mixture of attention heads (JetMoeMoA: num_local_experts experts,
    # each a W_Q of num_key_value_heads heads of kv_channels and a W_O; a router Linear without
    # bias; one bias of hidden_size on the merged output) beside one kv_proj d → 2·h_kv·d_h;
    # num_experts_per_tok experts per token, so num_attention_heads = h_kv × top-k
    # (JetMoeConfig.__post_init__). Every FFN is the MoE (JetMoeMoE): GLU experts of
    # intermediate_size, a router without bias, one bias on the merged output. RMSNorms, RoPE.
    for old, new in _JETMOE_OLD_NAMES.items():
        if old in c.values and c.values[old] != c[new]:
            c.fail(f"{old}={c.values[old]!r}: transformers' JetMoeConfig reads {new} "
                   f"({c[new]!r}) instead")
    for old in ("glu", "bias"):  # the release's switches; transformers builds both always
        if c.values.get(old, True) is not True:
            c.fail(f"{old}={c.values[old]!r}: transformers' JetMoe builds GLU experts and the "
                   f"output biases whatever this says")
    kv, experts = c.size("num_key_value_heads"), c.size("num_local_experts")
    chosen = top_k(c, "num_experts_per_tok", experts, "num_local_experts")
    stated = c.values.get("num_attention_heads")
    if stated is not None and stated != kv * chosen:
        c.fail(f"num_attention_heads={stated!r}: JetMoeConfig sets it to num_key_value_heads × "
               f"num_experts_per_tok = {kv * chosen}")
    return decoder(c, {"n_heads": kv * chosen, "n_kv_heads": kv,
                       "head_dim": c.size("kv_channels"), "experts": experts},
                   act_key="activation_function", attention={"out_bias": True},
                   moe={"n_experts": experts, "d_expert": c.size("intermediate_size"),
                        "top_k": chosen, "output_bias": True})


def _flint(c: HFConfig) -> dict[str, Any]:
    # modeling_flint.py: attention_bias on q, k, v, o, RMSNorm over each head's q and k, one
    # sink logit per head; configuration_flint.py: layer_types, else full on the first two
    # layers, every fourth from layer 1 and the last, sliding elsewhere. A layer is the MoE
    # unless in mlp_only_layers (default [0, 1]), and only every decoder_sparse_step-th one
    # when num_experts > 0 (Qwen3-MoE's rule): a router Linear(d, E) without bias, experts of
    # moe_intermediate_size and one shared MLP of shared_expert_intermediate_size added
    # ungated; the other layers a dense MLP of intermediate_size.
    layers = c.size("num_hidden_layers")
    kinds = layer_kinds(c, ["global" if i < 2 or i % 4 == 1 or i == layers - 1 else "local"
                            for i in range(layers)])
    only = [0, 1] if c["mlp_only_layers"] is None else c["mlp_only_layers"]
    if not isinstance(only, list):
        c.fail(f"mlp_only_layers={only!r} must be a list of layer indices")
    step, experts = c.size("decoder_sparse_step"), c.size("num_experts", minimum=0)
    sparse = [i not in only and experts > 0 and (i + 1) % step == 0 for i in range(layers)]
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias,
                                           "qk_norm": "head", "sinks": True},
                   moe={"n_experts": experts, "d_expert": c.size("moe_intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", experts, "num_experts"),
                        "n_shared_experts": 1,
                        "d_shared": c.size("shared_expert_intermediate_size")}
                   if any(sparse) else None)
    return merge(spec, per_layer(c, attention=kinds, ffn=ffn_kinds(sparse)))


READERS: dict[str, Callable[[HFConfig], dict[str, Any]]] = {
    "olmoe": _olmoe, "glm4_moe": _glm4_moe, "granitemoe": _granitemoe, "phimoe": _phimoe,
    "ernie4_5_moe": _ernie4_5_moe, "dots1": _dots1, "hunyuan_v1_moe": _hunyuan_v1_moe,
    "dbrx": _dbrx, "jetmoe": _jetmoe, "flint": _flint,
}
