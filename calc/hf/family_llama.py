"""Llama-shaped model types: RMSNorm before each sublayer, RoPE, GQA, one FFN per layer.

Each reader repeats what transformers' modeling_<type>.py builds from the config
(calc.hf.defaults.TRANSFORMERS_VERSION); each writer maps a spec onto that type's config for
calc.hf.export. Scalars that multiply activations (Granite's embedding/residual/attention
multipliers and logits_scaling, MiniCPM3's scale_emb and scale_depth) are neither parameters
nor matrix products, so they change no count. Types whose specs an earlier writer already
expresses exactly list that writer in COVERED_BY instead of having their own.
"""

from __future__ import annotations

from typing import Any

from calc.hf.defaults import DEFAULTS
from calc.hf.fields import (
    HFConfig,
    decoder,
    divides,
    heads,
    layer_kinds,
    layer_pattern,
    layernorm_decoder,
)
from calc.hf.layout import merge, per_layer
from calc.hf.writing import base, layer_types, llama_like, need, plain
from calc.spec import ModelSpec


def no_null_head_dim(c: HFConfig) -> None:
    """These attentions read config.head_dim through getattr with a fallback that a null in the
    file (or a class default of None) bypasses: transformers then fails on None."""
    if ("head_dim" in c.values or "head_dim" in DEFAULTS[c.type]) and c["head_dim"] is None:
        c.fail(f"head_dim=None: transformers' {c.type} attention reads config.head_dim with no "
               f"fallback for None; give the head width")


def _biased(c: HFConfig, qkv: bool, out: bool, mlp: bool, **spec: Any) -> dict[str, Any]:
    attention = {"qkv_bias": qkv, "out_bias": out, **spec.pop("attention", {})}
    return decoder(c, heads(c), ffn_bias=mlp, attention=attention, **spec)


# ---- readers ----------------------------------------------------------------------------------
def _granite(c: HFConfig) -> dict[str, Any]:
    # modeling_granite.py: LlamaAttention and LlamaMLP (attention_bias on q, k, v, o; mlp_bias);
    # head_dim from the file if it has one (getattr), else hidden_size / heads.
    no_null_head_dim(c)
    bias = c.flag("attention_bias")
    return _biased(c, bias, bias, c.flag("mlp_bias"))


def _llama_impl(c: HFConfig) -> dict[str, Any]:
    # internlm3, exaone: configuration_<type>.py builds LlamaForCausalLM; validate_architecture
    # wants hidden_size a multiple of the heads (InternLM3 also qkv_bias == bias).
    divides(c)
    bias = c.flag("attention_bias")
    if c.type == "internlm3" and bias != c.flag("mlp_bias"):
        c.fail(f"qkv_bias={bias} with bias={c['mlp_bias']}: transformers' InternLM3 "
               f"(Llama) has one bias setting for q, k, v, o and the MLP")
    return _biased(c, bias, bias, c.flag("mlp_bias"))


def _helium(c: HFConfig) -> dict[str, Any]:
    # modeling_helium.py: attention_bias on q, k, v; o_proj is Linear(hidden, hidden) without
    # bias, so heads × head_dim must be hidden_size; mlp_bias on the MLP.
    no_null_head_dim(c)
    h, width = c.size("num_attention_heads"), c.size("head_dim")
    if h * width != c.size("hidden_size"):
        c.fail(f"num_attention_heads={h} × head_dim={width} must equal hidden_size="
               f"{c['hidden_size']} (Helium's o_proj maps hidden_size to hidden_size)")
    return _biased(c, c.flag("attention_bias"), False, c.flag("mlp_bias"))


def _seed_oss(c: HFConfig) -> dict[str, Any]:
    # modeling_seed_oss.py: attention_bias on q, k, v, attention_out_bias on o, mlp_bias.
    return _biased(c, c.flag("attention_bias"), c.flag("attention_out_bias"),
                   c.flag("mlp_bias"))


def _ernie4_5(c: HFConfig) -> dict[str, Any]:
    # modeling_ernie4_5.py: use_bias on q, k, v, o and the MLP.
    bias = c.flag("use_bias")
    return _biased(c, bias, bias, bias)


def _hunyuan_v1_dense(c: HFConfig) -> dict[str, Any]:
    # modeling_hunyuan_v1_dense.py: LlamaAttention (attention_bias on q, k, v, o) with RMSNorm
    # over each head's queries and keys (query_layernorm, key_layernorm); MLP without bias.
    # use_cla (K/V shared across layers) and use_qk_norm are the checkpoint's own code's
    # switches; transformers reads neither, so a file asking for another model is refused.
    no_null_head_dim(c)
    if c.values.get("use_cla", False) is not False:
        c.fail(f"use_cla={c.values['use_cla']!r}: transformers' hunyuan_v1_dense does not "
               f"share K/V across layers; the checkpoint's own code would count differently")
    if c.values.get("use_qk_norm", True) is not True:
        c.fail(f"use_qk_norm={c.values['use_qk_norm']!r}: transformers' hunyuan_v1_dense "
               f"always builds the q/k norms; the checkpoint's own code would not")
    bias = c.flag("attention_bias")
    return _biased(c, bias, bias, False, attention={"qk_norm": "head"})


