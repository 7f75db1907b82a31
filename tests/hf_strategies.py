"""Hypothesis strategies: small random config.json dicts of every model type calc.hf supports.

Each draws the fields that type's reader uses (calc.hf), small enough to build in milliseconds
on the meta device. Sliding windows are at least MIN_WINDOW: transformers' eager attention
computes the masked square anyway, so below the sequence length its FLOPs and calc's "full"
convention (at most w keys) part by design.
"""

from __future__ import annotations

from hypothesis import strategies as st

from calc.hf import supported_types
from tests.hf_family_strategies import (
    FAMILY_TYPES,
    cpmant_config,
    doge_config,
    dory_config,
    family_config,
    hrm_text_config,
    inkling2_config,
    inkling_config,
    modernbert_decoder_config,
    zaya_config,
)

MIN_WINDOW = 8  # the sequence length the property test runs at
LLAMA_LIKE = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
              "gemma", "gemma2", "phi3", "olmo2")
_NO_TOKENS = {"pad_token_id": None, "bos_token_id": None, "eos_token_id": None}


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


@st.composite
def _heads(draw) -> dict:
    heads = draw(st.integers(1, 4))
    head_dim = draw(st.sampled_from([2, 4, 6, 8]))  # even: RoPE rotates pairs
    return {"num_attention_heads": heads, "hidden_size": heads * head_dim,
            "num_key_value_heads": draw(st.sampled_from(_divisors(heads)))}


@st.composite
def _diffllama(draw, model_type: str) -> dict:
    """DiffLlama: an even count of key/value heads (the values' two halves), a head width of
    its own or hidden_size // heads (floor), even for RoPE."""
    kv = 2 * draw(st.integers(1, 2))
    heads = kv * draw(st.integers(1, 2))
    head_dim = draw(st.sampled_from([2, 4, 6]))
    own = draw(st.booleans())
    return {"num_attention_heads": heads,
            "num_key_value_heads": kv if kv < heads or draw(st.booleans()) else None,
            "hidden_size": draw(st.integers(2, 24)) if own else heads * head_dim,
            "head_dim": head_dim if own else None,
            "num_hidden_layers": draw(st.integers(1, 3)),
            "intermediate_size": draw(st.integers(1, 24)),
            "tie_word_embeddings": draw(st.booleans()), "max_position_embeddings": 64,
            "attention_bias": draw(st.booleans()),
            "hidden_act": draw(st.sampled_from(["silu", "gelu_pytorch_tanh", "relu"]))}


@st.composite
def _llama_like(draw, model_type: str) -> dict:
    layers = draw(st.integers(1, 3))
    config = {**draw(_heads()), "num_hidden_layers": layers,
              "intermediate_size": draw(st.integers(1, 24)),
              "tie_word_embeddings": draw(st.booleans()),
              "max_position_embeddings": 64}
    act = draw(st.sampled_from(["silu", "gelu_pytorch_tanh", "relu"]))
    config["hidden_activation" if model_type == "gemma2" else "hidden_act"] = act
    if model_type != "llama" and draw(st.booleans()):  # llama needs hidden % heads == 0 only
        config["head_dim"] = draw(st.sampled_from([2, 4, 8]))
    if model_type in ("llama", "qwen3", "qwen3_moe", "gemma", "gemma2", "olmo2"):
        config["attention_bias"] = draw(st.booleans())
    if model_type == "llama":
        config["mlp_bias"] = draw(st.booleans())
    window = draw(st.none() | st.integers(MIN_WINDOW, 32))
    if model_type in ("mistral", "mixtral", "phi3", "gemma2"):
        config["sliding_window"] = window or (4096 if model_type == "gemma2" else None)
    if model_type in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe") and window:
        config.update(use_sliding_window=True, sliding_window=window,
                      max_window_layers=draw(st.integers(0, layers)))
    if model_type in ("mixtral", "qwen2_moe", "qwen3_moe"):
        experts = draw(st.integers(1, 4))
        config["num_experts_per_tok"] = draw(st.integers(1, experts))
        config["num_local_experts" if model_type == "mixtral" else "num_experts"] = experts
    if model_type in ("qwen2_moe", "qwen3_moe"):
        config.update(moe_intermediate_size=draw(st.integers(1, 16)),
                      decoder_sparse_step=draw(st.integers(1, 2)),
                      mlp_only_layers=list(range(draw(st.integers(0, layers - 1)))))
    if model_type == "qwen2_moe":
        config.update(shared_expert_intermediate_size=draw(st.integers(1, 16)),
                      qkv_bias=draw(st.booleans()))
    return config


@st.composite
def _deepseek(draw, model_type: str) -> dict:
    layers = draw(st.integers(1, 3))
    heads = draw(st.integers(1, 4))
    # DeepSeek-V3's router sums the top 2 scores of each expert group (n_group 1 here)
    experts = draw(st.integers(2 if model_type == "deepseek_v3" else 1, 4))
    # even, and some RoPE: DeepSeek-V2 rotates through view_as_complex on the q/k slices
    nope, rope = draw(st.sampled_from([0, 2, 4])), draw(st.sampled_from([2, 4]))
    return {"num_attention_heads": heads, "num_key_value_heads": heads,
            "hidden_size": heads * draw(st.integers(1, 4)), "num_hidden_layers": layers,
            "intermediate_size": draw(st.integers(1, 16)),
            "q_lora_rank": draw(st.none() | st.integers(1, 8)),
            "kv_lora_rank": draw(st.sampled_from([2, 4, 8])), "qk_nope_head_dim": nope,
            "qk_rope_head_dim": rope, "v_head_dim": draw(st.integers(1, 4)),
            "n_routed_experts": experts, "num_experts_per_tok": draw(st.integers(1, experts)),
            "moe_intermediate_size": draw(st.integers(1, 8)),
            "n_shared_experts": draw(st.integers(0, 2)),
            "first_k_dense_replace": draw(st.integers(0, layers)),
            "attention_bias": draw(st.booleans()), "n_group": 1, "topk_group": 1,
            "tie_word_embeddings": draw(st.booleans()), "max_position_embeddings": 64,
            **({"num_nextn_predict_layers": draw(st.integers(0, 1))}
               if model_type == "deepseek_v3" else {})}


@st.composite
def _axk1(draw, model_type: str) -> dict:
    """A.X-K1: DeepSeek-V3's fields with a query latent always, the MoE layers placed by
    mlp_layer_types or by first_k_dense_replace and moe_layer_freq (its __post_init__'s
    keywords), each MoE block ending in post_mlp_layernorm."""
    config = draw(_deepseek("deepseek_v3"))
    layers = config["num_hidden_layers"]
    config.pop("num_nextn_predict_layers", None)
    config["q_lora_rank"] = draw(st.integers(1, 8))
    config.pop("first_k_dense_replace")
    if draw(st.booleans()):
        config["mlp_layer_types"] = draw(st.lists(st.sampled_from(["dense", "sparse"]),
                                                  min_size=layers, max_size=layers))
    else:
        config.update(first_k_dense_replace=draw(st.integers(0, layers)),
                      moe_layer_freq=draw(st.integers(1, 2)))
    return config


@st.composite
def _axk2(draw, model_type: str) -> dict:
    """A.X-K2: A.X-K1's fields and placement with DSA's indexer, gated pre-norms of their own
    rank, and routing without expert groups or with one (no count sees which)."""
    config = draw(_axk1("axk1"))
    rope = config["qk_rope_head_dim"]
    config.update(index_n_heads=draw(st.integers(1, 3)), index_head_dim=draw(st.integers(rope, 8)),
                  index_topk=draw(st.integers(1, 24)), gated_norm_rank=draw(st.integers(1, 4)))
    if draw(st.booleans()):
        config.update(n_group=None, topk_group=None)
    return config


def _mla_kda_moe(draw, layers: int, heads: int, experts: int) -> dict:
    """The fields Kimi Linear and Ling 3 share (calc.hf.families.kimi.read_mla_kda_moe): MLA
    over `heads` heads with its latent shapes, DeepSeek-V3's router over `experts` in one
    group, the dense MLP's and experts' widths, an LM head tied or not."""
    return {"num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": heads, "hidden_size": draw(st.integers(1, 4)) * 4,
            "intermediate_size": draw(st.integers(1, 16)),
            "q_lora_rank": draw(st.none() | st.integers(1, 8)),
            "kv_lora_rank": draw(st.sampled_from([2, 4, 8])),
            "qk_nope_head_dim": draw(st.sampled_from([0, 2, 4])),
            "qk_rope_head_dim": draw(st.sampled_from([2, 4])),
            "v_head_dim": draw(st.integers(1, 4)), "num_experts": experts,
            "num_experts_per_token": draw(st.integers(1, experts)),
            "moe_intermediate_size": draw(st.integers(1, 8)),
            "num_shared_experts": draw(st.integers(0, 2)),
            "attention_bias": draw(st.booleans()), "n_group": 1, "topk_group": 1,
            "tie_word_embeddings": draw(st.booleans()), "max_position_embeddings": 64}


