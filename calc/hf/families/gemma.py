"""Gemma (Google): gemma, gemma2, Gemma 3's language model gemma3_text (the multimodal gemma3
config is read through it: calc.hf.multimodal), vaultgemma, and Gemma 4's unified language model
gemma4_unified_text (through it the multimodal gemma4_unified), and gemma4_text (through it
gemma4) where it has neither per-layer embeddings nor an MoE block.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import (
    HFConfig,
    decoder,
    divides,
    heads,
    layer_kinds,
    layer_pattern,
    top_k,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import kinds_of, kinds_or, merge, per_layer
from calc.hf.writing import full_or_sliding, llama_like, need, sliding_fields
from calc.spec import ModelSpec


# ---- gemma ------------------------------------------------------------------------------------
def _read_gemma(c: HFConfig) -> dict[str, Any]:
    # modeling_gemma.py: head_dim 256 by default; tied; RMSNorm (1 + γ) has d weights too.
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias})


# No writer: Gemma is Llama-shaped, and llama's writer holds every spec it reads.
GEMMA = ModelType(
    "gemma", _read_gemma,
    defaults={
        "vocab_size": 256000, "hidden_size": 3072, "intermediate_size": 24576,
        "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16,
        "head_dim": 256, "hidden_act": "gelu_pytorch_tanh", "max_position_embeddings": 8192,
        "tie_word_embeddings": True, "attention_bias": False,
    })


# ---- gemma2 -----------------------------------------------------------------------------------
def _read_gemma2(c: HFConfig) -> dict[str, Any]:
    # modeling_gemma2.py: four norms a layer (input, post_attention, pre_ and
    # post_feedforward); configuration_gemma2.py: even-indexed layers slide, odd ones are global.
    divides(c)
    bias = c.flag("attention_bias")
    default = ["local" if (i + 1) % 2 else "global" for i in range(c.size("num_hidden_layers"))]
    kinds = layer_kinds(c, default)
    return decoder(c, heads(c), act_key="hidden_activation",
                   attention={"qkv_bias": bias, "out_bias": bias, **layer_pattern(c, kinds)},
                   norm={"kind": "rmsnorm", "placement": "sandwich"})


def _write_gemma2(spec: ModelSpec) -> dict[str, Any]:
    config = {**llama_like(spec, "gemma2"), **sliding_fields(spec),
              "attention_bias": spec.attention.qkv_bias}
    config["hidden_activation"] = config.pop("hidden_act")
    config.setdefault("layer_types", ["full_attention"] * spec.n_layers)
    return config


GEMMA2 = ModelType(
    "gemma2", _read_gemma2, write=_write_gemma2, traits=Traits(),
    defaults={
        "vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216,
        "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 8192, "tie_word_embeddings": True, "attention_bias": False,
        "sliding_window": 4096, "layer_types": None,
    })


# ---- gemma3_text ------------------------------------------------------------------------------
def _read_gemma3_text(c: HFConfig) -> dict[str, Any]:
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


def _write_full_or_sliding(spec: ModelSpec, model_type: str) -> dict[str, Any]:
    """Gemma 2's fields with layer_types of full and sliding layers (gemma3_text, vaultgemma)."""
    config = {**llama_like(spec, model_type), **full_or_sliding(spec, model_type),
              "attention_bias": spec.attention.qkv_bias}
    config["hidden_activation"] = config.pop("hidden_act")
    return config


GEMMA3_TEXT = ModelType(
    "gemma3_text", _read_gemma3_text, traits=Traits(),
    write=lambda spec: _write_full_or_sliding(spec, "gemma3_text"),
    defaults={
        "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
        "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 131072, "tie_word_embeddings": True, "attention_bias": False,
        "sliding_window": 4096, "layer_types": None, "use_bidirectional_attention": False,
    })


