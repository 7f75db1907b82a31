"""One reader per supported model_type: what transformers' modeling code builds from a config.

Each reader repeats, for counting, what transformers/models/<type>/modeling_<type>.py does with
the config (transformers TRANSFORMERS_VERSION, calc.hf.defaults): which projections carry
biases, where the norms sit, how many heads share keys, which layers are mixtures of experts.
It returns the spec's fields; calc.hf validates them as a ModelSpec.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calc.hf import families, readers_attention, readers_hybrid, readers_moe
from calc.hf.defaults import supported_types
from calc.hf.fields import (
    HFConfig,
    decoder,
    divides,
    heads,
    layer_kinds,
    layer_pattern,
    layernorm_decoder,
    top_k,
)
from calc.hf.layout import moe_layout


# ---- Llama and its relatives ----------------------------------------------------------------
def _llama(c: HFConfig) -> dict[str, Any]:
    # modeling_llama.py: attention_bias on q, k, v and o; mlp_bias on gate, up and down.
    divides(c)
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), ffn_bias=c.flag("mlp_bias"),
                   attention={"qkv_bias": bias, "out_bias": bias})


def _mistral(c: HFConfig) -> dict[str, Any]:
    # modeling_mistral.py: no biases; every layer uses config.sliding_window (layer_types, if
    # present, is ignored with a warning: configuration_mistral.py).
    window = c.size("sliding_window") if c.given("sliding_window") else None
    return decoder(c, heads(c), attention={"sliding_window": window})


def _mixtral(c: HFConfig) -> dict[str, Any]:
    # modeling_mixtral.py: every layer's FFN is the MoE; router Linear(d, E) without bias.
    spec = _mistral(c)
    experts = c.size("num_local_experts")
    spec["moe"] = {"n_experts": experts, "d_expert": c.size("intermediate_size"),
                   "top_k": top_k(c, "num_experts_per_tok", experts, "num_local_experts")}
    return spec


def _qwen_kinds(c: HFConfig, slides: Callable[[int, int], bool]) -> list[str]:
    """configuration_qwen2.py, _qwen2_moe.py, _qwen3.py: without use_sliding_window the window
    is None and no layer slides; with it, layer_types if given, else layer i slides when
    slides(i, max_window_layers)."""
    layers = c.size("num_hidden_layers")
    if not (c.flag("use_sliding_window") and c.given("sliding_window")):
        return ["global"] * layers
    first = c.size("max_window_layers", minimum=0)
    return layer_kinds(c, ["local" if slides(i, first) else "global" for i in range(layers)])


def _qwen2(c: HFConfig) -> dict[str, Any]:
    # modeling_qwen2.py: biases on q, k, v (not o); head_dim from the file if it has one;
    # layers from max_window_layers on slide.
    kinds = _qwen_kinds(c, lambda i, first: i >= first)
    return decoder(c, heads(c), attention={"qkv_bias": True, **layer_pattern(c, kinds)})


def _qwen3(c: HFConfig) -> dict[str, Any]:
    # modeling_qwen3.py: attention_bias on q, k, v, o; RMSNorm over each head's q and k.
    kinds = _qwen_kinds(c, lambda i, first: i >= first)
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={
        "qkv_bias": bias, "out_bias": bias, "qk_norm": "head", **layer_pattern(c, kinds)})


def _sparse_layers(c: HFConfig) -> list[bool]:
    # modeling_qwen2_moe.py / _qwen3_moe.py: a layer is MoE unless listed in mlp_only_layers,
    # and only every decoder_sparse_step-th one.
    only = c["mlp_only_layers"] or []
    step = c.size("decoder_sparse_step")
    experts = c.size("num_experts", minimum=0)
    return [i not in only and experts > 0 and (i + 1) % step == 0
            for i in range(c.size("num_hidden_layers"))]


def _qwen_moe(c: HFConfig, **shared: Any) -> dict[str, Any]:
    """{"moe": ...} and, for an irregular mlp_only_layers, the layers that place it."""
    sparse = _sparse_layers(c)
    if not any(sparse):
        return {"moe": None}
    placement, layers = moe_layout(c, sparse)
    experts = c.size("num_experts")
    return {"moe": {"n_experts": experts, "d_expert": c.size("moe_intermediate_size"),
                    "top_k": top_k(c, "num_experts_per_tok", experts, "num_experts"),
                    **placement, **shared}, **layers}


def _qwen2_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_qwen2_moe.py: qkv_bias on q, k, v; one shared expert of
    # shared_expert_intermediate_size behind a sigmoid gate Linear(d, 1); the sliding layers are
    # the even-indexed ones below max_window_layers.
    kinds = _qwen_kinds(c, lambda i, first: (i + 1) % 2 == 1 and i < first)
    return decoder(c, heads(c), attention={"qkv_bias": c.flag("qkv_bias"),
                                           **layer_pattern(c, kinds)},
                   **_qwen_moe(c, n_shared_experts=1, shared_expert_gate=True,
                               d_shared=c.size("shared_expert_intermediate_size")))


def _qwen3_moe(c: HFConfig) -> dict[str, Any]:
    # modeling_qwen3_moe.py: as Qwen3, but every layer slides when use_sliding_window; no
    # shared expert.
    window = c.size("sliding_window") if c.flag("use_sliding_window") else None
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={
        "qkv_bias": bias, "out_bias": bias, "qk_norm": "head", "sliding_window": window},
        **_qwen_moe(c))


def _gemma(c: HFConfig) -> dict[str, Any]:
    # modeling_gemma.py: head_dim 256 by default; tied; RMSNorm (1 + γ) has d weights too.
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias})


def _gemma2(c: HFConfig) -> dict[str, Any]:
    # modeling_gemma2.py: four norms a layer (input, post_attention, pre_ and
    # post_feedforward); configuration_gemma2.py: even-indexed layers slide, odd ones are global.
    divides(c)
    bias = c.flag("attention_bias")
    default = ["local" if (i + 1) % 2 else "global" for i in range(c.size("num_hidden_layers"))]
    kinds = layer_kinds(c, default)
    return decoder(c, heads(c), act_key="hidden_activation",
                   attention={"qkv_bias": bias, "out_bias": bias, **layer_pattern(c, kinds)},
                   norm={"kind": "rmsnorm", "placement": "sandwich"})


def _phi3(c: HFConfig) -> dict[str, Any]:
    # modeling_phi3.py: fused qkv_proj and gate_up_proj (the same weights), no biases; every
    # layer uses config.sliding_window.
    window = c.size("sliding_window") if c.given("sliding_window") else None
    return decoder(c, heads(c), attention={"sliding_window": window})


def _olmo2(c: HFConfig) -> dict[str, Any]:
    # modeling_olmo2.py: norms after each sublayer (post_attention_layernorm,
    # post_feedforward_layernorm), and q_norm / k_norm over the whole projections.
    bias = c.flag("attention_bias")
    return decoder(c, heads(c), attention={"qkv_bias": bias, "out_bias": bias,
                                           "qk_norm": "projection"},
                   norm={"kind": "rmsnorm", "placement": "reordered"})


def _deepseek(c: HFConfig, v3: bool) -> dict[str, Any]:
    # modeling_deepseek_v2.py / _v3.py: MLA (q_lora_rank null projects queries directly),
    # attention_bias on q_a_proj, kv_a_proj_with_mqa and o_proj; layers from
    # first_k_dense_replace on are MoE with n_shared_experts shared experts (one MLP of
    # n_shared × moe_intermediate_size, the same weights as n_shared experts).
    if not v3:
        divides(c)
        if c.flag("mlp_bias"):
            c.fail("mlp_bias=true biases the dense and shared MLPs but not the routed "
                   "experts; calc's ffn.bias covers all of them")
    bias = c.flag("attention_bias")
    experts = c.size("n_routed_experts")
    layers = c.size("num_hidden_layers")
    first = c.size("first_k_dense_replace", minimum=0)
    # moe_layer_freq: DeepSeek's own modeling_deepseek.py makes layer i MoE when i >=
    # first_k_dense_replace and i % moe_layer_freq == 0 (every released checkpoint has 1);
    # transformers 5.x ignores the field (calc.reports.verify says so and does not compare).
    freq = c.size("moe_layer_freq") if "moe_layer_freq" in c.values else 1
    sparse = [i >= first and i % freq == 0 for i in range(layers)]
    placement, placed = moe_layout(c, sparse) if any(sparse) else (None, {})
    moe = placement is not None and {
        "n_experts": experts, "d_expert": c.size("moe_intermediate_size"),
        "top_k": top_k(c, "num_experts_per_tok", experts, "n_routed_experts"),
        "n_shared_experts": c.size("n_shared_experts", minimum=0), **(placement or {}),
        # DeepSeek-V3's e_score_correction_bias is an nn.Buffer in transformers
        # (DeepseekV3TopkRouter), not a parameter, so transformers' count leaves out its
        # 58 × 256 values; an imported config matches transformers. The deepseek-v3 preset keeps
        # DeepSeek's published 671,026,419,200, which counts them (router_bias=true).
        "router_bias": False,
    }
    return decoder(
        c, {"n_heads": c.size("num_attention_heads")}, moe=moe or None, **placed,
        attention={"qkv_bias": bias, "out_bias": bias, "mla": {
            "q_lora_rank": c.size("q_lora_rank") if c.given("q_lora_rank") else None,
            "kv_lora_rank": c.size("kv_lora_rank"), "v_head_dim": c.size("v_head_dim"),
            "qk_nope_head_dim": c.size("qk_nope_head_dim", minimum=0),
            "qk_rope_head_dim": c.size("qk_rope_head_dim", minimum=0)}},
        mtp_modules=c.size("num_mtp_layers", minimum=0) if v3 else 0)


# ---- LayerNorm decoders ---------------------------------------------------------------------
def _gpt2(c: HFConfig) -> dict[str, Any]:
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


def _gpt_neox(c: HFConfig) -> dict[str, Any]:
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


def _falcon(c: HFConfig) -> dict[str, Any]:
    # modeling_falcon.py. New decoder architecture (Falcon-40B/180B, Falcon2-11B): GQA with
    # num_kv_heads, attention and MLP in parallel behind num_ln_in_parallel_attn norms (None
    # means 2). Old one (Falcon-7B, RW): multi_query gives one K/V head; parallel_attn shares
    # one norm, else input_layernorm + post_attention_layernorm in sequence. `bias` on every
    # Linear but the head.
    h = c.size("num_attention_heads")
    new, parallel = c.flag("new_decoder_architecture"), c.flag("parallel_attn")
    norms = c["num_ln_in_parallel_attn"]
    if new:
        kv = c.size("num_kv_heads") if c.given("num_kv_heads") else h
        norms = 2 if norms is None else norms
        if not parallel:
            c.fail("parallel_attn=false with new_decoder_architecture=true: transformers "
                   "builds input/post_attention norms but its forward needs ln_attn/ln_mlp")
    else:
        kv = 1 if c.flag("multi_query") else h
        if not c.flag("multi_query") and c.given("num_kv_heads") and c["num_kv_heads"] != h:
            c.fail(f"num_kv_heads={c['num_kv_heads']} without new_decoder_architecture: the "
                   f"fused query_key_value keeps {h} K/V heads (3 × hidden_size)")
        if parallel and norms == 2:
            c.fail("num_ln_in_parallel_attn=2 needs new_decoder_architecture=true "
                   "(the old layer's forward uses input_layernorm)")
        norms = 1
    if norms not in (1, 2):
        c.fail(f"num_ln_in_parallel_attn={norms!r} must be 1 or 2")
    if h % kv:
        c.fail(f"num_kv_heads={kv} must divide num_attention_heads={h}")
    divides(c)  # FalconAttention refuses a hidden_size its heads do not divide
    d = c.size("hidden_size")
    d_ff = c.size("ffn_hidden_size") if c.given("ffn_hidden_size") else 4 * d
    spec = layernorm_decoder(
        c, {"n_heads": h, "n_kv_heads": kv}, d_ff, c.activation("activation", gated=False),
        c.flag("bias"), position={"kind": "alibi" if c.flag("alibi") else "rope"})
    if new or parallel:
        spec.update(parallel_block=True, parallel_norms=norms)
    return spec


def _bloom(c: HFConfig) -> dict[str, Any]:
    # modeling_bloom.py: ALiBi, a LayerNorm on the embeddings, biases everywhere but the head,
    # a 4·d GELU MLP. apply_residual_connection_post_layernorm only moves the residual's
    # source (same weights, same products). ALiBi has no position limit: calc's default sequence
    # length is the config's seq_length (BLOOM's files record their training length, which
    # transformers does not read), else BLOOM's 2,048 (Le Scao et al. 2022, §3.5).
    d = c.size("hidden_size")
    context = c.size("seq_length") if "seq_length" in c.values else 2048
    return layernorm_decoder(c, heads(c, None, "n_head", head_dim_key=None), 4 * d, "gelu",
                             True, context=context, position={"kind": "alibi"},
                             norm={"kind": "layernorm", "placement": "pre", "embedding": True})


def _opt(c: HFConfig) -> dict[str, Any]:
    # modeling_opt.py: learned positions with 2 extra rows (OPTLearnedPositionalEmbedding,
    # offset 2); enable_bias on q, k, v, out_proj, fc1, fc2; do_layer_norm_before=false
    # (OPT-350m) puts the norms after each sublayer and drops the final norm.
    # word_embed_proj_dim (default hidden_size) ≠ hidden_size: the embedding and the tied head
    # are that wide, with project_in/project_out (no bias) around the decoder (OPT-350m: 512);
    # layer_norm_elementwise_affine=false: LayerNorms without any parameters.
    d = c.size("hidden_size")
    width = c.size("word_embed_proj_dim") if c.given("word_embed_proj_dim") else d
    affine = c.flag("layer_norm_elementwise_affine")
    pre = c.flag("do_layer_norm_before")
    positions = c.size("max_position_embeddings")
    return layernorm_decoder(
        c, heads(c, None, head_dim_key=None), c.size("ffn_dim"),
        c.activation("activation_function", gated=False), c.flag("enable_bias"),
        position={"kind": "learned", "max_positions": positions + 2},
        d_embedding=width if width != d else None,
        norm={"kind": "layernorm", "placement": "pre" if pre else "post",
              "final": pre and not c.flag("_remove_final_layer_norm"), "weights": affine,
              **({} if affine else {"bias": False})})


READERS: dict[str, Callable[[HFConfig], dict[str, Any]]] = {
    **readers_attention.READERS, **readers_hybrid.READERS, **readers_moe.READERS,
    "gpt2": _gpt2, "llama": _llama, "mistral": _mistral, "mixtral": _mixtral,
    "qwen2": _qwen2, "qwen2_moe": _qwen2_moe, "qwen3": _qwen3, "qwen3_moe": _qwen3_moe,
    "gemma": _gemma, "gemma2": _gemma2, "phi3": _phi3, "olmo2": _olmo2,
    "gpt_neox": _gpt_neox, "falcon": _falcon, "bloom": _bloom, "opt": _opt,
    "deepseek_v2": lambda c: _deepseek(c, v3=False),
    "deepseek_v3": lambda c: _deepseek(c, v3=True),
}
READERS.update(families.READERS)  # calc/hf/family_*.py
assert sorted(READERS) == supported_types()