@st.composite
def _bailing_hybrid(draw, model_type: str) -> dict:
    """Ling 3: gated MLA (RoPE) and full-rank Kimi Delta Attention layers, placed by
    layer_types or by layer_group_size; DeepSeek-V3's router with one group, the dense layers
    first or listed by mlp_layer_types."""
    layers, heads, experts = (draw(st.integers(1, 5)), draw(st.integers(1, 3)),
                              draw(st.integers(2, 4)))
    config = {**_mla_kda_moe(draw, layers, heads, experts),
              "head_dim": draw(st.sampled_from([2, 4, 6])),
              "short_conv_kernel_size": draw(st.integers(1, 4))}
    if draw(st.booleans()):
        config["layer_types"] = _layer_types(draw, layers, ["full_attention",
                                                            "linear_attention"])
    else:
        config["layer_group_size"] = draw(st.integers(1, layers + 1))
    if draw(st.booleans()):
        config["mlp_layer_types"] = _layer_types(draw, layers, ["dense", "sparse"])
    else:
        config["first_k_dense_replace"] = draw(st.integers(0, layers))
    return config


@st.composite
def _minimax_m3(draw, model_type: str) -> dict:
    """MiniMax-M3's text model: GQA with per-head QK norms, full_attention and block-sparse
    minimax_m3_sparse layers by layer_types or the legacy sparse_attention_config (its
    sparse_attention_freq and index keys), the indexer's heads dividing the query heads, a top-k
    of blocks from its local blocks up; MoE or dense layers by mlp_layer_types or the legacy
    moe_layer_freq (else all MoE), the shared expert's and the dense MLP's own widths;
    hidden_act any (the class sets silu)."""
    layers, heads = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    experts = draw(st.integers(1, 4))
    config = {"num_hidden_layers": layers, "num_attention_heads": heads,
              "num_key_value_heads": draw(st.sampled_from(
                  [k for k in range(1, heads + 1) if heads % k == 0])),
              "head_dim": draw(st.sampled_from([2, 4, 8])), "rotary_dim": 2,
              "hidden_size": draw(st.integers(1, 4)) * 4,
              "intermediate_size": draw(st.integers(1, 8)),
              "dense_intermediate_size": draw(st.integers(1, 16)),
              "shared_intermediate_size": draw(st.integers(1, 8)),
              "num_local_experts": experts,
              "num_experts_per_tok": draw(st.integers(1, experts)),
              "hidden_act": draw(st.sampled_from(["silu", "gelu"])),
              "tie_word_embeddings": draw(st.booleans()), "max_position_embeddings": 64}
    kinds = _layer_types(draw, layers, ["full_attention", "minimax_m3_sparse"])
    topk = draw(st.integers(1, 3))
    index = {"index_n_heads": draw(st.sampled_from(
                 [k for k in range(1, heads + 1) if heads % k == 0])),
             "index_head_dim": draw(st.sampled_from([2, 4])),
             "index_block_size": draw(st.integers(1, 5)), "index_topk_blocks": topk,
             "index_local_blocks": draw(st.integers(1, topk))}
    if draw(st.booleans()):
        config["layer_types"] = kinds
        config.update(index)
    else:  # the released checkpoint's form (MiniMaxM3VLTextConfig.__post_init__'s legacy keys)
        legacy = dict(zip(("sparse_num_index_heads", "sparse_index_dim", "sparse_block_size",
                           "sparse_topk_blocks", "sparse_local_block"), index.values(),
                          strict=True))
        config["sparse_attention_config"] = {
            **legacy, "sparse_attention_freq": [int(k != "full_attention") for k in kinds]}
    placed = draw(st.sampled_from(["mlp_layer_types", "moe_layer_freq", "default"]))
    if placed != "default":
        kinds = _layer_types(draw, layers, ["dense", "sparse"])
        config[placed] = (kinds if placed == "mlp_layer_types"
                          else [int(kind == "sparse") for kind in kinds])
    return config


@st.composite
def _dots3(draw, model_type: str) -> dict:
    """dots3: DeepSeek-V3's fields with a query latent, indexed (or full) and sliding layers,
    the sliding ones with latent shapes of their own (swa_*), the shared MLP's own width, the
    MoE placed by first_k_dense_replace and moe_layer_freq or by mlp_layer_types."""
    config = draw(_deepseek("deepseek_v3"))
    config.pop("num_nextn_predict_layers", None)
    layers = draw(st.integers(1, 5))
    rope = config["qk_rope_head_dim"]
    config.update(num_hidden_layers=layers, q_lora_rank=draw(st.integers(1, 8)),
                  n_shared_experts=draw(st.integers(1, 2)),
                  n_routed_experts=max(2, config["n_routed_experts"]),
                  shared_experts_intermediate_size=draw(st.integers(1, 8)),
                  index_n_heads=draw(st.integers(1, 3)),
                  index_head_dim=draw(st.integers(rope, 8)),
                  index_topk=draw(st.integers(1, 24)), sliding_window=MIN_WINDOW)
    config["num_experts_per_tok"] = min(config["num_experts_per_tok"], config["n_routed_experts"])
    config.pop("first_k_dense_replace")
    if draw(st.booleans()):
        config["mlp_layer_types"] = draw(st.lists(st.sampled_from(["dense", "sparse"]),
                                                  min_size=layers, max_size=layers))
    else:
        config["first_k_dense_replace"] = draw(st.integers(0, layers))
    kinds = draw(st.lists(st.sampled_from(["global", "sliding_attention"]), min_size=layers,
                          max_size=layers))
    # the config class turns full layers into indexed ones unless use_dsa is false
    glob = draw(st.sampled_from(["indexed_attention", "full_attention"]))
    config["layer_types"] = [glob if kind == "global" else kind for kind in kinds]
    if draw(st.booleans()):
        config["use_dsa"] = draw(st.booleans())
    heads = draw(st.integers(1, 4))
    nope, swa_rope = draw(st.sampled_from([0, 2, 4])), draw(st.sampled_from([2, 4]))
    config.update(swa_num_attention_heads=heads, swa_num_key_value_heads=heads,
                  swa_q_lora_rank=draw(st.integers(1, 8)),
                  swa_kv_lora_rank=draw(st.sampled_from([2, 4, 8])),
                  swa_qk_nope_head_dim=nope, swa_qk_rope_head_dim=swa_rope,
                  swa_head_dim=nope + swa_rope, swa_v_head_dim=draw(st.integers(1, 4)))
    return config


@st.composite
def _beam(draw, model_type: str) -> dict:
    """Beam: sliding and full layers (the full ones with RoPE or without), dense and MoE
    layers by mlp_layer_types, the gate bias per head, biases or none; n_group 1 (the router
    sums the best two scores of a group)."""
    config = draw(_llama_like("llama"))
    layers = config["num_hidden_layers"]
    heads = config["num_attention_heads"]
    kinds = draw(st.lists(st.sampled_from(["sliding_attention", "full_attention"]),
                          min_size=layers, max_size=layers))
    experts = draw(st.integers(2, 4))
    rope = {"rope_type": "default", "rope_theta": 10000.0}
    full = draw(st.sampled_from([None, rope]))
    return {"num_attention_heads": heads,
            "num_key_value_heads": config["num_key_value_heads"] or heads,
            "hidden_size": config["hidden_size"], "head_dim": draw(st.sampled_from([2, 4, 6])),
            "num_hidden_layers": layers, "intermediate_size": draw(st.integers(1, 16)),
            "layer_types": kinds, "sliding_window": draw(st.integers(2, MIN_WINDOW)),
            "rope_parameters": {"sliding_attention": rope, "full_attention": full},
            "mlp_layer_types": draw(st.lists(st.sampled_from(["dense", "sparse"]),
                                             min_size=layers, max_size=layers)),
            "num_experts": experts, "num_experts_per_tok": draw(st.integers(1, experts)),
            "moe_intermediate_size": draw(st.integers(1, 8)), "n_group": 1, "topk_group": 1,
            "attention_bias": draw(st.booleans()),
            "tie_word_embeddings": draw(st.booleans()), "max_position_embeddings": 64}


@st.composite
def _layernorm_types(draw, model_type: str) -> dict:
    heads = draw(_heads())
    d, h = heads["hidden_size"], heads["num_attention_heads"]
    layers = draw(st.integers(1, 3))
    tie = draw(st.booleans())
    act = draw(st.sampled_from(["gelu", "relu"]))
    if model_type == "gpt2":
        return {"n_embd": d, "n_head": h, "n_layer": layers, "n_positions": 16,
                "n_inner": draw(st.none() | st.integers(1, 24)), "activation_function": act,
                "tie_word_embeddings": tie}
    if model_type == "bloom":
        return {"hidden_size": d, "n_head": h, "n_layer": layers, "tie_word_embeddings": tie}
    common = {"hidden_size": d, "num_attention_heads": h, "num_hidden_layers": layers,
              "tie_word_embeddings": tie, "max_position_embeddings": 16}
    if model_type == "opt":
        return {**common, "ffn_dim": draw(st.integers(1, 24)), "activation_function": act,
                "enable_bias": draw(st.booleans()),
                "do_layer_norm_before": draw(st.booleans()),
                "_remove_final_layer_norm": draw(st.booleans())}
    if model_type == "gpt_neox_japanese":  # a last-layer dense_bias; RoPE on rotary_pct
        quarter = d // h % 4 == 0
        return {**common, "intermediate_multiple_size": draw(st.integers(1, 4)),
                "hidden_act": act, "rotary_pct": draw(st.sampled_from([1.0, 0.5] if quarter
                                                                     else [1.0]))}
    if model_type == "gpt_neox":
        return {**common, "intermediate_size": draw(st.integers(1, 24)), "hidden_act": act,
                "use_parallel_residual": draw(st.booleans()),
                "attention_bias": draw(st.booleans())}
    new = draw(st.booleans())  # falcon: the old architecture has 1 or h K/V heads
    return {**common, "new_decoder_architecture": new, "alibi": draw(st.booleans()),
            "num_kv_heads": heads["num_key_value_heads"] if new else None,
            "multi_query": draw(st.booleans()),
            "parallel_attn": new or draw(st.booleans()), "bias": draw(st.booleans()),
            "num_ln_in_parallel_attn": draw(st.sampled_from([1, 2])) if new else None,
            "ffn_hidden_size": draw(st.integers(1, 24)), "activation": act}


