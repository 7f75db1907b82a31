"""Hypothesis strategies: small random config.json dicts of the Llama-shaped types with one quirk
each, the rotary LayerNorm decoders and GPT-2's descendants (FAMILY_TYPES; tests/hf_strategies.py
draws the others and every type through hf_configs).

As tests/hf_strategies.py: each draws the fields its reader uses, small enough to build in
milliseconds on the meta device. Head widths are multiples of 8 where a type rotates only part
of each head (partial_rotary_factor 0.25 or 0.5 of an even width), and explicit where the class
default (128) would make the model large.
"""

from __future__ import annotations

from hypothesis import strategies as st

_PLAIN = ["gelu", "relu", "silu", "relu2"]
_GATED = ["silu", "gelu_pytorch_tanh", "relu"]
_PARTIAL_ROTARY = ("glm", "glm4", "stablelm", "persimmon", "phi", "nemotron")


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


@st.composite
def _common(draw, model_type: str, window: int) -> dict:
    heads = draw(st.integers(1, 4))
    widths = [8, 16] if model_type in _PARTIAL_ROTARY else [2, 4, 8]
    head_dim = draw(st.sampled_from(widths))
    config = {"num_attention_heads": heads, "hidden_size": heads * head_dim,
              "num_key_value_heads": draw(st.sampled_from(_divisors(heads))),
              "num_hidden_layers": draw(st.integers(1, 3)),
              "intermediate_size": draw(st.integers(1, 24)),
              "tie_word_embeddings": draw(st.booleans()), "max_position_embeddings": 64}
    # An explicit head width other than hidden_size / heads where the type allows one.
    if model_type in ("granite", "seed_oss", "ernie4_5", "hunyuan_v1_dense", "ministral",
                      "glm", "glm4", "exaone", "arcee", "starcoder2", "nemotron", "cohere",
                      "internlm3", "olmo", "apertus", "apertus1p5_text", "nanochat",
                      "granite_swa"):
        free = model_type not in ("exaone", "arcee", "internlm3")  # these keep d % h == 0
        config["head_dim"] = draw(st.sampled_from(widths)) if free else head_dim
    if model_type == "helium":
        config["head_dim"] = head_dim  # o_proj maps hidden_size to hidden_size
    if model_type == "starcoder2":
        config["sliding_window"] = draw(st.none() | st.integers(window, 32))
    if model_type == "granite_swa":
        config["sliding_window"] = draw(st.integers(window, 32))
    if model_type == "ministral":  # transformers' Ministral needs a window
        config["sliding_window"] = draw(st.integers(window, 32))
    return config


@st.composite
def _llama_family(draw, model_type: str, window: int) -> dict:
    config = draw(_common(model_type, window))
    apertus = model_type in ("apertus", "apertus1p5_text")
    plain = apertus or model_type in ("arcee", "nanochat")
    config["hidden_act"] = draw(st.sampled_from(
        _PLAIN + ["xielu"] * 3 if apertus else _PLAIN if plain else _GATED))
    flags = {"granite": ("attention_bias", "mlp_bias"), "exaone": ("attention_bias",
             "mlp_bias"), "helium": ("attention_bias", "mlp_bias"),
             "seed_oss": ("attention_bias", "attention_out_bias", "mlp_bias"),
             "ernie4_5": ("use_bias",), "hunyuan_v1_dense": ("attention_bias",),
             "glm": ("attention_bias",), "glm4": ("attention_bias",),
             "arcee": ("attention_bias", "mlp_bias"), "minicpm3": ("attention_bias",
                                                                    "mlp_bias"),
             "apertus": ("attention_bias",), "apertus1p5_text": ("attention_bias",),
             "nanochat": ("attention_bias",),
             "granite_swa": ("attention_bias", "mlp_bias")}
    for flag in flags.get(model_type, ()):
        config[flag] = draw(st.booleans())
    if model_type == "internlm3":
        config["qkv_bias"] = config["bias"] = draw(st.booleans())
    if model_type == "apertus1p5_text":  # a head of the first output_vocab_size rows, or all
        vocab = draw(st.integers(1, 50))  # (this vocab_size replaces the caller's)
        config.update(vocab_size=vocab, output_vocab_size=draw(st.none() | st.integers(1, vocab)))
    if model_type == "ministral" and draw(st.booleans()):
        config["layer_types"] = draw(st.lists(
            st.sampled_from(["full_attention", "sliding_attention"]),
            min_size=config["num_hidden_layers"], max_size=config["num_hidden_layers"]))
    if model_type == "granite_swa":  # full, sliding and NoPE layers (theta 0) in any order
        layers = config["num_hidden_layers"]
        if draw(st.booleans()):
            config["layer_types"] = draw(st.lists(
                st.sampled_from(["full_attention", "sliding_attention"]),
                min_size=layers, max_size=layers))
        if draw(st.booleans()):
            config["layer_rope_theta"] = draw(st.lists(st.sampled_from([0.0, 10000.0]),
                                                       min_size=layers, max_size=layers))
    if model_type == "minicpm3":  # every head has its keys: as many K/V heads as queries
        config.update(num_key_value_heads=config["num_attention_heads"],
                      q_lora_rank=draw(st.none() | st.integers(1, 8)),
                      kv_lora_rank=draw(st.sampled_from([2, 4, 8])),
                      qk_nope_head_dim=draw(st.sampled_from([0, 2, 4])),
                      qk_rope_head_dim=draw(st.sampled_from([2, 4])),
                      v_head_dim=draw(st.integers(1, 4)))
    return config