# ---- vaultgemma -------------------------------------------------------------------------------
def _read_vaultgemma(c: HFConfig) -> dict[str, Any]:
    # modeling_vaultgemma.py: Gemma 2 without its post-sublayer norms (input_layernorm and
    # pre_feedforward_layernorm only), no QK-norm; layers alternate sliding and full
    # (configuration_vaultgemma.py); attention_bias on q, k, v, o.
    kinds = kinds_or(c, lambda i: "local" if (i + 1) % 2 else "global")
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), act_key="hidden_activation",
                   attention={"qkv_bias": bias, "out_bias": bias})
    return merge(spec, per_layer(c, attention=kinds))


VAULTGEMMA = ModelType(
    "vaultgemma", _read_vaultgemma, traits=Traits(),
    write=lambda spec: _write_full_or_sliding(spec, "vaultgemma"),
    defaults={
        "vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216,
        "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 8192, "tie_word_embeddings": True, "attention_bias": False,
        "sliding_window": 4096, "layer_types": None,
    })


# ---- gemma4_unified_text ----------------------------------------------------------------------
def _global_shape(c: HFConfig, kinds: list[str], k_eq_v: bool) -> dict[str, Any]:
    """The full layers' head shape: per_layer_config where the file has one (a saved config;
    configuration_utils.py applies it per layer), else what Gemma4UnifiedTextConfig's
    __post_init__ builds from global_head_dim and, when attention_k_eq_v,
    num_global_key_value_heads."""
    given = c["per_layer_config"]
    if given is None:
        # kwargs.pop("global_head_dim", 512) in __post_init__
        width = c.size("global_head_dim") if c.given("global_head_dim") else 512
        shape: dict[str, Any] = {"head_dim": width, "k_eq_v": k_eq_v}
        if k_eq_v and c.given("num_global_key_value_heads"):
            shape["n_kv_heads"] = c.size("num_global_key_value_heads")
        return shape
    if not isinstance(given, dict):
        c.fail(f"per_layer_config={given!r} must map layer indices to their fields")
    model = {"head_dim": c.size("head_dim"), "num_key_value_heads": c.size("num_key_value_heads")}
    shapes = {}
    for index, kind in enumerate(kinds):
        own = given.get(str(index), given.get(index)) or {}
        if set(own) - set(model):
            c.fail(f"per_layer_config.{index} sets {sorted(set(own) - set(model))}; calc reads "
                   f"a layer's head_dim and num_key_value_heads only")
        if own and kind != "global":
            c.fail(f"per_layer_config.{index} gives sliding layer {index} a shape of its own; "
                   f"calc holds one shape for the full layers (attention.kind_shapes.global)")
        shapes[index] = {**model, **own}
    full = {tuple(sorted(shapes[i].items())) for i, kind in enumerate(kinds) if kind == "global"}
    if len(full) > 1:
        c.fail("per_layer_config gives the full layers different shapes; calc holds one "
               "(attention.kind_shapes.global)")
    shape = dict(full.pop())
    return {"head_dim": shape["head_dim"], "n_kv_heads": shape["num_key_value_heads"],
            "k_eq_v": k_eq_v}


def _read_gemma4_unified_text(c: HFConfig) -> dict[str, Any]:
    # modeling_gemma4_unified.py (transformers 5.24.0): Gemma 3's layer (four RMSNorms with
    # weights, q_norm/k_norm per head; v_norm has no weight) with the full layers' head_dim and
    # KV heads from per_layer_config (global_head_dim; num_global_key_value_heads when
    # attention_k_eq_v); attention_k_eq_v drops v_proj on the full layers (the keys are the
    # values); the last num_kv_shared_layers layers build no k_proj, v_proj or k_norm and read
    # the keys and values of the last earlier layer of their type, and use_double_wide_mlp
    # doubles intermediate_size there (Gemma4UnifiedTextMLP). configuration_gemma4_unified.py:
    # layer_types, else every 6th layer full; the last layer is always full. layer_scalar and
    # the embedding scale are buffers. use_bidirectional_attention "vision" leaves text causal.
    if c["use_bidirectional_attention"] == "all":
        c.fail("use_bidirectional_attention='all' makes every layer bidirectional; calc counts "
               "causal language models")
    n = c.size("num_hidden_layers")
    kinds = layer_kinds(c, ["local" if (i + 1) % 6 else "global" for i in range(n)])
    kinds[-1] = "global"  # __post_init__ forces the last layer to full_attention
    k_eq_v = c.flag("attention_k_eq_v")
    shared = c.size("num_kv_shared_layers", 0)
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), act_key="hidden_activation",
                   attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head",
                              "kind_shapes": {"global": _global_shape(c, kinds, k_eq_v)},
                              "kv_shared_layers": shared},
                   norm={"kind": "rmsnorm", "placement": "sandwich"})
    # use_double_wide_mlp widens the kv-shared layers' MLP only: none without them
    spec["ffn"]["double_wide"] = c.flag("use_double_wide_mlp") and shared > 0
    return merge(spec, per_layer(c, attention=kinds))