def _layer_types(draw, layers: int, kinds: list[str]) -> list[str]:
    return draw(st.lists(st.sampled_from(kinds), min_size=layers, max_size=layers))


@st.composite
def _gemma4_unified_text(draw, config: dict) -> dict:
    """Gemma 4's unified language model: sliding and full layers (the last full), the full ones
    with their own head width and, with attention_k_eq_v, KV heads and keys used as values;
    the last layers without keys and values of their own (as many as leave an earlier layer of
    each kind they read), their MLP doubled or not."""
    layers = config["num_hidden_layers"] = draw(st.integers(1, 5))
    kinds = [*_layer_types(draw, layers - 1, ["full_attention", "sliding_attention"]),
             "full_attention"]
    shared = 0
    while shared < layers - 1 and set(kinds[:layers - shared - 1]) == set(kinds):
        shared += 1
    heads = config["num_attention_heads"]
    return {**config, "layer_types": kinds, "head_dim": draw(st.sampled_from([2, 4, 8])),
            "global_head_dim": draw(st.sampled_from([8, 16])),
            "attention_k_eq_v": draw(st.booleans()),
            "num_global_key_value_heads": draw(st.none() | st.sampled_from(_divisors(heads))),
            "num_kv_shared_layers": draw(st.integers(0, shared)),
            "use_double_wide_mlp": draw(st.booleans()),
            "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
            "hidden_activation": draw(st.sampled_from(["gelu_pytorch_tanh", "silu"]))}


@st.composite
def _gemma3n_text(draw, model_type: str) -> dict:
    """Gemma 3n's language model: sliding and full layers in any order, the last ones without
    keys and values of their own (as many as leave an earlier layer of each kind they read),
    one MLP width or the same one listed per layer, the Gaussian top-k on any layers, and its
    parts: per-layer embeddings, AltUp's streams and LAuReL's rank."""
    layers = draw(st.integers(1, 5))
    kinds = _layer_types(draw, layers, ["full_attention", "sliding_attention"])
    shared = 0
    while shared < layers - 1 and set(kinds[:layers - shared - 1]) == set(kinds):
        shared += 1
    width = draw(st.integers(1, 16))
    return {**draw(_heads()), "num_hidden_layers": layers, "layer_types": kinds,
            "head_dim": draw(st.sampled_from([2, 4, 8])),
            "intermediate_size": draw(st.sampled_from([width, [width] * layers])),
            "activation_sparsity_pattern": draw(st.none() | st.lists(
                st.sampled_from([0.0, 0.95]), min_size=layers, max_size=layers)),
            "num_kv_shared_layers": draw(st.integers(0, shared)),
            "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
            "hidden_activation": draw(st.sampled_from(["gelu_pytorch_tanh", "silu"])),
            "attention_bias": draw(st.booleans()),
            "tie_word_embeddings": draw(st.booleans()), "max_position_embeddings": 64,
            "hidden_size_per_layer_input": draw(st.integers(1, 6)),
            "vocab_size_per_layer_input": draw(st.integers(1, 50)),
            "altup_num_inputs": draw(st.integers(1, 4)),
            "laurel_rank": draw(st.integers(1, 8))}


@st.composite
def _gemma4_text(draw, config: dict) -> dict:
    """Gemma 4's language model: gemma4_unified_text's layers, per-layer embeddings or not
    (hidden_size_per_layer_input 0 builds none) and the MoE block beside the dense MLP or not
    (enable_moe_block: a router over num_experts, top_k_experts of them a token)."""
    width = draw(st.sampled_from([0, 1, 4, 6]))
    moe = draw(st.booleans())
    experts = draw(st.integers(1, 5))
    changes = {"hidden_size_per_layer_input": width,
               "vocab_size_per_layer_input": draw(st.integers(1, 50)),
               "enable_moe_block": moe, "num_experts": experts,
               "top_k_experts": draw(st.integers(1, experts)),
               "moe_intermediate_size": draw(st.integers(1, 16))}
    # Without per-layer embeddings transformers 5.24.0 runs no kv-shared layer beyond one
    # token (Gemma4TextModel's logits_to_keep shortcut slices per_layer_inputs, None there;
    # modeling_gemma4.py), so none is drawn there; calc refuses the kv-shared layers' doubled
    # MLP beside an MoE block (one shared-expert width), so not both
    if not width:
        changes["num_kv_shared_layers"] = 0
    if moe and config["num_kv_shared_layers"] and width:
        changes["use_double_wide_mlp"] = False
    return {**config, **changes}


@st.composite
def _kimi_linear(draw, layers: int) -> dict:
    """Kimi Linear: MLA (NoPE) and Kimi Delta Attention layers, placed by layer_types or by
    linear_attn_config's 1-based lists (as released files do), or left to the class's default;
    DeepSeek-V3's router (2 experts or more: it sums each group's top 2), dense layers first."""
    heads, experts = draw(st.integers(1, 3)), draw(st.integers(2, 4))
    kinds = _layer_types(draw, layers, ["full_attention", "linear_attention"])
    linear = {"head_dim": draw(st.sampled_from([2, 4, 6])), "num_heads": draw(st.integers(1, 3)),
              "short_conv_kernel_size": draw(st.integers(1, 4))}
    placed = draw(st.sampled_from(["layer_types", "linear_attn_config", "default"]))
    config = _mla_kda_moe(draw, layers, heads, experts)
    if placed == "layer_types":
        config.update(layer_types=kinds, linear_head_dim=linear["head_dim"],
                      linear_num_heads=linear["num_heads"],
                      linear_conv_kernel_dim=linear["short_conv_kernel_size"])
    else:
        if placed == "linear_attn_config":
            linear.update(
                full_attn_layers=[i + 1 for i, k in enumerate(kinds) if k == "full_attention"],
                kda_layers=[i + 1 for i, k in enumerate(kinds) if k == "linear_attention"])
        config["linear_attn_config"] = linear
    if draw(st.booleans()):
        config["mlp_layer_types"] = _layer_types(draw, layers, ["dense", "sparse"])
    else:
        config["first_k_dense_replace"] = draw(st.integers(0, layers))
    return config


@st.composite
def _longcat_flash(draw, model_type: str) -> dict:
    """LongCat-Flash: latent attention twice per decoder layer, two dense MLPs, one MoE whose
    router scores FFN and zero-computation experts; top-k drawn so that k·E/(E + E_0) is whole
    (calc's expected FFN experts a token, docs/custom-models.md)."""
    heads, experts = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    zero = draw(st.integers(1 if experts == 1 else 0, 4))
    pool = experts + zero
    # top-k >= 2: with moe_topk 1, LongcatFlashExperts.forward squeezes the top-k axis away
    # (expert_mask[i].squeeze(0)) and fails to unpack torch.where (transformers 5.24.0)
    top_k = draw(st.sampled_from([k for k in range(2, pool + 1) if k * experts % pool == 0]))
    rope = draw(st.sampled_from([2, 4]))  # even: the rotation pairs channels
    layers = draw(st.integers(1, 2))
    depth = ({"num_hidden_layers": 2 * layers} if draw(st.booleans())
             else {"num_layers": layers})
    return {"num_attention_heads": heads,
            "num_key_value_heads": draw(st.sampled_from([heads, None])),
            "hidden_size": heads * draw(st.integers(1, 4)), **depth,
            "ffn_hidden_size": draw(st.integers(1, 16)),
            "expert_ffn_hidden_size": draw(st.integers(1, 8)),
            "q_lora_rank": draw(st.integers(1, 8)),
            "kv_lora_rank": draw(st.sampled_from([2, 4, 8])),
            "qk_nope_head_dim": draw(st.sampled_from([0, 2, 4])), "qk_rope_head_dim": rope,
            "head_dim": rope, "v_head_dim": draw(st.integers(1, 4)),
            "n_routed_experts": experts, "zero_expert_num": zero, "moe_topk": top_k,
            "router_bias": draw(st.booleans()), "attention_bias": draw(st.booleans()),
            "tie_word_embeddings": draw(st.booleans()), "max_position_embeddings": 64}