def _ministral(c: HFConfig) -> dict[str, Any]:
    # modeling_ministral.py: no biases; configuration_ministral.py: layer_types, else every
    # layer slides. MinistralModel builds the sliding-window mask on every forward, which
    # fails without a sliding_window even when no layer slides.
    no_null_head_dim(c)
    if not c.given("sliding_window"):
        c.fail("sliding_window=None: transformers' Ministral builds a sliding-window mask on "
               "every forward and fails without one")
    default = ["local"] * c.size("num_hidden_layers")
    return _biased(c, False, False, False,
                   attention=layer_pattern(c, layer_kinds(c, default)))


def _glm(c: HFConfig) -> dict[str, Any]:
    # modeling_glm.py: attention_bias on q, k, v only (o_proj has none); Phi-3's fused gate_up
    # MLP without bias. glm4 adds post_self_attn_layernorm and post_mlp_layernorm: a norm
    # before and after each sublayer.
    no_null_head_dim(c)
    spec = _biased(c, c.flag("attention_bias"), False, False)
    if c.type == "glm4":
        spec["norm"] = {"kind": "rmsnorm", "placement": "sandwich"}
    return spec


def _arcee(c: HFConfig) -> dict[str, Any]:
    # modeling_arcee.py: LlamaAttention (attention_bias on q, k, v, o) and a plain MLP
    # up_proj → act → down_proj with mlp_bias; validate_architecture as Llama's.
    divides(c)
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), c.flag("attention_bias"),
                             norm={"kind": "rmsnorm", "placement": "pre"},
                             position={"kind": "rope"})
    spec["ffn"]["bias"] = c.flag("mlp_bias")
    return spec


def _minicpm3(c: HFConfig) -> dict[str, Any]:
    # modeling_minicpm3.py: DeepSeek-V2's multi-head latent attention (attention_bias on q_a,
    # kv_a and o) with a dense LlamaMLP (mlp_bias) on every layer; v_head_dim defaults to
    # hidden_size / heads (configuration_minicpm3.py); tied by default.
    divides(c)
    bias = c.flag("attention_bias")
    h = c.size("num_attention_heads")
    if c.given("num_key_value_heads") and c["num_key_value_heads"] != h:
        c.fail(f"num_key_value_heads={c['num_key_value_heads']} must equal num_attention_heads="
               f"{h}: the latent attention gives every head its keys, and transformers' "
               f"MiniCPM3 would repeat them num_attention_heads / num_key_value_heads times")
    v_head_dim = c.size("v_head_dim") if c.given("v_head_dim") else c.size("hidden_size") // h
    return decoder(c, {"n_heads": h}, ffn_bias=c.flag("mlp_bias"), attention={
        "qkv_bias": bias, "out_bias": bias, "mla": {
            "q_lora_rank": c.size("q_lora_rank") if c.given("q_lora_rank") else None,
            "kv_lora_rank": c.size("kv_lora_rank"), "v_head_dim": v_head_dim,
            "qk_nope_head_dim": c.size("qk_nope_head_dim", minimum=0),
            "qk_rope_head_dim": c.size("qk_rope_head_dim", minimum=0)}})


# Fields of Apertus' release that transformers' ApertusConfig does not read: its model always has
# per-head q/k norms, pre-norms and an MLP without bias. A file asking otherwise is refused.
_APERTUS_FIXED = {"qk_norm": True, "post_norm": False, "mlp_bias": False}


def _apertus(c: HFConfig) -> dict[str, Any]:
    # modeling_apertus.py: LlamaAttention (attention_bias on q, k, v, o) with RMSNorm over each
    # head's queries and keys (q_norm, k_norm of head_dim); a plain MLP up_proj → act →
    # down_proj without bias; hidden_act xielu is XIELUActivation, whose alpha_p and alpha_n
    # are parameters of shape (1,) in every MLP (activations.py).
    no_null_head_dim(c)
    for key, value in _APERTUS_FIXED.items():
        if c.values.get(key, value) != value:
            c.fail(f"{key}={c.values[key]!r}: transformers' apertus always builds "
                   f"{key}={value!r}; the checkpoint's own code would count differently")
    act = "xielu" if c["hidden_act"] == "xielu" else c.activation("hidden_act", gated=False)
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"), act,
                             c.flag("attention_bias"),
                             norm={"kind": "rmsnorm", "placement": "pre"},
                             position={"kind": "rope"})
    spec["ffn"]["bias"] = False
    spec["attention"]["qk_norm"] = "head"
    return spec