def _write_gemma4_unified_text(spec: ModelSpec) -> dict[str, Any]:
    """gemma3_text's fields, the full layers' shape (global_head_dim; num_global_key_value_heads
    and attention_k_eq_v) and the kv-shared layers; export reads it back to check the rest."""
    att = spec.attention
    need(set(att.kind_shapes) <= {"global"},
         "attention.kind_shapes for sliding layers (Gemma 4 shapes its full layers only)")
    need(not att.k_eq_v, "attention.k_eq_v on the sliding layers (Gemma 4 uses keys as values "
                         "on its full layers only)")
    need(spec.attention_kinds[-1] == "global", "a last layer that is not full attention "
                                               "(Gemma 4's last layer always is)")
    h, kv, width, _ = spec.heads_of("global")
    k_eq_v = spec.keys_are_values("global")
    need(h == att.n_heads, "attention.kind_shapes.global.n_heads (Gemma 4's full layers have "
                           "the model's query heads)")
    need(k_eq_v or kv == spec.n_kv_heads,
         "attention.kind_shapes.global.n_kv_heads without k_eq_v (Gemma 4 gives its full layers "
         "KV heads of their own only when their keys are their values)")
    config = {**_write_full_or_sliding(spec, "gemma4_unified_text"),
              "global_head_dim": width, "attention_k_eq_v": k_eq_v,
              "num_kv_shared_layers": att.kv_shared_layers,
              "use_double_wide_mlp": bool(spec.ffn and spec.ffn.double_wide)}
    if k_eq_v:
        config["num_global_key_value_heads"] = kv
    return config


# Written only where the writers before it cannot (keys used as values, kv-shared layers).
GEMMA4_UNIFIED_TEXT = ModelType(
    "gemma4_unified_text", _read_gemma4_unified_text,
    write=_write_gemma4_unified_text, traits=Traits(),
    # keywords __post_init__ pops (global_head_dim 512, num_global_key_value_heads None), and
    # the per-layer table a saved config carries (configuration_utils.py): not fields
    getattr_fields=("global_head_dim", "num_global_key_value_heads", "per_layer_config"),
    defaults={
        "vocab_size": 262144, "hidden_size": 2304, "intermediate_size": 9216,
        "num_hidden_layers": 30, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 262144, "tie_word_embeddings": True, "attention_bias": False,
        "sliding_window": 1024, "layer_types": None, "use_bidirectional_attention": "vision",
        "attention_k_eq_v": False, "num_kv_shared_layers": 0, "use_double_wide_mlp": False,
    })