@st.composite
def _zamba(draw, model_type: str) -> dict:
    """Zamba and Zamba2: Mamba layers, some hybrid (the shared block before them) or none,
    grouped key/value heads; Zamba's head width given or 2·hidden / heads, its layer types
    given or its period rule; Zamba2's sets (fewer or more than the depths), adapters on the
    attention (whose adapters need kv heads = heads and heads dividing 2·hidden: transformers
    adds their 2·hidden outputs to q, k, v), biases, RoPE. Zamba2 tied (untied, it refuses)."""
    layers = draw(st.integers(3, 6))
    hidden = draw(st.sampled_from([4, 8]))
    heads = draw(st.sampled_from([1, 2, 4]))
    kv = draw(st.sampled_from([k for k in (1, 2, 4) if heads % k == 0]))
    config = {"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
              "num_key_value_heads": kv, "intermediate_size": draw(st.integers(1, 16)),
              "vocab_size": draw(st.integers(8, 64)), "max_position_embeddings": 64,
              "mamba_d_state": draw(st.integers(1, 4)), "mamba_d_conv": draw(st.integers(1, 4)),
              "hidden_act": draw(st.sampled_from(["gelu", "silu"]))}
    types = None
    if draw(st.booleans()):
        types = _layer_types(draw, layers, ["mamba", "hybrid"])
        config["layers_block_type"] = types
    if model_type == "zamba":
        m_heads = draw(st.sampled_from([1, 2, 4]))
        config.update(n_mamba_heads=m_heads, mamba_expand=draw(st.sampled_from([1, 2])),
                      mamba_dt_rank=draw(st.sampled_from(["auto", 1, 3])),
                      mamba_conv_bias=draw(st.booleans()),
                      mamba_proj_bias=draw(st.booleans()),
                      tie_word_embeddings=draw(st.booleans()),
                      attention_head_dim=draw(st.none() | st.integers(1, 4)))
        if types is None:  # ZambaConfig's rule: layer 2, then 3 + i for i % period == offset
            period = config["attn_layer_period"] = draw(st.integers(1, 3))
            offset = config["attn_layer_offset"] = draw(st.integers(0, period - 1))
            types = ["mamba", "mamba", "hybrid"] + ["hybrid" if i % period == offset else "mamba"
                                                    for i in range(layers - 3)]
        if types.count("hybrid") == 1:  # transformers' tie then finds nothing and refuses
            config["tie_word_embeddings"] = False
        return config
    if types is None:  # Zamba2Config's default list has 54 layers
        config["layers_block_type"] = _layer_types(draw, layers, ["mamba", "hybrid"])
    m_heads = draw(st.sampled_from([1, 2, 4]))
    adapters = kv == heads and draw(st.booleans())
    return {**config, "n_mamba_heads": m_heads,
            "mamba_ngroups": draw(st.sampled_from([g for g in (1, 2) if m_heads % g == 0])),
            "chunk_size": draw(st.sampled_from([2, 4, 256])),
            "num_mem_blocks": draw(st.integers(1, 3)),
            "adapter_rank": draw(st.integers(1, 4)),
            "use_shared_attention_adapter": adapters,
            "add_bias_linear": draw(st.booleans()), "use_mem_rope": draw(st.booleans())}


