"""ModernBERT's decoder (Ettin): modernbert-decoder, ModernBERT's layers run causally, with a
norm after the embedding, no norm before layer 0's attention, and a prediction head (dense,
activation, norm) before the LM head."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, divides, heads, layer_kinds, layer_pattern
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import base, divisible, gated, layer_types, need, one_attention_bias
from calc.spec import ModelSpec

_ARCH = "modernbert-decoder"
_TOKENS = ("pad_token_id", "bos_token_id", "eos_token_id", "cls_token_id", "sep_token_id")


def _read_modernbert_decoder(c: HFConfig) -> dict[str, Any]:
    # modeling_modernbert_decoder.py (transformers 5.24.0): ModernBertDecoderEmbeddings is the
    # token table and a LayerNorm (bias norm_bias); each layer a pre-norm attention (q, k, v,
    # Wo, bias attention_bias; heads hidden_size // num_attention_heads wide, whole or a
    # ValueError) and a GLU MLP (Wi d → 2·intermediate_size fused, act(input) · gate, Wo; bias
    # mlp_bias), layer 0's attn_norm nn.Identity; final_norm; the causal LM's lm_head is
    # ModernBertDecoderPredictionHead (dense d × d with classifier_bias, classifier_activation,
    # a LayerNorm) and decoder the Linear(d, vocab_size, bias=decoder_bias) tied to the
    # embedding. configuration_modernbert_decoder.py: layer_types, else every
    # global_attn_every_n_layers-th layer (a keyword its __post_init__ reads, default 3) full
    # from layer 0, the others sliding; sliding_window = local_attention // 2 on the sliding
    # layers (create_sliding_window_causal_mask). Each kind's RoPE theta changes no count.
    divides(c)
    n = c.size("num_hidden_layers")
    every = c["global_attn_every_n_layers"]
    every = 3 if every is None else c.size("global_attn_every_n_layers")
    kinds = layer_kinds(c, ["local" if i % every else "global" for i in range(n)])
    window: dict[str, Any] = {}
    if "local" in kinds:
        local = c["local_attention"]
        if isinstance(local, bool) or not isinstance(local, int) or local < 2:
            c.fail(f"local_attention={local!r} must be a whole number >= 2: the sliding layers "
                   f"see local_attention // 2 keys (ModernBertDecoderConfig's sliding_window)")
        c.values["sliding_window"] = local // 2
        window = layer_pattern(c, kinds)
    vocab, pad = c.size("vocab_size"), c["pad_token_id"]
    if pad is not None and not (isinstance(pad, int) and -vocab <= pad < vocab):
        c.fail(f"pad_token_id={pad!r} must lie within the embedding's vocab_size={vocab} rows "
               f"(nn.Embedding's padding_idx)")
    c.activation("classifier_activation", gated=False)  # a known name; it costs no FLOPs
    attention_bias = c.flag("attention_bias")
    return {
        "vocab_size": c["vocab_size"], "d_model": c["hidden_size"], "n_layers": n,
        "context_length": c["max_position_embeddings"],
        "attention": {**heads(c, None, head_dim_key=None), "qkv_bias": attention_bias,
                      "out_bias": attention_bias, **window},
        "ffn": {"activation": c.activation("hidden_activation", gated=True),
                "d_ff": c["intermediate_size"], "bias": c.flag("mlp_bias")},
        "norm": {"kind": "layernorm", "bias": c.flag("norm_bias"), "placement": "pre",
                 "embedding": True, "first_mixer_norm": False},
        "position": {"kind": "rope"},
        "tie_embeddings": c.flag("tie_word_embeddings"),
        "lm_head_bias": c.flag("decoder_bias"),
        "prediction_head": {"bias": c.flag("classifier_bias")},
    }


def _write_modernbert_decoder(spec: ModelSpec) -> dict[str, Any]:
    head, ffn, norm = spec.prediction_head, spec.ffn, spec.norm
    activation = gated(spec, _ARCH)
    assert ffn is not None  # gated() refuses a spec without an FFN
    divisible(spec, _ARCH)
    need(spec.head_dim_qk * spec.attention.n_heads == spec.d_model,
         f"attention.head_dim={spec.head_dim_qk} ({_ARCH}'s heads are d_model / n_heads wide)")
    types = layer_types(spec, _ARCH, "full_attention", "sliding_attention")
    bias = one_attention_bias(spec, _ARCH)
    need(not norm.first_mixer_norm, f"norm.first_mixer_norm=true ({_ARCH}'s layer 0 has no "
                                    f"attention norm)")
    need(head is not None, f"prediction_head none ({_ARCH}'s LM head has one)")
    assert head is not None
    window = spec.attention.sliding_window if "sliding_attention" in types else None
    # ModernBertDecoderConfig's token ids are whole numbers (pad_token_id the embedding's
    # padding_idx, inside the vocabulary): 0, which no count reads
    return {**base(spec, _ARCH), **dict.fromkeys(_TOKENS, 0), "intermediate_size": ffn.d_ff,
            "hidden_activation": activation,
            "max_position_embeddings": spec.context_length,
            "attention_bias": bias, "mlp_bias": ffn.bias,
            "norm_bias": norm.has_bias, "decoder_bias": spec.lm_head_bias,
            "classifier_bias": head.bias, "layer_types": types,
            # the sliding layers see local_attention // 2 keys
            **({"local_attention": 2 * window} if window else {})}


MODERNBERT_DECODER = ModelType(
    "modernbert-decoder", _read_modernbert_decoder, write=_write_modernbert_decoder,
    traits=Traits(norm="layernorm", head=True),
    getattr_fields=("global_attn_every_n_layers",),
    defaults={
        "vocab_size": 50368, "hidden_size": 768, "intermediate_size": 1152,
        "num_hidden_layers": 22, "num_attention_heads": 12, "hidden_activation": "gelu",
        "max_position_embeddings": 8192, "norm_bias": False, "attention_bias": False,
        "mlp_bias": False, "decoder_bias": True, "classifier_bias": False,
        "classifier_activation": "gelu", "local_attention": 128, "layer_types": None,
        "tie_word_embeddings": True, "pad_token_id": 50283,
    })