def _granite_swa(c: HFConfig) -> dict[str, Any]:
    # modeling_granite_swa.py: Granite (attention_bias on q, k, v, o; mlp_bias) with one sink
    # logit per head in every layer (sinks, num_attention_heads values); configuration_
    # granite_swa.py: layer_types, else every fourth layer (i % 4 == 0) full and the rest
    # sliding; layer_rope_theta[i] = 0 drops RoPE on layer i. A full layer without RoPE is
    # nope; a sliding one stays local, as SmolLM3's (RoPE has no parameter and no matrix
    # product, so the counts are the same).
    no_null_head_dim(c)
    layers = c.size("num_hidden_layers")
    kinds = layer_kinds(c, ["global" if i % 4 == 0 else "local" for i in range(layers)])
    if c.given("layer_rope_theta"):
        thetas = c["layer_rope_theta"]
        if not isinstance(thetas, list) or len(thetas) != layers:
            c.fail(f"layer_rope_theta must list one value per layer ({layers}), got {thetas!r}")
        kinds = [k if theta or k != "global" else "nope"
                 for k, theta in zip(kinds, thetas, strict=True)]
    bias = c.flag("attention_bias")
    spec = _biased(c, bias, bias, c.flag("mlp_bias"), attention={"sinks": True})
    return merge(spec, per_layer(c, attention=kinds))


def _nanochat(c: HFConfig) -> dict[str, Any]:
    # modeling_nanochat.py: NanoChatRMSNorm has no weight (x·rsqrt(mean(x²)+ε)); one norm
    # module serves right after the embedding and before the head, one before each sublayer,
    # and one over each head's queries and keys after RoPE (q_norm, k_norm). attention_bias on
    # q, k, v, o; a plain MLP fc1 → act → fc2 without bias. final_logit_softcapping scales
    # logits elementwise: no parameter, no matrix product.
    no_null_head_dim(c)
    spec = layernorm_decoder(c, heads(c), c.size("intermediate_size"),
                             c.activation("hidden_act", gated=False), c.flag("attention_bias"),
                             norm={"kind": "rmsnorm", "placement": "pre", "weights": False,
                                   "embedding": True},
                             position={"kind": "rope"})
    spec["ffn"]["bias"] = False
    spec["attention"].update(qk_norm="head", qk_norm_weights=False)
    return spec


READERS = {
    "granite": _granite, "internlm3": _llama_impl, "exaone": _llama_impl, "helium": _helium,
    "seed_oss": _seed_oss, "ernie4_5": _ernie4_5, "hunyuan_v1_dense": _hunyuan_v1_dense,
    "ministral": _ministral, "glm": _glm, "glm4": _glm, "arcee": _arcee,
    "minicpm3": _minicpm3, "apertus": _apertus, "nanochat": _nanochat,
    "granite_swa": _granite_swa,
}


# ---- writers ----------------------------------------------------------------------------------
def _seed_oss_writer(spec: ModelSpec) -> dict[str, Any]:
    # The one Llama-shaped type with a separate bias switch for q/k/v, o and the MLP.
    att = spec.attention
    return {**llama_like(spec, "seed_oss"), "attention_bias": att.qkv_bias,
            "attention_out_bias": att.out_bias, "mlp_bias": spec.ffn.bias}


def _ministral_writer(spec: ModelSpec) -> dict[str, Any]:
    # Any pattern of sliding and global layers without biases (a window even when none slides).
    kinds = layer_types(spec) or {"sliding_window": spec.context_length,
                                  "layer_types": ["full_attention"] * spec.n_layers}
    return {**llama_like(spec, "ministral"), **kinds}


def _glm4_writer(spec: ModelSpec) -> dict[str, Any]:
    return {**llama_like(spec, "glm4"), "attention_bias": spec.attention.qkv_bias}


def _divisible(spec: ModelSpec, arch: str) -> None:
    need(spec.d_model % spec.attention.n_heads == 0,
         f"attention.n_heads={spec.attention.n_heads} with d_model={spec.d_model} ({arch} "
         f"needs hidden_size divisible by the heads)")


def _arcee_writer(spec: ModelSpec) -> dict[str, Any]:
    _divisible(spec, "arcee")
    return {**base(spec, "arcee"), "num_key_value_heads": spec.n_kv_heads,
            "head_dim": spec.head_dim_qk, "intermediate_size": spec.ffn.d_ff,
            "hidden_act": plain(spec, "arcee"), "max_position_embeddings": spec.context_length,
            "attention_bias": spec.attention.qkv_bias, "mlp_bias": spec.ffn.bias}