# ---- gemma4_text ------------------------------------------------------------------------------
def _read_gemma4_text(c: HFConfig) -> dict[str, Any]:
    # modeling_gemma4.py (transformers 5.24.0): Gemma4TextAttention and Gemma4TextMLP are
    # gemma4_unified_text's, line for line, and so is the layer without its two optional parts.
    spec = _read_gemma4_unified_text(c)
    # hidden_size_per_layer_input > 0 (0 builds none; Gemma4TextConfig's strict int field
    # refuses null): Gemma4TextModel's
    # embed_tokens_per_layer (vocab_size_per_layer_input × L·p), per_layer_model_projection
    # and per_layer_projection_norm, and in every layer per_layer_input_gate,
    # per_layer_projection and post_per_layer_input_norm: per_layer_embeddings
    if c.size("hidden_size_per_layer_input", 0):
        spec["per_layer_embeddings"] = {
            "width": c.size("hidden_size_per_layer_input"),
            "vocab_size": c.size("vocab_size_per_layer_input")}
    # enable_moe_block: each layer keeps its dense Gemma4TextMLP (every token runs it: the
    # shared expert, intermediate_size wide) and adds Gemma4TextRouter (proj d → E without
    # bias, scale d, per_expert_scale E: moe.router_scales) and Gemma4TextExperts (E gated
    # experts of moe_intermediate_size, the MLP's activation, no biases; top_k_experts a
    # token), with pre_feedforward_layernorm_2 before the experts and
    # post_feedforward_layernorm_1 and _2 after each branch (moe.branch_norms)
    if c.flag("enable_moe_block"):
        if spec["ffn"]["double_wide"]:
            c.fail("enable_moe_block=true with use_double_wide_mlp and num_kv_shared_layers "
                   "makes the kv-shared layers' dense MLP beside the experts 2 × "
                   "intermediate_size wide, which calc's one shared-expert width cannot "
                   "express; use_double_wide_mlp=false or num_kv_shared_layers=0")
        n_experts = c.size("num_experts")
        spec["moe"] = {"n_experts": n_experts,
                       "top_k": top_k(c, "top_k_experts", n_experts, "num_experts"),
                       "d_expert": c.size("moe_intermediate_size"),
                       "n_shared_experts": 1, "d_shared": spec["ffn"]["d_ff"],
                       "branch_norms": True, "router_scales": True}
    return spec


def _write_gemma4_text(spec: ModelSpec) -> dict[str, Any]:
    """gemma4_unified_text's fields as gemma4_text, with its two parts: per-layer embeddings
    and the MoE block beside every layer's dense MLP; export reads it back to check the rest."""
    moe, ple = spec.moe, spec.per_layer_embeddings
    need(moe is not None or ple is not None,
         "per_layer_embeddings or moe (gemma4_unified_text writes Gemma 4 without them)")
    if moe is not None:
        need(moe.n_shared_experts == 1 and spec.ffn is not None
             and moe.shared_width == spec.ffn.d_ff,
             "moe.n_shared_experts=1 of width ffn.d_ff (Gemma 4's dense MLP beside its experts)")
        need(moe.branch_norms and moe.router_scales,
             "moe without branch_norms and router_scales (Gemma 4's MoE block has both)")
        need(spec.n_moe_layers == spec.n_layers, "dense layers beside MoE ones (Gemma 4's MoE "
                                                 "block is on every layer)")
        need(not spec.double_wide_layers and not (spec.ffn and spec.ffn.double_wide
                                                  and spec.attention.kv_shared_layers),
             "ffn.double_wide with moe (one width for Gemma 4's dense MLP)")
    plain = spec.updated(moe=None, per_layer_embeddings=None)
    config = {**_write_gemma4_unified_text(plain), "model_type": "gemma4_text",
              "hidden_size_per_layer_input": ple.width if ple is not None else 0,
              "enable_moe_block": moe is not None}
    if ple is not None:
        config["vocab_size_per_layer_input"] = ple.vocab_size or spec.vocab_size
    if moe is not None:
        config.update(num_experts=moe.n_experts, top_k_experts=moe.top_k,
                      moe_intermediate_size=moe.d_expert)
    return config


# Written only for its two parts: gemma4_unified_text's writer holds Gemma 4 without them.
GEMMA4_TEXT = ModelType(
    "gemma4_text", _read_gemma4_text, write=_write_gemma4_text, traits=Traits(),
    getattr_fields=("global_head_dim", "num_global_key_value_heads", "per_layer_config"),
    # Gemma4TextConfig's defaults: gemma4_unified_text's but for these
    defaults={**GEMMA4_UNIFIED_TEXT.defaults, "max_position_embeddings": 131072,
              "sliding_window": 512, "use_bidirectional_attention": None,
              "hidden_size_per_layer_input": 256, "vocab_size_per_layer_input": 262144,
              "enable_moe_block": False, "num_experts": None, "top_k_experts": None,
              "moe_intermediate_size": None})