@st.composite
def _layernorm_family(draw, model_type: str, window: int) -> dict:
    if model_type == "mpt":
        heads = draw(st.integers(1, 4))
        return {"n_heads": heads, "d_model": heads * draw(st.sampled_from([2, 4, 8])),
                "n_layers": draw(st.integers(1, 3)), "max_seq_len": 16,
                "tie_word_embeddings": draw(st.booleans())}
    config = draw(_common(model_type, window))
    gated = model_type in ("stablelm", "cohere", "olmo")
    config["hidden_act"] = draw(st.sampled_from(_GATED if gated else _PLAIN))
    for flag in {"starcoder2": ("use_bias",), "nemotron": ("attention_bias", "mlp_bias"),
                 "cohere": ("attention_bias", "use_qk_norm"),
                 "stablelm": ("use_qkv_bias", "use_parallel_residual"),
                 "persimmon": ("qk_layernorm",), "phi": ("qk_layernorm",),
                 "olmo": ("attention_bias",)}[model_type]:
        config[flag] = draw(st.booleans())
    if model_type == "persimmon":  # one fused query_key_value: as many K/V heads as queries
        config["num_key_value_heads"] = config["num_attention_heads"]
    return config


@st.composite
def _gpt_family(draw, model_type: str, window: int) -> dict:
    heads = draw(st.integers(1, 4))
    # CodeGen splits its fused qkv_proj into 4 shards: n_embd a multiple of 4.
    d = heads * draw(st.sampled_from([4, 8] if model_type == "codegen" else [2, 4, 8]))
    layers = draw(st.integers(1, 3))
    tie = draw(st.booleans())
    if model_type == "gpt_neo":
        kinds = draw(st.lists(st.sampled_from(["global", "local"]), min_size=layers,
                              max_size=layers))
        return {"hidden_size": d, "num_heads": heads, "num_layers": layers,
                "max_position_embeddings": 16, "window_size": draw(st.integers(window, 32)),
                "attention_types": [[[kind], 1] for kind in kinds],
                "intermediate_size": draw(st.none() | st.integers(1, 24)),
                "activation_function": draw(st.sampled_from(_PLAIN)),
                "tie_word_embeddings": tie}
    config = {"n_embd": d, "n_head": heads, "n_layer": layers, "n_positions": 16,
              "tie_word_embeddings": tie}
    if model_type == "openai-gpt":
        return {**config, "afn": draw(st.sampled_from(["gelu", "relu", "silu", "swish"]))}
    config.update(n_inner=draw(st.none() | st.integers(1, 24)),
                  activation_function=draw(st.sampled_from(_PLAIN)))
    if model_type == "gpt_bigcode":
        config["multi_query"] = draw(st.booleans())
    else:  # gptj, codegen: rotate the whole (small) head
        config["rotary_dim"] = d // heads
    return config