def _minicpm3_writer(spec: ModelSpec) -> dict[str, Any]:
    # Multi-head latent attention with dense FFNs only (DeepSeek's writers need experts).
    mla = spec.attention.mla
    need(mla is not None, "attention.mla=None (minicpm3 uses multi-head latent attention)")
    _divisible(spec, "minicpm3")
    config = llama_like(spec, "minicpm3")  # num_key_value_heads: every head (MLA)
    del config["head_dim"]
    return {**config, "attention_bias": spec.attention.qkv_bias, "mlp_bias": spec.ffn.bias,
            **mla.model_dump()}


def _apertus_writer(spec: ModelSpec) -> dict[str, Any]:
    # Per-head q/k norms, a plain MLP without bias, xIELU or a fixed activation.
    need(spec.attention.qk_norm == "head", f"attention.qk_norm={spec.attention.qk_norm!r} "
         f"(apertus normalises each head's queries and keys)")
    ffn = spec.ffn
    act = "xielu" if ffn is not None and ffn.activation == "xielu" else plain(spec, "apertus")
    return {**base(spec, "apertus"), "num_key_value_heads": spec.n_kv_heads,
            "head_dim": spec.head_dim_qk, "intermediate_size": spec.ffn.d_ff,
            "hidden_act": act, "max_position_embeddings": spec.context_length,
            "attention_bias": spec.attention.qkv_bias}


def _nanochat_writer(spec: ModelSpec) -> dict[str, Any]:
    # The one type whose RMSNorms (a norm after the embedding, weightless q/k norms) have no γ.
    att = spec.attention
    need(att.qk_norm == "head" and not att.qk_norm_weights,
         f"attention.qk_norm={att.qk_norm!r} (nanochat normalises each head's queries and keys "
         f"without weights)")
    need(att.qkv_bias == att.out_bias, f"attention.out_bias={att.out_bias} with "
         f"attention.qkv_bias={att.qkv_bias} (nanochat has one attention_bias)")
    return {**base(spec, "nanochat"), "num_key_value_heads": spec.n_kv_heads,
            "head_dim": spec.head_dim_qk, "intermediate_size": spec.ffn.d_ff,
            "hidden_act": plain(spec, "nanochat"),
            "max_position_embeddings": spec.context_length, "attention_bias": att.qkv_bias}


def _granite_swa_writer(spec: ModelSpec) -> dict[str, Any]:
    # The one dense type with attention sinks: any pattern of full, sliding and NoPE layers.
    att = spec.attention
    need(att.sinks, "attention.sinks=False (granite_swa has a sink logit per head)")
    need(att.qkv_bias == att.out_bias, f"attention.out_bias={att.out_bias} with "
         f"attention.qkv_bias={att.qkv_bias} (granite_swa has one attention_bias)")
    kinds = spec.attention_kinds
    need(set(kinds) <= {"global", "local", "nope"}, f"attention kinds {sorted(set(kinds))} "
         f"(granite_swa builds full, sliding and NoPE attention layers)")
    return {**llama_like(spec, "granite_swa"), "attention_bias": att.qkv_bias,
            "mlp_bias": spec.ffn.bias, "sliding_window": att.sliding_window or 128,
            "layer_types": ["sliding_attention" if k == "local" else "full_attention"
                            for k in kinds],
            "layer_rope_theta": [0.0 if k == "nope" else 10000.0 for k in kinds]}


WRITERS = {"seed_oss": _seed_oss_writer, "ministral": _ministral_writer, "glm4": _glm4_writer,
           "arcee": _arcee_writer, "minicpm3": _minicpm3_writer, "apertus": _apertus_writer,
           "nanochat": _nanochat_writer, "granite_swa": _granite_swa_writer}
# Every spec these types can hold, the named writer (calc.hf.export) writes exactly.
COVERED_BY = {"internlm3": "llama", "exaone": "llama", "hunyuan_v1_dense": "qwen3",
              "granite": "seed_oss", "ernie4_5": "seed_oss", "helium": "seed_oss",
              "glm": "seed_oss"}
_RMS_ROPE = {"norm.kind": "rmsnorm", "position.kind": ("rope",), "moe": False}
TRAITS = {
    "seed_oss": {**_RMS_ROPE, "gated": True, "mla": False},
    "ministral": {**_RMS_ROPE, "gated": True, "mla": False},
    "glm4": {**_RMS_ROPE, "gated": True, "mla": False},
    "arcee": {**_RMS_ROPE, "gated": False, "mla": False},
    "apertus": {**_RMS_ROPE, "gated": False, "mla": False},
    "nanochat": {**_RMS_ROPE, "gated": False, "mla": False},
    "granite_swa": {**_RMS_ROPE, "gated": True, "mla": False},
    "minicpm3": {**_RMS_ROPE, "gated": True, "mla": True},
}
