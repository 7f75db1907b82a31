"""Readers for the attention decoders the uniform spec could not hold: Gemma 3, gpt-oss,
Llama 4, OLMo 3, SmolLM3, Command R7B/A (cohere2), EXAONE 4, VaultGemma and BitNet (the
multimodal Gemma 3 and Llama 4 configs are their language models: calc.hf.multimodal).

Each repeats what transformers/models/<type>/modeling_<type>.py (calc.hf.defaults'
TRANSFORMERS_VERSION) builds per layer; calc.hf.layout writes the per-layer lists compactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calc.hf.fields import HFConfig, decoder, divides, heads, top_k
from calc.hf.layout import ffn_kinds, kinds_of, merge, per_layer


# ---- Gemma 3 --------------------------------------------------------------------------------
def _gemma3_text(c: HFConfig) -> dict[str, Any]:
    # modeling_gemma3.py: Gemma 2's four norms a layer and q_norm/k_norm (Gemma3RMSNorm over
    # head_dim, with weights); configuration_gemma3.py: layer_types, else every
    # sliding_window_pattern-th layer global (default 6). The MLP has no bias; attention_bias
    # is on q, k, v and o. use_bidirectional_attention (EmbeddingGemma) is not a causal LM.
    divides(c)
    if c.flag("use_bidirectional_attention"):
        c.fail("use_bidirectional_attention=true is an encoder (EmbeddingGemma); calc counts "
               "causal language models")
    pattern = c.size("sliding_window_pattern") if "sliding_window_pattern" in c.values else 6
    if c.given("layer_types"):
        _, kinds = kinds_of(c)
    else:
        kinds = ["local" if (i + 1) % pattern else "global"
                 for i in range(c.size("num_hidden_layers"))]
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), act_key="hidden_activation",
                   attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head"},
                   norm={"kind": "rmsnorm", "placement": "sandwich"})
    return merge(spec, per_layer(c, attention=kinds))


# ---- gpt-oss --------------------------------------------------------------------------------
def _gpt_oss(c: HFConfig) -> dict[str, Any]:
    # modeling_gpt_oss.py: attention_bias on q, k, v, o and one sink logit per head; layers
    # alternate sliding (window 128) and full (layer_types); every FFN is the MoE: a router
    # Linear(d, E) with bias, experts with biases on gate_up and down, top-k.
    if c.given("layer_types"):
        _, kinds = kinds_of(c)
    else:
        kinds = ["local" if (i + 1) % 2 else "global" for i in range(c.size("num_hidden_layers"))]
    bias = c.flag("attention_bias")
    experts = c.size("num_local_experts")
    spec = decoder(c, heads(c), ffn_bias=True,
                   attention={"qkv_bias": bias, "out_bias": bias, "sinks": True},
                   moe={"n_experts": experts, "d_expert": c.size("intermediate_size"),
                        "top_k": top_k(c, "num_experts_per_tok", experts, "num_local_experts"),
                        "router_bias": True})
    return merge(spec, per_layer(c, attention=kinds))


# ---- Llama 4 --------------------------------------------------------------------------------
def _flags(c: HFConfig, key: str, layers: int) -> list[int]:
    values = c[key]
    if not isinstance(values, list) or len(values) != layers:
        c.fail(f"{key} must list one value per layer ({layers}), got {values!r}")
    return values


def _llama4_text(c: HFConfig) -> dict[str, Any]:
    # configuration_llama4.py: no_rope_layers[i] = 1 keeps RoPE (default: every
    # no_rope_layer_interval-th layer has none); layer_types default "chunked_attention" on the
    # RoPE layers when attention_chunk_size is set; moe_layers default every
    # interleave_moe_layer_step-th layer. modeling_llama4.py: MoE layers hold the routed experts
    # (intermediate_size), one shared expert of the same width and a router without bias;
    # the other layers a dense MLP of intermediate_size_mlp; q/k go through an L2 norm without
    # weights on the RoPE layers (use_qk_norm); attention_bias on q, k, v, o.
    layers = c.size("num_hidden_layers")
    interval = c.size("no_rope_layer_interval")
    rope = (_flags(c, "no_rope_layers", layers) if c["no_rope_layers"]
            else [int((i + 1) % interval != 0) for i in range(layers)])
    if c.given("layer_types"):
        _, kinds = kinds_of(c)
    else:
        chunked = c.given("attention_chunk_size")
        kinds = ["chunked" if r and chunked else "global" for r in rope]
    kinds = [k if r or k != "global" else "nope" for k, r in zip(kinds, rope, strict=True)]
    step = c.size("interleave_moe_layer_step")
    moe_at = (c["moe_layers"] if c["moe_layers"] is not None
              else list(range(step - 1, layers, step)))
    experts = c.size("num_local_experts")
    bias = c.flag("attention_bias")
    sparse = [i in moe_at for i in range(layers)]
    spec = decoder(c, heads(c), attention={
        "qkv_bias": bias, "out_bias": bias,
        "qk_norm": "head" if c.flag("use_qk_norm") else "none", "qk_norm_weights": False},
        moe={"n_experts": experts, "d_expert": c.size("intermediate_size"),
             "top_k": top_k(c, "num_experts_per_tok", experts, "num_local_experts"),
             "n_shared_experts": 1} if any(sparse) else None)
    spec["ffn"]["d_ff"] = c.size("intermediate_size_mlp")
    return merge(spec, per_layer(c, attention=kinds, ffn=ffn_kinds(sparse)))


# ---- the 2025 decoders with sliding and NoPE layers -----------------------------------------
def _kinds_or(c: HFConfig, default: Callable[[int], str]) -> list[str]:
    """Attention kinds: the config's layer_types, else the config class's rule for layer i."""
    if c.given("layer_types"):
        return kinds_of(c)[1]
    return [default(i) for i in range(c.size("num_hidden_layers"))]


def _one_head_width(c: HFConfig, why: str) -> dict[str, Any]:
    """heads(c) for a type whose `why` is hidden_size wide, so its heads must tile it."""
    h = heads(c)
    if h["head_dim"] is not None and h["head_dim"] * h["n_heads"] != c.size("hidden_size"):
        c.fail(f"head_dim={h['head_dim']}: {why} spans hidden_size={c['hidden_size']}, not "
               f"num_attention_heads × head_dim")
    return h


def _olmo3(c: HFConfig) -> dict[str, Any]:
    # modeling_olmo3.py: OLMo 2's norms after each sublayer and q_norm/k_norm over the whole
    # projections; configuration_olmo3.py: every 4th layer full attention, the others sliding.
    kinds = _kinds_or(c, lambda i: "local" if (i + 1) % 4 else "global")
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias,
                                           "qk_norm": "projection"},
                   norm={"kind": "rmsnorm", "placement": "reordered"})
    return merge(spec, per_layer(c, attention=kinds))


def _smollm3(c: HFConfig) -> dict[str, Any]:
    # configuration_smollm3.py: no_rope_layers[i] = 0 drops RoPE (default every
    # no_rope_layer_interval-th layer); modeling_smollm3.py: a layer slides only with
    # use_sliding_window and layer_types "sliding_attention"; attention_bias on q, k, v, o,
    # mlp_bias on the MLP.
    layers = c.size("num_hidden_layers")
    interval = c.size("no_rope_layer_interval")
    rope = (_flags(c, "no_rope_layers", layers) if c["no_rope_layers"]
            else [int((i + 1) % interval != 0) for i in range(layers)])
    slides = c.flag("use_sliding_window") and c.given("sliding_window")
    if c.given("layer_types"):
        kinds = [k if slides or k != "local" else "global" for k in kinds_of(c)[1]]
    else:
        kinds = ["local" if slides and not r else "global" for r in rope]
    kinds = [k if r or k != "global" else "nope" for k, r in zip(kinds, rope, strict=True)]
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), ffn_bias=c.flag("mlp_bias"),
                   attention={"qkv_bias": bias, "out_bias": bias})
    return merge(spec, per_layer(c, attention=kinds))


def _cohere2(c: HFConfig) -> dict[str, Any]:
    # modeling_cohere2.py: one LayerNorm (weight, no bias) feeds attention and MLP in parallel;
    # the sliding layers have RoPE, the full ones none; configuration_cohere2.py: layer_types,
    # else every sliding_window_pattern-th layer (default 4) full; head_dim is
    # hidden_size / heads whatever the file says.
    pattern = c.size("sliding_window_pattern") if "sliding_window_pattern" in c.values else 4
    kinds = _kinds_or(c, lambda i: "local" if (i + 1) % pattern else "global")
    kinds = ["nope" if k == "global" else k for k in kinds]
    h = heads(c, head_dim_key=None)
    bias = c.flag("attention_bias")
    spec = decoder(c, h, attention={"qkv_bias": bias, "out_bias": bias},
                   norm={"kind": "layernorm", "bias": False, "placement": "pre"},
                   parallel_block=True, parallel_norms=1)
    return merge(spec, per_layer(c, attention=kinds))


def _exaone4(c: HFConfig) -> dict[str, Any]:
    # modeling_exaone4.py: q_norm/k_norm per head, norms after each sublayer (post_attention,
    # post_feedforward), no biases; configuration_exaone4.py: layer_types, else every
    # sliding_window_pattern-th layer full (none slides without a sliding_window).
    if not c.given("sliding_window") and not c.given("layer_types"):
        kinds = ["global"] * c.size("num_hidden_layers")
    else:
        pattern = c.size("sliding_window_pattern")
        kinds = _kinds_or(c, lambda i: "local" if (i + 1) % pattern else "global")
    spec = decoder(c, heads(c), attention={"qk_norm": "head"},
                   norm={"kind": "rmsnorm", "placement": "reordered"})
    return merge(spec, per_layer(c, attention=kinds))


def _vaultgemma(c: HFConfig) -> dict[str, Any]:
    # modeling_vaultgemma.py: Gemma 2 without its post-sublayer norms (input_layernorm and
    # pre_feedforward_layernorm only), no QK-norm; layers alternate sliding and full
    # (configuration_vaultgemma.py); attention_bias on q, k, v, o.
    kinds = _kinds_or(c, lambda i: "local" if (i + 1) % 2 else "global")
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), act_key="hidden_activation",
                   attention={"qkv_bias": bias, "out_bias": bias})
    return merge(spec, per_layer(c, attention=kinds))


def _bitnet(c: HFConfig) -> dict[str, Any]:
    # modeling_bitnet.py: Llama's layout plus attn_sub_norm (hidden_size, before o_proj) and
    # ffn_sub_norm (intermediate_size, before down_proj); hidden_act relu2 gates the MLP;
    # attention_bias on q, k, v, o. quantization_config (ternary BitLinear) changes no count.
    bias = c.flag("attention_bias")
    return decoder(c, _one_head_width(c, "attn_sub_norm"),
                   attention={"qkv_bias": bias, "out_bias": bias},
                   norm={"kind": "rmsnorm", "placement": "pre", "sub_norms": True})


READERS: dict[str, Callable[[HFConfig], dict[str, Any]]] = {
    "olmo3": _olmo3, "smollm3": _smollm3, "cohere2": _cohere2, "exaone4": _exaone4,
    "vaultgemma": _vaultgemma, "bitnet": _bitnet,
    "gemma3_text": _gemma3_text,
    "gpt_oss": _gpt_oss,
    "llama4_text": _llama4_text,
}