@st.composite
def modernbert_decoder_config(draw, window: int) -> dict:
    """ModernBERT's decoder: every bias switch, the full/sliding layers by the keyword's period
    or by layer_types, sliding layers seeing local_attention // 2 >= window keys, any
    activation of the GLU MLP and of the prediction head; whole-number token ids inside the
    vocabulary (ModernBertDecoderConfig's are ints)."""
    heads, layers = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    config = {"num_attention_heads": heads,
              "hidden_size": heads * draw(st.sampled_from([2, 4, 8])),
              "num_hidden_layers": layers, "intermediate_size": draw(st.integers(1, 24)),
              "max_position_embeddings": 64,
              "hidden_activation": draw(st.sampled_from(["gelu", "silu", "relu"])),
              "classifier_activation": draw(st.sampled_from(["gelu", "silu", "relu"])),
              "local_attention": draw(st.integers(2 * window, 64)),
              **dict.fromkeys(("pad_token_id", "bos_token_id", "eos_token_id", "cls_token_id",
                               "sep_token_id"), 0),
              **{key: draw(st.booleans()) for key in (
                  "attention_bias", "mlp_bias", "norm_bias", "decoder_bias", "classifier_bias",
                  "tie_word_embeddings")}}
    if draw(st.booleans()):
        config["layer_types"] = draw(st.lists(
            st.sampled_from(["full_attention", "sliding_attention"]),
            min_size=layers, max_size=layers))
    else:
        config["global_attn_every_n_layers"] = draw(st.integers(1, 3))
    return config


@st.composite
def cpmant_config(draw) -> dict:
    """CPM-Ant: heads of any width (dim_head), prompt types and segment types from the 3
    CpmAntModel.forward reads, a bucket count from 4 (num_buckets // 4 exact buckets) and a
    longest distance past the exact ones, prompt tokens prepended to every sequence."""
    heads = draw(st.integers(1, 4))
    buckets = draw(st.integers(4, 16))
    return {"num_attention_heads": heads, "dim_head": draw(st.sampled_from([2, 4, 8])),
            "hidden_size": draw(st.integers(1, 32)), "dim_ff": draw(st.integers(1, 24)),
            "num_hidden_layers": draw(st.integers(1, 3)),
            "position_bias_num_buckets": buckets,
            "position_bias_max_distance": draw(st.integers(buckets, 64)),
            "prompt_types": draw(st.integers(3, 5)), "prompt_length": draw(st.integers(1, 4)),
            "segment_types": draw(st.integers(3, 5))}


@st.composite
def doge_config(draw) -> dict:
    """Doge: GQA heads of hidden_size // heads or a head_dim of their own, a keep_window_size
    below and above the test's 8 tokens (the dynamic mask selecting or not), every bias
    switch, and with is_moe a product-key MoE of a few experts (top_k up to ⌊√E⌋², the pairs
    DogeCDMoE chooses among)."""
    heads = draw(st.integers(1, 4))
    config = {"num_attention_heads": heads,
              "num_key_value_heads": draw(st.sampled_from(
                  [k for k in range(1, heads + 1) if heads % k == 0])),
              "hidden_size": heads * draw(st.sampled_from([2, 4, 8])),
              "intermediate_size": draw(st.integers(1, 24)),
              "num_hidden_layers": draw(st.integers(1, 3)),
              "keep_window_size": draw(st.integers(1, 12)),
              "attention_bias": draw(st.booleans()), "mlp_bias": draw(st.booleans()),
              "tie_word_embeddings": draw(st.booleans()),
              "hidden_act": draw(st.sampled_from(["silu", "gelu_pytorch_tanh", "relu"]))}
    if draw(st.booleans()):
        config["head_dim"] = draw(st.sampled_from([2, 4, 6]))
    if draw(st.booleans()):
        experts = draw(st.integers(1, 40))
        keys = int(experts ** 0.5)
        config.update(is_moe=True, num_experts=experts,
                      num_experts_per_tok=draw(st.integers(1, keys * keys)))
    return config