@st.composite
def _per_layer_types(draw, model_type: str) -> dict:
    """The types with per-layer structure, mixtures of experts and other mixers."""
    layers = draw(st.integers(1, 4))
    if model_type in ("mamba", "mamba2"):
        heads = draw(st.integers(1, 3))
        hidden = draw(st.sampled_from([2, 4, 6]))
        config = {"hidden_size": hidden, "num_hidden_layers": layers, "expand": 2,
                  "state_size": draw(st.integers(1, 4)), "conv_kernel": draw(st.integers(1, 4)),
                  "use_bias": draw(st.booleans()), "use_conv_bias": draw(st.booleans()),
                  "tie_word_embeddings": draw(st.booleans())}
        if model_type == "mamba":
            return {**config, "time_step_rank": draw(st.sampled_from(["auto", 1, 3]))}
        heads = draw(st.sampled_from([h for h in (1, 2, 4) if 2 * hidden % h == 0]))
        return {**config, "num_heads": heads, "head_dim": 2 * hidden // heads,
                "n_groups": draw(st.sampled_from([g for g in (1, 2) if heads % g == 0])),
                "chunk_size": draw(st.sampled_from([2, 4, 256]))}
    if model_type in ("zamba", "zamba2"):
        return draw(_zamba(model_type))
    if model_type == "rwkv":  # attention_hidden_size and intermediate_size given or derived
        return {"hidden_size": draw(st.integers(1, 8)), "num_hidden_layers": layers,
                "attention_hidden_size": draw(st.none() | st.integers(1, 8)),
                "intermediate_size": draw(st.none() | st.integers(1, 16)),
                "context_length": draw(st.integers(1, 64)),
                "tie_word_embeddings": draw(st.booleans())}
    if model_type == "xlstm":  # the mLSTM's widths from factors, the FFN's rounding, chunks
        heads, hidden = draw(st.integers(1, 3)), draw(st.integers(2, 12))
        # int(hidden · factor) is the width: a factor half a unit above a multiple of heads,
        # or a plain one whose width num_heads happens to divide
        widths = [heads * draw(st.integers(1, 3)) for _ in range(2)]
        plain = draw(st.sampled_from([0.5, 1.0, 0.25]))
        factors = [(w + 0.5) / hidden for w in widths]
        if int(hidden * plain) >= heads and int(hidden * plain) % heads == 0:
            factors[draw(st.integers(0, 1))] = plain
        config = {"hidden_size": hidden, "num_heads": heads, "qk_dim_factor": factors[0],
                  "v_dim_factor": factors[1],
                  "ffn_proj_factor": draw(st.sampled_from([1.0, 1.3, 2.667])),
                  "ffn_round_up_to_multiple_of": draw(st.sampled_from([1, 4, 64])),
                  "chunk_size": draw(st.sampled_from([2, 4, 64])),
                  "weight_mode": draw(st.sampled_from(["single", "fused"])),
                  "tie_word_embeddings": draw(st.booleans())}
        if draw(st.booleans()):  # the 7B file's names: num_blocks, embedding_dim
            return {**config, "num_blocks": layers, "embedding_dim": hidden}
        return {**config, "num_hidden_layers": layers}
    if model_type == "recurrent_gemma":  # lru_width and the gates' blocks (the heads)
        heads = draw(st.integers(1, 3))
        head_dim = draw(st.none() | st.integers(1, 6))  # given, or hidden_size // heads
        return {"hidden_size": heads * draw(st.integers(1, 3)), "num_attention_heads": heads,
                **({"head_dim": head_dim} if head_dim else {}),
                "num_key_value_heads": draw(st.none() | st.sampled_from(
                    [k for k in (1, 2, 3) if heads % k == 0])),
                "lru_width": draw(st.none() | st.integers(1, 3).map(lambda w: heads * w)),
                "num_hidden_layers": layers, "intermediate_size": draw(st.integers(2, 16)),
                "conv1d_width": draw(st.integers(1, 4)),
                "attention_window_size": draw(st.integers(MIN_WINDOW, 32)),
                "block_types": draw(st.lists(st.sampled_from(["recurrent", "attention"]),
                                             min_size=1, max_size=3)),
                "hidden_activation": draw(st.sampled_from(["gelu_pytorch_tanh", "silu"])),
                "attention_bias": draw(st.booleans()),
                "tie_word_embeddings": draw(st.booleans())}
    config = {**draw(_heads()), "num_hidden_layers": layers,
              "intermediate_size": draw(st.integers(1, 16)),
              "tie_word_embeddings": draw(st.booleans()), "max_position_embeddings": 64,
              "attention_bias": draw(st.booleans())}
    experts = draw(st.integers(1, 4))
    moe = {"num_experts_per_tok": draw(st.integers(1, experts))}
    if model_type == "gemma3_text":
        config["head_dim"] = draw(st.sampled_from([2, 4, 8]))
        config["layer_types"] = _layer_types(draw, layers, ["full_attention",
                                                             "sliding_attention"])
        return {**config, "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "hidden_activation": draw(st.sampled_from(["gelu_pytorch_tanh", "silu"]))}
    if model_type in ("gemma4_unified_text", "gemma4_text"):
        drawn = draw(_gemma4_unified_text(config))
        return drawn if model_type == "gemma4_unified_text" else draw(_gemma4_text(drawn))
    if model_type == "gpt_oss":
        config["layer_types"] = _layer_types(draw, layers, ["full_attention",
                                                             "sliding_attention"])
        return {**config, **moe, "num_local_experts": experts, "head_dim": 4,
                "sliding_window": draw(st.integers(MIN_WINDOW, 32))}
    if model_type == "llama4_text":
        config["head_dim"] = draw(st.sampled_from([2, 4, 8]))
        return {**config, **moe, "num_local_experts": experts,
                "intermediate_size_mlp": draw(st.integers(1, 16)),
                "interleave_moe_layer_step": draw(st.integers(1, 2)),
                "no_rope_layer_interval": draw(st.integers(1, 3)),
                "attention_chunk_size": draw(st.none() | st.integers(MIN_WINDOW, 32)),
                "use_qk_norm": draw(st.booleans())}
    if model_type in ("qwen3_5_text", "qwen3_5_moe_text"):  # qwen3_next's without placement
        drawn = draw(_per_layer_types("qwen3_next"))
        for key in ("mlp_only_layers", "decoder_sparse_step"):
            drawn.pop(key)
        if model_type == "qwen3_5_text":
            for key in ("num_experts", "num_experts_per_tok", "moe_intermediate_size",
                        "shared_expert_intermediate_size"):
                drawn.pop(key)
        else:
            drawn.pop("intermediate_size")
            drawn["num_experts"] = max(drawn["num_experts"], drawn["num_experts_per_tok"])
        return drawn
    if model_type == "kimi_linear":
        return draw(_kimi_linear(layers))
    if model_type == "minimax":  # lightning attention takes the attention's heads and width
        config.pop("attention_bias")
        return {**config, **moe, "num_local_experts": experts,
                "head_dim": draw(st.none() | st.sampled_from([2, 4, 8])),
                "layer_types": draw(st.none() | st.just(_layer_types(
                    draw, layers, ["full_attention", "linear_attention"]))),
                "block_size": draw(st.sampled_from([1, 3, 4, 256])),
                "sliding_window": draw(st.none() | st.integers(MIN_WINDOW, 32))}
    if model_type == "qwen3_next":
        k_heads = draw(st.integers(1, 2))
        return {**config, **moe, "num_experts": draw(st.sampled_from([0, experts])),
                "head_dim": draw(st.sampled_from([2, 4])),
                "layer_types": _layer_types(draw, layers, ["full_attention",
                                                           "linear_attention"]),
                "linear_num_key_heads": k_heads,
                "linear_num_value_heads": k_heads * draw(st.integers(1, 2)),
                "linear_key_head_dim": draw(st.sampled_from([2, 4])),
                "linear_value_head_dim": draw(st.sampled_from([2, 4])),
                "linear_conv_kernel_dim": draw(st.integers(1, 4)),
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "shared_expert_intermediate_size": draw(st.integers(1, 8)),
                "decoder_sparse_step": draw(st.integers(1, 2)),
                "mlp_only_layers": draw(st.lists(st.integers(0, layers - 1), max_size=2))}
    if model_type in ("olmo3", "vaultgemma", "cohere2", "exaone4"):
        config["layer_types"] = _layer_types(draw, layers, ["full_attention",
                                                             "sliding_attention"])
        config["sliding_window"] = draw(st.integers(MIN_WINDOW, 32))
        if model_type == "vaultgemma":
            config["hidden_activation"] = config.pop("hidden_act", "gelu_pytorch_tanh")
            config["head_dim"] = draw(st.sampled_from([2, 4, 8]))
        if model_type == "exaone4":
            config.pop("attention_bias")
        return config
    if model_type == "smollm3":
        return {**config, "mlp_bias": draw(st.booleans()),
                "no_rope_layer_interval": draw(st.integers(1, 3)),
                "use_sliding_window": draw(st.booleans()),
                "sliding_window": draw(st.integers(MIN_WINDOW, 32))}
    if model_type == "bitnet":
        return {**config, "hidden_act": draw(st.sampled_from(["relu2", "silu"]))}
    if model_type == "glm4_moe":  # group routing sums each group's top 2 scores
        experts = max(2, experts)
        return {**config, **moe, "n_routed_experts": experts, "n_group": 1, "topk_group": 1,
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "n_shared_experts": draw(st.integers(0, 2)),
                "first_k_dense_replace": draw(st.integers(0, layers)),
                "use_qk_norm": draw(st.booleans()), "head_dim": draw(st.sampled_from([2, 4])),
                "num_nextn_predict_layers": 0}
    if model_type in ("granitemoe", "granitemoeshared", "minimax_m2"):
        if model_type == "granitemoeshared":
            config["shared_intermediate_size"] = draw(st.integers(0, 8))
        if model_type == "minimax_m2":
            config.pop("attention_bias")
            config["head_dim"] = draw(st.sampled_from([2, 4, 8]))
        return {**config, **moe, "num_local_experts": experts}
    if model_type == "glm4_moe_lite":  # DeepSeek-V3's fields, placed by mlp_layer_types
        drawn = draw(_deepseek("deepseek_v3"))
        for key in ("first_k_dense_replace", "num_nextn_predict_layers"):
            drawn.pop(key)
        return {**drawn, "mlp_layer_types": _layer_types(draw, drawn["num_hidden_layers"],
                                                         ["dense", "sparse"])}
    if model_type in ("deepseek_v32", "glm_moe_dsa"):  # DeepSeek-V3's fields and DSA's indexer
        drawn = draw(_deepseek("deepseek_v3"))
        drawn.pop("num_nextn_predict_layers")
        layers, rope = drawn["num_hidden_layers"], drawn["qk_rope_head_dim"]
        drawn.update(q_lora_rank=draw(st.integers(1, 8)), index_n_heads=draw(st.integers(1, 3)),
                     index_head_dim=draw(st.integers(rope, 8)),
                     index_topk=draw(st.integers(1, 24)))
        if model_type == "glm_moe_dsa":  # layers after the first may reuse a selection
            drawn["indexer_types"] = ["full"] + [draw(st.sampled_from(["full", "shared"]))
                                                 for _ in range(layers - 1)]
        return drawn
    if model_type == "hy_v4":  # DSA's layers in hc_mult hyper-connected streams
        drawn = draw(_deepseek("deepseek_v3"))
        for key in ("first_k_dense_replace", "num_nextn_predict_layers"):
            drawn.pop(key)
        layers, rope = drawn["num_hidden_layers"], drawn["qk_rope_head_dim"]
        drawn.update(q_lora_rank=draw(st.integers(1, 8)), index_n_heads=draw(st.integers(1, 3)),
                     index_head_dim=draw(st.integers(rope, 8)),
                     index_topk=draw(st.integers(1, 24)), hc_mult=draw(st.integers(1, 4)),
                     mlp_layer_types=_layer_types(draw, layers, ["dense", "sparse"]))
        if draw(st.booleans()):  # else configuration_hy_v4.py's rule
            drawn["indexer_types"] = ["full"] + [draw(st.sampled_from(["full", "shared"]))
                                                 for _ in range(layers - 1)]
        return drawn
    if model_type == "solar_open":  # its router sums the top 2 scores of each expert group
        config.pop("intermediate_size")
        return {**config, **moe, "n_routed_experts": max(2, experts),
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "n_shared_experts": draw(st.integers(0, 2)),
                "head_dim": draw(st.sampled_from([2, 4, 8]))}
    if model_type in ("hyperclovax", "jais2"):
        act = ["silu", "gelu", "relu2"] if model_type == "jais2" else ["silu", "relu"]
        config.update(mlp_bias=draw(st.booleans()), hidden_act=draw(st.sampled_from(act)),
                      head_dim=draw(st.none() | st.sampled_from([2, 4, 8])))
        if model_type == "hyperclovax":
            config["use_post_norm"] = draw(st.booleans())
        return config
    if model_type == "youtu":  # latent attention: minicpm3's fields without mlp_bias
        drawn = draw(family_config("minicpm3", MIN_WINDOW))
        drawn.pop("mlp_bias", None)
        return drawn
    if model_type == "exaone_moe":  # group routing sums each group's top 2 scores
        config.pop("attention_bias")
        return {**config, **moe, "num_experts": max(2, experts),
                "layer_types": _layer_types(draw, layers, ["full_attention",
                                                           "sliding_attention"]),
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "mlp_layer_types": _layer_types(draw, layers, ["dense", "sparse"]),
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "num_shared_experts": draw(st.integers(0, 2)),
                "head_dim": draw(st.sampled_from([2, 4, 8]))}
    if model_type == "lfm2_moe":
        config.pop("attention_bias")
        return {**config, **moe, "num_experts": experts,
                "layer_types": _layer_types(draw, layers, ["full_attention", "conv"]),
                "num_dense_layers": draw(st.integers(0, layers)),
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "conv_bias": draw(st.booleans()), "conv_L_cache": draw(st.integers(1, 4))}
    if model_type == "nemotron_h":  # mixer blocks, every one with an MLP or MoE after or none
        blocks: list[str] = []
        with_ffn = draw(st.booleans())
        for _ in range(layers):
            blocks.append(draw(st.sampled_from(["linear_attention", "full_attention"])))
            blocks += [draw(st.sampled_from(["mlp", "moe"]))] if with_ffn else []
        m_heads = draw(st.sampled_from([1, 2, 4]))
        experts = max(2, experts)  # group routing sums each group's top 2 scores
        return {**{k: config[k] for k in ("num_attention_heads", "hidden_size",
                                          "num_key_value_heads", "tie_word_embeddings",
                                          "intermediate_size")},
                "layers_block_type": blocks, "head_dim": draw(st.sampled_from([2, 4])),
                "mlp_hidden_act": draw(st.sampled_from(["relu2", "silu", "gelu"])),
                "mlp_bias": "moe" not in blocks and draw(st.booleans()),
                "ssm_state_size": draw(st.integers(1, 4)), "mamba_num_heads": m_heads,
                "mamba_head_dim": draw(st.sampled_from([1, 2, 4])),
                "n_groups": draw(st.sampled_from([g for g in (1, 2) if m_heads % g == 0])),
                "conv_kernel": draw(st.integers(1, 4)), "use_conv_bias": draw(st.booleans()),
                "use_bias": draw(st.booleans()), "chunk_size": draw(st.sampled_from([2, 4, 256])),
                "n_routed_experts": experts,
                "num_experts_per_tok": draw(st.integers(1, experts)),
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "moe_shared_expert_intermediate_size": draw(st.integers(1, 8))}
    if model_type == "olmo_hybrid":  # qwen3_next's linear widths; both layer types present
        k_heads = draw(st.integers(1, 2))
        layers = max(layers, 2)
        kinds = _layer_types(draw, layers, ["full_attention", "linear_attention"])
        kinds[0], kinds[-1] = "linear_attention", "full_attention"
        return {**config, "num_hidden_layers": layers, "layer_types": kinds,
                "linear_num_key_heads": k_heads,
                "linear_num_value_heads": k_heads * draw(st.integers(1, 2)),
                "linear_key_head_dim": draw(st.sampled_from([2, 4])),
                "linear_value_head_dim": draw(st.sampled_from([2, 4])),
                "linear_conv_kernel_dim": draw(st.integers(1, 4))}
    if model_type == "granitemoehybrid":  # bamba's Mamba-2 fields, experts or none
        drawn = draw(_per_layer_types("bamba"))
        drawn.pop("attn_layer_indices")
        drawn.pop("mlp_bias")
        return {**drawn, **moe, "num_local_experts": draw(st.sampled_from([0, experts])),
                "layer_types": _layer_types(draw, drawn["num_hidden_layers"],
                                            ["mamba", "attention"]),
                "shared_intermediate_size": draw(st.integers(1, 8)),
                "position_embedding_type": draw(st.sampled_from([None, "rope"]))}
    if model_type == "bamba":  # the Mamba heads tile expand × hidden_size
        expand = draw(st.sampled_from([1, 2]))
        m_heads = draw(st.sampled_from([h for h in (1, 2, 4)
                                        if expand * config["hidden_size"] % h == 0]))
        return {**config, "attn_layer_indices": draw(st.lists(st.integers(0, layers - 1),
                                                               max_size=2, unique=True)),
                "mlp_bias": draw(st.booleans()), "mamba_n_heads": m_heads,
                "mamba_expand": expand, "mamba_d_head": "auto",
                "mamba_n_groups": draw(st.sampled_from([g for g in (1, 2) if m_heads % g == 0])),
                "mamba_d_state": draw(st.integers(1, 4)), "mamba_d_conv": draw(st.integers(1, 4)),
                "mamba_chunk_size": draw(st.sampled_from([2, 4, 256])),
                "mamba_conv_bias": draw(st.booleans()), "mamba_proj_bias": draw(st.booleans())}
    if model_type == "hy_v3":
        kinds = _layer_types(draw, layers, ["dense", "sparse"])
        return {**config, **moe, "num_experts": experts, "mlp_layer_types": kinds,
                "mlp_bias": "sparse" not in kinds and draw(st.booleans()),
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "num_shared_experts": draw(st.integers(0, 2)),
                "head_dim": draw(st.sampled_from([2, 4, 8]))}
    if model_type == "mellum":
        return {**config, **moe, "num_experts": experts,
                "layer_types": _layer_types(draw, layers, ["full_attention",
                                                           "sliding_attention"]),
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "mlp_layer_types": _layer_types(draw, layers, ["dense", "sparse"]),
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "head_dim": draw(st.sampled_from([2, 4, 8]))}
    if model_type == "lara_mini":  # qwen3_5_moe_text's fields with sliding layers
        drawn = draw(_per_layer_types("qwen3_5_moe_text"))
        drawn["layer_types"] = _layer_types(draw, drawn["num_hidden_layers"], [
            "full_attention", "sliding_attention", "linear_attention"])
        return {**drawn, "sliding_window": draw(st.integers(MIN_WINDOW, 32))}
    if model_type == "granitemoe_swa":  # granite_swa's layers, granitemoeshared's experts
        return {**config, **moe, "num_local_experts": experts,
                "shared_intermediate_size": draw(st.integers(0, 8)),
                "head_dim": draw(st.sampled_from([2, 4, 8])),
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "layer_types": _layer_types(draw, layers, ["full_attention",
                                                           "sliding_attention"]),
                "layer_rope_theta": draw(st.lists(st.sampled_from([0.0, 10000.0]),
                                                  min_size=layers, max_size=layers))}
    if model_type == "kolibri1":
        config.pop("attention_bias")
        config.pop("intermediate_size")
        return {**config, **moe, "num_experts": experts,
                "layer_types": _layer_types(draw, layers, ["full_attention",
                                                           "sliding_attention"]),
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "shared_expert_intermediate_size": draw(st.integers(1, 8)),
                "head_dim": draw(st.sampled_from([2, 4, 8]))}
    if model_type == "afmoe":
        config.pop("attention_bias")
        return {**config, **moe, "num_experts": experts,
                "layer_types": _layer_types(draw, layers, ["full_attention",
                                                           "sliding_attention"]),
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "num_dense_layers": draw(st.integers(0, layers)),
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "num_shared_experts": draw(st.integers(0, 2)),
                "head_dim": draw(st.sampled_from([2, 4, 8]))}
    if model_type == "aria_text":
        return {**config, "moe_num_experts": experts, "moe_topk": moe["num_experts_per_tok"],
                "moe_num_shared_experts": draw(st.integers(0, 2)),
                "head_dim": draw(st.sampled_from([2, 4, 8]))}
    if model_type == "cohere_compass_text":  # cohere2's layers, RoPE named per layer type
        kinds = _layer_types(draw, layers, ["full_attention", "sliding_attention"])
        return {**config, "layer_types": kinds,
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "rope_parameters": {kind: {"rope_type": "default", "rope_theta": 10000.0}
                                    for kind in ("full_attention", "sliding_attention")}}
    if model_type in ("xglm", "biogpt"):  # fairseq decoders: LayerNorm, biases, plain FFN
        act = draw(st.sampled_from(["gelu", "relu"]))
        names = (("d_model", "attention_heads", "num_layers", "ffn_dim", "activation_function")
                 if model_type == "xglm" else
                 ("hidden_size", "num_attention_heads", "num_hidden_layers",
                  "intermediate_size", "hidden_act"))
        # XGLM's sinusoids divide by d/2 − 1: at least 4 wide
        d = config["num_attention_heads"] * draw(st.sampled_from([4, 8]))
        values = (d, config["num_attention_heads"], layers, draw(st.integers(1, 24)), act)
        return {**dict(zip(names, values, strict=True)), "max_position_embeddings": 16,
                "tie_word_embeddings": config["tie_word_embeddings"]}
    if model_type == "ctrl":
        return {"n_embd": config["hidden_size"], "n_head": config["num_attention_heads"],
                "n_layer": layers, "dff": draw(st.integers(1, 24)), "n_positions": 16,
                "tie_word_embeddings": config["tie_word_embeddings"]}
    if model_type == "cohere2_moe":
        kinds = _layer_types(draw, layers, ["dense", "sparse"])
        return {**config, **moe, "num_experts": experts, "mlp_layer_types": kinds,
                "layer_types": _layer_types(draw, layers, ["full_attention",
                                                           "sliding_attention"]),
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "prefix_dense_intermediate_size": draw(st.integers(1, 8)),
                "num_shared_experts": draw(st.integers(0, 2)),
                "head_dim": draw(st.sampled_from([2, 4, 8])),
                "rms_norm_eps": draw(st.sampled_from([None, 1e-5]))}
    if model_type == "cwm":
        config.pop("attention_bias")
        config["layer_types"] = draw(st.none() | st.just(_layer_types(
            draw, layers, ["full_attention", "sliding_attention"])))
        return {**config, "mlp_bias": draw(st.booleans()),
                "head_dim": draw(st.sampled_from([2, 4])),
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "bos_token_id": 0, "eos_token_id": 0}  # CwmConfig wants whole numbers
    if model_type == "phimoe":  # its sparsemixer router always picks 2 experts
        return {**config, "num_local_experts": max(2, experts), "num_experts_per_tok": 2,
                "lm_head_bias": draw(st.booleans()),
                "sliding_window": draw(st.none() | st.integers(MIN_WINDOW, 32))}
    if model_type == "ernie4_5_moe":
        config.pop("attention_bias")
        return {**config, "moe_k": moe["num_experts_per_tok"], "moe_num_experts": experts,
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "moe_num_shared_experts": draw(st.integers(0, 2)),
                "moe_layer_start_index": draw(st.integers(0, layers - 1)),
                "moe_layer_interval": draw(st.integers(1, 2))}
    if model_type == "jamba":
        config.pop("attention_bias")
        period, e_period = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        return {**config, **moe, "num_experts": experts,
                "attn_layer_period": period, "attn_layer_offset": draw(st.integers(0, period - 1)),
                "expert_layer_period": e_period,
                "expert_layer_offset": draw(st.integers(0, e_period - 1)),
                "mamba_d_state": draw(st.integers(1, 4)), "mamba_d_conv": draw(st.integers(1, 4)),
                "mamba_expand": draw(st.integers(1, 2)),
                "mamba_dt_rank": draw(st.sampled_from(["auto", 1, 3])),
                "mamba_conv_bias": draw(st.booleans()), "mamba_proj_bias": draw(st.booleans())}
    if model_type == "lfm2":
        config.pop("attention_bias")
        placement = ({"layer_types": _layer_types(draw, layers, ["full_attention", "conv"])}
                     if draw(st.booleans()) else
                     {"full_attn_idxs": draw(st.lists(st.integers(0, layers - 1), max_size=2))})
        return {**config, **placement, "conv_bias": draw(st.booleans()),
                "intermediate_size": draw(st.integers(2, 16)),  # 2/3 of it stays >= 1
                "conv_L_cache": draw(st.integers(1, 4)),
                "block_auto_adjust_ff_dim": draw(st.booleans()),
                "block_ffn_dim_multiplier": draw(st.sampled_from([1, 1.0, 1.5])),
                "block_multiple_of": draw(st.integers(1, 4))}
    if model_type == "lfm3":  # layer_types drawn, or the class's rule (conv first)
        types = (_layer_types(draw, layers, ["full_attention", "sliding_attention", "conv"])
                 if draw(st.booleans()) else None)
        return {**config, "layer_types": types, "conv_bias": draw(st.booleans()),
                "conv_L_cache": draw(st.integers(1, 4)),
                "head_dim": draw(st.sampled_from([4, 8])),  # half rotated on full layers
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "use_sandwich_norm": draw(st.booleans()),
                "use_attention_gate": draw(st.booleans())}
    if model_type == "laguna":  # one query-head count per attention kind, a multiple of kv
        kv = config["num_key_value_heads"]
        types = (_layer_types(draw, layers, ["full_attention", "sliding_attention"])
                 if draw(st.booleans()) else None)
        per_kind = {t: kv * draw(st.integers(1, 3))
                    for t in ("full_attention", "sliding_attention")}
        heads = ([per_kind[t] for t in types or ["full_attention"] * layers]
                 if draw(st.booleans()) else None)
        gating = draw(st.sampled_from([True, "per-head", False, "per-element"]))
        mlp = (draw(st.lists(st.sampled_from(["dense", "sparse"]), min_size=layers,
                             max_size=layers)) if draw(st.booleans()) else None)
        return {**config, **moe, "num_experts": experts, "layer_types": types,
                "num_attention_heads_per_layer": heads, "gating": gating,
                "attention_bias": config["attention_bias"] and gating in (True, "per-head"),
                "head_dim": draw(st.sampled_from([4, 8])),  # half rotated on full layers
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "mlp_layer_types": mlp, "moe_intermediate_size": draw(st.integers(1, 8)),
                "shared_expert_intermediate_size": draw(st.integers(1, 8))}
    if model_type == "mimo_v2_flash":  # sliding layers: twice the KV heads, which divide h
        kv = draw(st.integers(1, 2))
        types = (_layer_types(draw, layers, ["full_attention", "sliding_attention"])
                 if draw(st.booleans()) else None)
        mlp = (_layer_types(draw, layers, ["dense", "sparse"]) if draw(st.booleans()) else None)
        return {**config, **moe, "num_attention_heads": 2 * kv * draw(st.integers(1, 2)),
                "num_key_value_heads": kv, "n_routed_experts": max(2, experts),  # topk(2)
                "n_group": 1, "topk_group": 1, "layer_types": types, "mlp_layer_types": mlp,
                "head_dim": draw(st.sampled_from([4, 6, 8])),  # a third rotated
                "v_head_dim": draw(st.integers(1, 8)),
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "moe_intermediate_size": draw(st.integers(1, 8))}
    if model_type == "dots1":  # group routing sums each group's top 2 scores
        experts = max(2, experts)
        config["layer_types"] = _layer_types(draw, layers, ["full_attention",
                                                             "sliding_attention"])
        return {**config, **moe, "n_routed_experts": experts, "n_group": 1, "topk_group": 1,
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "n_shared_experts": draw(st.integers(0, 2)),
                "first_k_dense_replace": draw(st.integers(0, layers)),
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "head_dim": draw(st.sampled_from([2, 4]))}
    if model_type == "dbrx":
        return {"d_model": config["hidden_size"], "n_heads": config["num_attention_heads"],
                "n_layers": layers, "max_seq_len": 64, "tie_word_embeddings": False,
                "attn_config": {"kv_n_heads": config["num_key_value_heads"], "rope_theta": 1e4,
                                "clip_qkv": 8.0},
                "ffn_config": {"ffn_hidden_size": draw(st.integers(1, 16)),
                               "moe_num_experts": experts, "moe_top_k": moe["num_experts_per_tok"],
                               "ffn_act_fn": {"name": draw(st.sampled_from(["silu", "gelu"]))}}}
    if model_type == "jetmoe":  # its query heads are num_key_value_heads × top-k
        return {"hidden_size": config["hidden_size"], "num_hidden_layers": layers,
                "num_key_value_heads": config["num_key_value_heads"],
                "kv_channels": draw(st.sampled_from([2, 4, 8])),
                "intermediate_size": config["intermediate_size"], "num_local_experts": experts,
                "num_experts_per_tok": moe["num_experts_per_tok"],
                "max_position_embeddings": 64,
                "tie_word_embeddings": config["tie_word_embeddings"],
                "activation_function": draw(st.sampled_from(["silu", "gelu"]))}
    if model_type == "hunyuan_v1_moe":
        layer_topk = [moe["num_experts_per_tok"]] * layers
        return {**config, "num_experts": experts, "head_dim": draw(st.sampled_from([2, 4, 8])),
                "moe_topk": draw(st.sampled_from([layer_topk, layer_topk[0]])),
                "eod_token_id": None, "sep_token_id": None}
    if model_type == "flint":  # full/sliding layers, MoE outside mlp_only_layers, or none
        config["layer_types"] = _layer_types(draw, layers, ["full_attention",
                                                             "sliding_attention"])
        return {**config, **moe, "num_experts": draw(st.sampled_from([0, experts])),
                "head_dim": draw(st.sampled_from([2, 4, 8])),
                "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
                "moe_intermediate_size": draw(st.integers(1, 8)),
                "shared_expert_intermediate_size": draw(st.integers(1, 8)),
                "decoder_sparse_step": draw(st.integers(1, 2)),
                "mlp_only_layers": draw(st.none() | st.lists(st.integers(0, layers - 1),
                                                             max_size=2, unique=True))}
    if model_type == "falcon_h1":
        m_heads = draw(st.integers(1, 3))
        bias = draw(st.booleans())
        return {**config, "head_dim": draw(st.sampled_from([2, 4])),
                "mlp_bias": draw(st.booleans()), "mamba_n_heads": m_heads,
                "mamba_d_ssm": m_heads * draw(st.integers(1, 3)), "mamba_d_head": "auto",
                "mamba_n_groups": draw(st.sampled_from([g for g in (1, 3) if m_heads % g == 0])),
                "mamba_d_state": draw(st.integers(1, 4)), "mamba_d_conv": draw(st.integers(1, 4)),
                "mamba_chunk_size": draw(st.sampled_from([2, 4, 256])),
                "mamba_conv_bias": draw(st.booleans()), "mamba_proj_bias": bias,
                "projectors_bias": bias, "mamba_rms_norm": draw(st.booleans()),
                "mamba_norm_before_gate": draw(st.booleans())}
    return {**config, **moe, "num_experts": experts}  # olmoe


@st.composite
def _deepseek_v4(draw, model_type: str) -> dict:
    """DeepSeek-V4: a query latent, one key-and-value head, a grouped W_O, hyper-connected
    streams, hash-routed layers by mlp_layer_types or num_hash_layers; each layer sliding,
    compressed sparse (CSA, with its indexer) or heavily compressed (HCA), their rates small
    enough that MIN_WINDOW tokens make entries and the indexer's top-k small enough to select
    among them; head_dim 8 or 16 leaves RoPE (a factor 1/8 of it) a whole pair of channels, and
    the indexer's heads at least that pair."""
    layers, heads = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    width = draw(st.sampled_from([8, 16]))
    experts = draw(st.integers(1, 6))
    config = {
        "num_hidden_layers": layers, "hidden_size": draw(st.integers(2, 16)),
        "num_attention_heads": heads, "head_dim": width,
        "q_lora_rank": draw(st.integers(1, 8)),
        "o_groups": draw(st.sampled_from([g for g in range(1, heads * width + 1)
                                          if heads * width % g == 0])),
        "o_lora_rank": draw(st.integers(1, 8)), "n_routed_experts": experts,
        "num_experts_per_tok": draw(st.integers(1, experts)),
        "moe_intermediate_size": draw(st.integers(1, 8)), "hc_mult": draw(st.integers(1, 3)),
        "sliding_window": draw(st.integers(MIN_WINDOW, 32)),
        "tie_word_embeddings": draw(st.booleans()),
        "layer_types": _layer_types(draw, layers, ["sliding_attention",
                                                   "compressed_sparse_attention",
                                                   "heavily_compressed_attention"]),
        "compress_rates": {"compressed_sparse_attention": draw(st.integers(1, 4)),
                           "heavily_compressed_attention": draw(st.integers(1, MIN_WINDOW))},
        "index_n_heads": draw(st.integers(1, 3)), "index_head_dim": draw(st.integers(2, 8)),
        "index_topk": draw(st.integers(1, 4)),
    }
    if draw(st.booleans()):
        config["mlp_layer_types"] = _layer_types(draw, layers, ["hash_moe", "moe"])
    elif draw(st.booleans()):  # the legacy keyword; else 3 hash_moe layers
        config["num_hash_layers"] = draw(st.integers(0, layers))
    return config


PER_LAYER_TYPES = ("gemma3_text", "gpt_oss", "llama4_text", "qwen3_next", "olmoe", "mamba",
                   "mamba2", "olmo3", "smollm3", "cohere2", "exaone4", "vaultgemma", "bitnet",
                   "glm4_moe", "granitemoe", "phimoe", "ernie4_5_moe", "jamba", "lfm2",
                   "falcon_h1", "dots1", "hunyuan_v1_moe", "dbrx", "jetmoe", "flint",
                   "qwen3_5_text", "qwen3_5_moe_text", "flex_olmo", "granitemoeshared",
                   "minimax_m2", "cwm", "glm4_moe_lite", "solar_open", "hyperclovax",
                   "jais2", "youtu", "exaone_moe", "lfm2_moe", "nemotron_h", "bamba",
                   "granitemoehybrid", "olmo_hybrid", "hy_v3", "mellum",
                   "lara_mini", "granitemoe_swa", "kolibri1", "afmoe",
                   "aria_text", "cohere_compass_text", "xglm", "biogpt", "ctrl",
                   "cohere2_moe", "deepseek_v32", "glm_moe_dsa", "hy_v4", "lfm3", "laguna",
                   "kimi_linear", "minimax", "gemma4_unified_text", "gemma4_text",
                   "mimo_v2_flash", "rwkv", "recurrent_gemma", "zamba", "zamba2", "xlstm")


@st.composite
def _qwen4_exp_text(draw, model_type: str) -> dict:
    """Qwen4-Exp's language model without PLE: qwen3_5_moe_text's fields and layer types (its
    full_attention layers indexed_attention, so named or not), in hc_count ≥ 2 streams of the
    gated low-rank maps (hc_lowrank), the DeltaNet's gate sigmoid or SiLU; with attention
    layers the QSA indexer (one key head, the budget whole blocks, an index head no narrower
    than the attention's rotary width: validate_architecture)."""
    drawn = draw(STRATEGIES["qwen3_5_moe_text"]("qwen3_5_moe_text"))
    if drawn.get("head_dim") is None:  # the rotary width the index head must hold
        drawn["head_dim"] = draw(st.sampled_from([2, 4]))
    types = drawn.get("layer_types")
    if types is not None and draw(st.booleans()):
        drawn["layer_types"] = ["indexed_attention" if t == "full_attention" else t
                                for t in types]
    config = {**drawn, "hc_count": draw(st.integers(2, 4)), "hc_lowrank": draw(st.integers(1, 8)),
              "output_gate_type": draw(st.sampled_from([None, "sigmoid", "silu"]))}
    ratio = draw(st.integers(1, 4))
    return {**config, "indexer_n_heads": draw(st.integers(1, 3)), "indexer_kv_heads": 1,
            "indexer_head_dim": drawn["head_dim"] + draw(st.integers(0, 2)),
            "indexer_budget": ratio * draw(st.integers(1, 3)), "indexer_compress_ratio": ratio}


@st.composite
def _gemma4_assistant(draw, model_type: str) -> dict:
    """Gemma 4's drafters: a gemma4_text (gemma4_assistant: without per-layer embeddings, MoE
    block or doubled MLP, every layer kv-shared, as Gemma4AssistantConfig requires) or
    gemma4_unified_text (kv-shared layers as its strategy draws them, 0 meaning all:
    __post_init__; fewer need an earlier layer of each kind they read, kv_sharing_modes) text
    model fed the target's states, backbone_hidden_size wide; its head full or centroid-masked
    (use_ordered_embeddings: num_centroids dividing the vocabulary, top-k of them)."""
    unified = model_type == "gemma4_unified_assistant"
    text_type = "gemma4_unified_text" if unified else "gemma4_text"
    text = draw(_per_layer_types(text_type))
    layers = text["num_hidden_layers"]
    if not unified:
        text["num_kv_shared_layers"] = layers
        text.update(hidden_size_per_layer_input=0, vocab_size_per_layer_input=0,
                    enable_moe_block=False, use_double_wide_mlp=False)
    centroids = draw(st.integers(1, 4))
    text["vocab_size"] = centroids * draw(st.integers(1, 8))
    return {"text_config": {"model_type": text_type, **text, **_NO_TOKENS},
            "backbone_hidden_size": draw(st.integers(1, 16)),
            "use_ordered_embeddings": draw(st.booleans()), "num_centroids": centroids,
            "centroid_intermediate_top_k": draw(st.integers(1, centroids)),
            "tie_word_embeddings": draw(st.booleans())}


LAYERNORM_TYPES = ("gpt2", "opt", "gpt_neox", "gpt_neox_japanese", "falcon", "bloom")
# Types transformers builds with another type's classes or layers (their readers are that
# type's): that type's strategy draws them.
ALIKE = {"gpt-sw3": "gpt2", "falcon_mamba": "mamba", "iquestcoder": "llama",
         "ministral3": "mistral", "sarvam_mla": "deepseek_v3", "sarvam_moe": "glm4_moe"}
# Each supported type's strategy: a type without one is an error (tests/test_hf.py).
STRATEGIES = {
    **{t: _per_layer_types for t in PER_LAYER_TYPES},
    **{t: lambda t: family_config(t, MIN_WINDOW) for t in FAMILY_TYPES},
    **{t: _llama_like for t in LLAMA_LIKE},
    **{t: _deepseek for t in ("deepseek_v2", "deepseek_v3")},
    "diffllama": _diffllama,
    "axk1": _axk1,
    "axk2": _axk2,
    "dots3_note_text": _dots3,
    "bailing_hybrid": _bailing_hybrid,
    "minimax_m3_vl_text": _minimax_m3,
    "beam": _beam,
    "longcat_flash": _longcat_flash,
    "deepseek_v4": _deepseek_v4,
    "gemma3n_text": _gemma3n_text,
    "qwen4_exp_text": _qwen4_exp_text,
    **{t: _layernorm_types for t in LAYERNORM_TYPES},
    **{t: _gemma4_assistant for t in ("gemma4_assistant", "gemma4_unified_assistant")},
}
STRATEGIES.update({t: lambda t, base=base: STRATEGIES[base](base) for t, base in ALIKE.items()})
STRATEGIES["modernbert-decoder"] = lambda t: modernbert_decoder_config(MIN_WINDOW)
STRATEGIES["cpmant"] = lambda t: cpmant_config()
STRATEGIES["doge"] = lambda t: doge_config()
STRATEGIES["inkling_text"] = lambda t: inkling_config()
STRATEGIES["inkling2_text"] = lambda t: inkling2_config()
STRATEGIES["zaya"] = lambda t: zaya_config(MIN_WINDOW)
STRATEGIES["hrm_text"] = lambda t: hrm_text_config()
STRATEGIES["dory"] = lambda t: dory_config()


@st.composite
def _mllama_text(draw, model_type: str) -> dict:
    """Llama 3.2 Vision's text model: heads hidden_size // num_attention_heads wide (a remainder
    left over), cross-attention layers anywhere (an index past the layers builds none), any
    tie flag (none is tied), whole-number token ids inside the embedding."""
    heads = draw(st.integers(1, 4))
    layers = draw(st.integers(1, 4))
    width = heads * draw(st.sampled_from([2, 4, 6])) + draw(st.integers(0, heads - 1))
    return {"num_attention_heads": heads, "hidden_size": width,
            "num_key_value_heads": draw(st.sampled_from(_divisors(heads))),
            "num_hidden_layers": layers, "intermediate_size": draw(st.integers(1, 24)),
            "cross_attention_layers": draw(st.lists(st.integers(0, layers), unique=True,
                                                    max_size=layers + 1)),
            "hidden_act": draw(st.sampled_from(["silu", "gelu_pytorch_tanh", "relu"])),
            "tie_word_embeddings": draw(st.booleans()), "max_position_embeddings": 64,
            "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0}


STRATEGIES["mllama_text_model"] = _mllama_text
# Llama's fields; Emu3TextConfig wants whole-number token ids
STRATEGIES["emu3_text_model"] = lambda t: _llama_like("llama").map(
    lambda fields: {**fields, "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0})


@st.composite
def hf_configs(draw) -> dict:
    """A small config.json dict of a random supported model type."""
    model_type = draw(st.sampled_from(supported_types()))
    fields = draw(STRATEGIES[model_type](model_type))
    # no special tokens, unless the type's class requires them (its strategy sets them)
    return {"model_type": model_type, "vocab_size": draw(st.integers(1, 50)), **_NO_TOKENS,
            **fields}