# ---- gemma3n_text -----------------------------------------------------------------------------
def _gemma3n_widths(c: HFConfig) -> int:
    """intermediate_size: one width, or one per layer (configuration_gemma3n.py's
    __post_init__ repeats a single value; MatFormer's mix-and-match submodels give layers
    widths of their own), which calc holds only when they are all the same."""
    widths = c["intermediate_size"]
    if not isinstance(widths, list):
        return c.size("intermediate_size")
    if len(widths) != c.size("num_hidden_layers"):  # __post_init__ refuses it too
        c.fail(f"intermediate_size lists {len(widths)} widths for "
               f"{c['num_hidden_layers']} layers; give one per layer or one for all")
    if len(set(widths)) != 1:
        c.fail(f"intermediate_size={widths!r} gives layers different MLP widths; calc's spec "
               f"has one ffn.d_ff for every layer")
    return _one_width(c, widths[0])


def _one_width(c: HFConfig, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        c.fail(f"intermediate_size has {value!r}; each width must be a whole number >= 1")
    return value


def _read_gemma3n_text(c: HFConfig) -> dict[str, Any]:
    # modeling_gemma3n.py (transformers 5.24.0): Gemma 3's layer (four RMSNorms with weights,
    # q_norm/k_norm per head; v_norm has no weight) on AltUp's active stream; the last
    # num_kv_shared_layers layers build no k_proj, v_proj, k_norm or v_norm and read the
    # keys and values of the last earlier layer of their type (kv_sharing_modes). Every layer
    # has Gemma3nTextAltUp (altup), Gemma3nTextLaurelBlock (laurel) and the per-layer input's
    # gate, projection and norm; the model embed_tokens_per_layer, per_layer_model_projection
    # and per_layer_projection_norm (per_layer_embeddings) and altup_projections and
    # altup_unembed_projections. configuration_gemma3n.py: layer_types, else every 5th layer
    # full. activation_sparsity_pattern's Gaussian top-k (Gemma3nTextMLP._gaussian_topk) is a
    # mean, a standard deviation and a ReLU on gate_proj's output: no matrix product, so the
    # MLP's FLOPs are a dense MLP's (docs/custom-models.md). Embedding scales are buffers.
    n = c.size("num_hidden_layers")
    kinds = layer_kinds(c, ["global" if (i + 1) % 5 == 0 else "local" for i in range(n)])
    pattern = c["activation_sparsity_pattern"]
    if isinstance(pattern, list) and len(pattern) != n:  # __post_init__ refuses it
        c.fail(f"activation_sparsity_pattern lists {len(pattern)} values for {n} layers")
    bias = c.flag("attention_bias")
    spec = decoder(c, heads(c), act_key="hidden_activation", d_ff=_gemma3n_widths(c),
                   attention={"qkv_bias": bias, "out_bias": bias, "qk_norm": "head",
                              "kv_shared_layers": c.size("num_kv_shared_layers", 0)},
                   norm={"kind": "rmsnorm", "placement": "sandwich"})
    # hidden_size_per_layer_input 0 would still build each layer's post_per_layer_input_norm
    # (d weights) beside empty matrices: not the spec's per_layer_embeddings
    spec["per_layer_embeddings"] = {"width": c.size("hidden_size_per_layer_input"),
                                    "vocab_size": c.size("vocab_size_per_layer_input")}
    spec["altup"] = {"streams": c.size("altup_num_inputs")}
    spec["laurel"] = {"rank": c.size("laurel_rank")}
    return merge(spec, per_layer(c, attention=kinds))


def _write_gemma3n_text(spec: ModelSpec) -> dict[str, Any]:
    """gemma3_text's fields with Gemma 3n's parts (AltUp, LAuReL, per-layer embeddings) and its
    kv-shared layers; export reads it back to check the rest."""
    altup, laurel, ple = spec.altup, spec.laurel, spec.per_layer_embeddings
    need(altup is not None and laurel is not None and ple is not None,
         "altup, laurel or per_layer_embeddings missing (Gemma 3n's layers have all three)")
    assert altup is not None and laurel is not None and ple is not None
    return {**_write_full_or_sliding(spec, "gemma3n_text"),
            "num_kv_shared_layers": spec.attention.kv_shared_layers,
            "hidden_size_per_layer_input": ple.width,
            "vocab_size_per_layer_input": ple.vocab_size or spec.vocab_size,
            "altup_num_inputs": altup.streams, "laurel_rank": laurel.rank}


# Written only for its parts: no other writer holds AltUp or LAuReL.
GEMMA3N_TEXT = ModelType(
    "gemma3n_text", _read_gemma3n_text, write=_write_gemma3n_text, traits=Traits(),
    # Gemma3nTextConfig's defaults (configuration_gemma3n.py)
    defaults={
        "vocab_size": 262400, "hidden_size": 2048, "intermediate_size": 16384,
        "num_hidden_layers": 35, "num_attention_heads": 8, "num_key_value_heads": 2,
        "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 32768, "tie_word_embeddings": True, "attention_bias": False,
        "sliding_window": 512, "layer_types": None, "vocab_size_per_layer_input": 262144,
        "hidden_size_per_layer_input": 256, "altup_num_inputs": 4, "num_kv_shared_layers": 15,
        "laurel_rank": 64, "activation_sparsity_pattern": None,
    })


# ---- gemma4_assistant, gemma4_unified_assistant -----------------------------------------------
def _read_assistant(c: HFConfig, text_kind: ModelType) -> dict[str, Any]:
    """Gemma 4's drafter (modeling_gemma4_assistant.py, transformers 5.24.0;
    Gemma4UnifiedAssistantForCausalLM subclasses it): text_config's model (AutoModel of
    text_config: its embedding, layers and final norm) read by its own reader, fed the target's
    [embedding, hidden state] through pre_projection 2·backbone_hidden_size → hidden_size and
    giving its state back through post_projection (drafter); use_ordered_embeddings builds
    Gemma4AssistantMaskedEmbedder in place of the full head (centroid_head). The head is tied to
    the embedding by this config's tie_word_embeddings (text_config's is not read)."""
    text = c["text_config"]
    if text is None:
        text = {}  # sub_configs_defaults: the text type's own defaults
    if not isinstance(text, dict):
        c.fail(f"text_config={text!r} must be a config object")
    text = {"model_type": text_kind.name, **text}
    if text["model_type"] != text_kind.name:
        c.fail(f"text_config.model_type={text['model_type']!r}: {c.type} builds its layers "
               f"from {text_kind.name!r}")
    inner = HFConfig(text, f"{c.where}, text_config", text_kind)
    # __post_init__: "the shared kvs across all layers": a text_config without kv-shared
    # layers (0 or unset) gets num_kv_shared_layers = num_hidden_layers
    if not inner["num_kv_shared_layers"]:
        inner.values["num_kv_shared_layers"] = inner.size("num_hidden_layers")
    if c.type == "gemma4_assistant":
        # Gemma4AssistantConfig.validate_architecture (the unified assistant has none)
        for key in ("hidden_size_per_layer_input", "vocab_size_per_layer_input"):
            if inner[key] != 0:
                c.fail(f"text_config.{key}={inner[key]!r} must be 0 (Gemma4AssistantConfig: "
                       f"an assistant has no per-layer embeddings)")
        for key in ("enable_moe_block", "use_double_wide_mlp"):
            if inner[key] is not False:
                c.fail(f"text_config.{key}={inner[key]!r} must be false "
                       f"(Gemma4AssistantConfig.validate_architecture)")
        if inner["num_kv_shared_layers"] != inner["num_hidden_layers"]:
            c.fail(f"text_config.num_kv_shared_layers={inner['num_kv_shared_layers']!r} must "
                   f"be num_hidden_layers={inner['num_hidden_layers']!r} (Gemma4AssistantConfig: "
                   f"every layer reads the target's keys and values)")
    spec = text_kind.read(inner)
    c.defaulted.update({f"text_config.{key}": value for key, value in inner.defaulted.items()})
    if inner.given("max_position_embeddings"):  # the context the report names
        c.values.setdefault("max_position_embeddings", inner["max_position_embeddings"])
    spec["tie_embeddings"] = c.flag("tie_word_embeddings")
    spec["drafter"] = {"target_width": c.size("backbone_hidden_size")}
    if c.flag("use_ordered_embeddings"):
        spec["centroid_head"] = {"n_centroids": c.size("num_centroids"),
                                 "top_k": c.size("centroid_intermediate_top_k")}
        if spec["vocab_size"] % spec["centroid_head"]["n_centroids"]:
            c.fail(f"num_centroids={c['num_centroids']} must divide text_config.vocab_size="
                   f"{spec['vocab_size']} (Gemma4AssistantMaskedEmbedder views the vocabulary "
                   f"as num_centroids clusters of vocab_size // num_centroids tokens)")
        if spec["centroid_head"]["top_k"] > spec["centroid_head"]["n_centroids"]:
            c.fail(f"centroid_intermediate_top_k={c['centroid_intermediate_top_k']} must not "
                   f"exceed num_centroids={c['num_centroids']} (torch.topk)")
    return spec


def _read_gemma4_assistant(c: HFConfig) -> dict[str, Any]:
    return _read_assistant(c, GEMMA4_TEXT)


def _read_gemma4_unified_assistant(c: HFConfig) -> dict[str, Any]:
    return _read_assistant(c, GEMMA4_UNIFIED_TEXT)


def _write_assistant(spec: ModelSpec, model_type: str) -> dict[str, Any]:
    """A drafter as `model_type`: its layers as gemma4_unified_text's writer writes them
    (written without kv-shared layers, which a model without a target cannot have, and given
    their number after), the target's width and the centroid head."""
    drafter, head, att = spec.drafter, spec.centroid_head, spec.attention
    need(drafter is not None, "a drafter (Gemma 4's assistants are fed a target's states)")
    assert drafter is not None
    need(spec.per_layer_embeddings is None and spec.moe is None,
         "per_layer_embeddings or moe in a drafter (Gemma 4's assistants have neither)")
    double = bool(spec.ffn and spec.ffn.double_wide)
    plain = spec.updated(drafter=None, centroid_head=None, **{
        "attention.kv_shared_layers": 0, **({"ffn.double_wide": False} if double else {})})
    text = {**_write_gemma4_unified_text(plain), "num_kv_shared_layers": att.kv_shared_layers,
            "use_double_wide_mlp": double}
    text.pop("tie_word_embeddings", None)  # the assistant's own flag ties the head
    if model_type == "gemma4_assistant":
        need(att.kv_shared_layers == spec.n_layers and not double,
             "kv-shared layers fewer than all, or ffn.double_wide (Gemma4AssistantConfig: "
             "every layer reads the target's keys, no doubled MLP)")
        text.update(model_type="gemma4_text", hidden_size_per_layer_input=0,
                    vocab_size_per_layer_input=0, enable_moe_block=False)
    config = {"model_type": model_type, "text_config": text,
              "backbone_hidden_size": drafter.target_width,
              "use_ordered_embeddings": head is not None,
              "tie_word_embeddings": spec.tie_embeddings}
    if head is not None:
        config.update(num_centroids=head.n_centroids, centroid_intermediate_top_k=head.top_k)
    return config


# Gemma4AssistantConfig's and Gemma4UnifiedAssistantConfig's fields and defaults (they differ
# in backbone_hidden_size only); the only writers of a drafter, gemma4_assistant first (its
# stricter text model), the unified one for the rest.
_ASSISTANT = {"text_config": None, "use_ordered_embeddings": False, "num_centroids": 2048,
              "centroid_intermediate_top_k": 32, "tie_word_embeddings": True}
GEMMA4_ASSISTANT = ModelType(
    "gemma4_assistant", _read_gemma4_assistant,
    write=lambda spec: _write_assistant(spec, "gemma4_assistant"), traits=Traits(),
    defaults={**_ASSISTANT, "backbone_hidden_size": 1536})
GEMMA4_UNIFIED_ASSISTANT = ModelType(
    "gemma4_unified_assistant", _read_gemma4_unified_assistant,
    write=lambda spec: _write_assistant(spec, "gemma4_unified_assistant"), traits=Traits(),
    defaults={**_ASSISTANT, "backbone_hidden_size": 3840})