@st.composite
def hrm_text_config(draw) -> dict:
    """HRM-Text: two stacks of 1 to 2 layers, 1 to 3 high-level cycles of 1 to 3 low-level
    passes (the per-stack count as num_hidden_layers, or as num_layers_per_stack beside the
    cache slots, as a saved config carries it), MHA heads of any width, biases either way."""
    heads, per_stack = draw(st.integers(1, 4)), draw(st.integers(1, 2))
    high, low = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    layers = ({"num_layers_per_stack": per_stack, "num_hidden_layers": per_stack * high
               * (low + 1)} if draw(st.booleans()) else {"num_hidden_layers": per_stack})
    return {"num_attention_heads": heads, "head_dim": draw(st.sampled_from([2, 4, 8])),
            "hidden_size": heads * draw(st.integers(1, 8)),
            "intermediate_size": draw(st.integers(1, 24)), **layers,
            "H_cycles": high, "L_cycles": low, "attention_bias": draw(st.booleans()),
            "mlp_bias": draw(st.booleans()), "tie_word_embeddings": draw(st.booleans())}


@st.composite
def dory_config(draw) -> dict:
    """Dory: 1 to 5 layers cut into input, recurrent and output sections (the recurrent count
    given or derived), 1 to 3 loops, full and sliding layers (or the every-fourth default),
    GQA heads, the released layout (an mlp block after each attention block) or transformers'
    own."""
    kv = draw(st.integers(1, 2))
    heads = kv * draw(st.integers(1, 2))
    layers = draw(st.integers(1, 5))
    first = draw(st.integers(0, layers))
    last = draw(st.integers(0, layers - first))
    config = {"num_attention_heads": heads, "num_key_value_heads": kv,
              "head_dim": draw(st.sampled_from([2, 4, 8])),
              "hidden_size": draw(st.integers(1, 24)),
              "intermediate_size": draw(st.integers(1, 24)), "num_hidden_layers": layers,
              "n_input_layers": first, "n_output_layers": last,
              "n_recurrent_loops": draw(st.integers(1, 3)), "sliding_window": 8,
              "mlp_bias": draw(st.booleans()), "tie_word_embeddings": draw(st.booleans()),
              "recurrent_kv_cache_mode": draw(st.sampled_from(["per_loop", "last_loop"]))}
    if draw(st.booleans()):
        config["n_recurrent_layers"] = layers - first - last
    if draw(st.booleans()):
        config["layer_types"] = draw(st.lists(st.sampled_from(
            ["full_attention", "sliding_attention"]), min_size=layers, max_size=layers))
        if draw(st.booleans()):  # the released layout: each layer an attention and an mlp
            config["layer_types"] = [t for kind in config["layer_types"] for t in (kind, "mlp")]
            for key in ("num_hidden_layers", "n_input_layers", "n_output_layers",
                        "n_recurrent_layers"):
                if key in config:
                    config[key] *= 2
    return config


_FAMILY_OF = {
    **{t: _llama_family for t in ("granite", "internlm3", "exaone", "helium", "seed_oss",
                                  "ernie4_5", "hunyuan_v1_dense", "ministral", "glm", "glm4",
                                  "arcee", "minicpm3", "apertus", "apertus1p5_text",
                                  "nanochat",
                                  "granite_swa")},
    **{t: _layernorm_family for t in ("starcoder2", "stablelm", "persimmon", "phi",
                                      "nemotron", "cohere", "mpt", "olmo")},
    **{t: _gpt_family for t in ("gpt_bigcode", "gpt_neo", "gptj", "codegen", "openai-gpt")},
}
FAMILY_TYPES = tuple(sorted(_FAMILY_OF))


def family_config(model_type: str, window: int) -> st.SearchStrategy[dict]:
    """The fields of a small random config of `model_type` (no model_type, vocab or token ids);
    sliding windows at least `window`."""
    return _FAMILY_OF[model_type](model_type, window)


def _inkling_layers(draw, layers: int) -> dict:
    """Inkling's and Inkling 2's shared fields: both heads' shapes (the sliding ones their
    own), windows and relative extents below and above the sequence, any conv kernel (by
    either name), routed experts."""

    def heads() -> tuple[int, int]:
        n = draw(st.integers(1, 4))
        return n, draw(st.sampled_from(_divisors(n)))

    full, swa = heads(), heads()
    experts = draw(st.integers(1, 4))
    return {"hidden_size": draw(st.integers(1, 24)), "num_hidden_layers": layers,
            "num_attention_heads": full[0], "num_key_value_heads": full[1],
            "head_dim": draw(st.integers(1, 8)), "swa_num_attention_heads": swa[0],
            "swa_num_key_value_heads": swa[1], "swa_head_dim": draw(st.integers(1, 8)),
            "sliding_window_size": draw(st.integers(1, 12)),
            "rel_extent": draw(st.integers(1, 12)), "d_rel": draw(st.integers(1, 4)),
            draw(st.sampled_from(["conv_kernel_size", "sconv_kernel_size"])):
                draw(st.integers(1, 4)),
            "moe_intermediate_size": draw(st.integers(1, 16)), "n_routed_experts": experts,
            "num_experts_per_tok": draw(st.integers(1, experts)),
            "max_position_embeddings": 64}


@st.composite
def inkling2_config(draw) -> dict:
    """Inkling 2's text model: Inkling's shared fields (_inkling_layers), full and sliding
    layers by layer_types or the class's rule, blocks of 1 to 3 layers for the attention
    residuals, a head of the embedding's rows or fewer."""
    layers, vocab = draw(st.integers(1, 5)), draw(st.integers(1, 50))
    config = {**_inkling_layers(draw, layers),
              "n_layers_per_attn_res_block": draw(st.integers(1, 3)), "vocab_size": vocab,
              "unpadded_vocab_size": draw(st.integers(1, vocab))}
    if draw(st.booleans()):
        config["layer_types"] = draw(st.lists(st.sampled_from(["hybrid", "hybrid_sliding"]),
                                              min_size=layers, max_size=layers))
    return config


@st.composite
def inkling_config(draw) -> dict:
    """Inkling's text model: Inkling's shared fields (_inkling_layers), full and sliding
    layers by layer_types, local_layer_ids or the class's rule, dense and sparse FFNs by
    mlp_layer_types or the legacy dense_mlp_idx (with dense_intermediate_size swapping the
    widths), at least one shared expert (InklingTopkRouter slices them off its scores)."""
    layers = draw(st.integers(1, 4))
    config = {**_inkling_layers(draw, layers), "intermediate_size": draw(st.integers(1, 24)),
              "n_shared_experts": draw(st.integers(1, 2))}
    placement = draw(st.sampled_from(["layer_types", "local_layer_ids", "rule"]))
    if placement == "layer_types":
        config["layer_types"] = draw(st.lists(st.sampled_from(["hybrid", "hybrid_sliding"]),
                                              min_size=layers, max_size=layers))
    elif placement == "local_layer_ids":
        config["local_layer_ids"] = draw(st.lists(st.integers(0, layers - 1), unique=True))
    if draw(st.booleans()):
        config["mlp_layer_types"] = draw(st.lists(st.sampled_from(["dense", "sparse"]),
                                                  min_size=layers, max_size=layers))
    else:
        config["dense_mlp_idx"] = draw(st.integers(0, layers))
        if draw(st.booleans()):
            config["dense_intermediate_size"] = draw(st.integers(1, 24))
    return config


@st.composite
def zaya_config(draw, window: int) -> dict:
    """ZAYA1: GQA heads of an even width (half of each rotates), CCA kernels from 1 (no
    padding) to 3, full and sliding layers with a window >= `window`, a router of any width
    over 1 to 4 experts, every bias switch."""
    heads, layers = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    config = {"num_attention_heads": heads,
              "num_key_value_heads": draw(st.sampled_from(_divisors(heads))),
              "head_dim": draw(st.sampled_from([2, 4, 8])),
              "hidden_size": draw(st.integers(1, 32)), "num_hidden_layers": layers,
              "max_position_embeddings": 64, "num_experts": draw(st.integers(1, 4)),
              "moe_intermediate_size": draw(st.integers(1, 24)),
              "router_hidden_size": draw(st.integers(1, 16)),
              "cca_time0": draw(st.integers(1, 3)), "cca_time1": draw(st.integers(1, 3)),
              **{key: draw(st.booleans()) for key in (
                  "attention_bias", "lm_head_bias", "tie_word_embeddings")}}
    types = draw(st.lists(st.sampled_from(["hybrid", "hybrid_sliding"]), min_size=layers,
                          max_size=layers))
    config["layer_types"] = types
    if "hybrid_sliding" in types:
        config["sliding_window"] = draw(st.integers(window, 32))
    return config
