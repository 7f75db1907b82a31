"""Llama 3.2 Vision (Meta): mllama_text_model, the language model of the multimodal mllama
config (read through it: calc.hf.multimodal).

modeling_mllama.py (transformers 5.24.0): MllamaTextModel is Llama's decoder (RMSNorm before
each sublayer, gated MLP of hidden_act, RoPE, GQA, no biases) with heads of hidden_size //
num_attention_heads (a head_dim in the file is not read), in which the layers listed in
cross_attention_layers are MllamaCrossAttentionDecoderLayer: cross-attention to the image
tokens in place of self-attention (calc.spec.layers.CrossAttentionSpec). Its embed_tokens has
vocab_size + 8 rows (nn.Embedding(config.vocab_size + 8, ...)), the lm_head of
MllamaForCausalLM and MllamaForConditionalGeneration vocab_size: the spec's vocab_size is the
embedding's rows and output_vocab_size the head's. Neither class ties the head
(MllamaForConditionalGeneration's _tied_weights_keys is commented out, MllamaForCausalLM has
none; built on transformers 5.24.0 with tie_word_embeddings true, lm_head stays its own), so
the spec is untied whatever tie_word_embeddings says.

The image tokens the cross-attention layers read are the input's, not the config's:
cross_attention.image_tokens is 0 (text only, the layers skipped) unless a spec sets it.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder
from calc.hf.model_type import ModelType, Traits
from calc.hf.per_layer import merge, per_layer
from calc.hf.writing import llama_like, need
from calc.spec import ModelSpec

# MllamaTextModel.embed_tokens: nn.Embedding(config.vocab_size + 8, ...) beside an lm_head of
# vocab_size rows
EXTRA_EMBEDDING_ROWS = 8
# MllamaTextConfig.__post_init__'s cross_attention_layers when the file gives none (null)
DEFAULT_CROSS_LAYERS = [3, 8, 13, 18, 23, 28, 33, 38]


def _cross_layers(c: HFConfig, layers: int) -> set[int]:
    """The indices MllamaTextModel builds as cross-attention layers: those of
    cross_attention_layers below num_hidden_layers (`layer_idx in cross_attention_layers`)."""
    listed = c["cross_attention_layers"]
    if listed is None:
        listed = DEFAULT_CROSS_LAYERS
    if not isinstance(listed, list | tuple) or any(
            isinstance(i, bool) or not isinstance(i, int) for i in listed):
        c.fail(f"cross_attention_layers={listed!r} must be a list of layer indices")
    return {i for i in listed if 0 <= i < layers}


def _read_mllama_text(c: HFConfig) -> dict[str, Any]:
    d, h = c.size("hidden_size"), c.size("num_attention_heads")
    if h > d:
        c.fail(f"num_attention_heads={h} exceeds hidden_size={d} (heads are hidden_size // "
               f"num_attention_heads wide)")
    kv = c.size("num_key_value_heads")
    if h % kv:  # repeat_kv expands each key/value head to h / kv query heads
        c.fail(f"num_key_value_heads={kv} must divide num_attention_heads={h}")
    vocab = c.size("vocab_size")
    rows = vocab + EXTRA_EMBEDDING_ROWS
    pad = c["pad_token_id"]
    if isinstance(pad, int) and not -rows <= pad < rows:  # nn.Embedding's padding_idx
        c.fail(f"pad_token_id={pad} must lie within the embedding's vocab_size + 8 = {rows} "
               f"rows")
    layers = c.size("num_hidden_layers")
    cross = _cross_layers(c, layers)
    spec = decoder(c, {"n_heads": h, "n_kv_heads": kv, "head_dim": d // h})
    spec.update(vocab_size=rows, output_vocab_size=vocab, tie_embeddings=False)
    if not cross:
        return spec
    spec["cross_attention"] = {}
    mixers = ["cross_attention" if i in cross else "attention" for i in range(layers)]
    return merge(spec, per_layer(c, mixers=mixers))


def _write_mllama_text(spec: ModelSpec) -> dict[str, Any]:
    need(spec.d_model // spec.attention.n_heads == spec.head_dim_qk == spec.head_dim_v,
         "attention.head_dim other than d_model // n_heads (mllama_text_model's heads)")
    need(spec.output_vocab_size is not None
         and spec.vocab_size == spec.output_vocab_size + EXTRA_EMBEDDING_ROWS,
         f"output_vocab_size={spec.output_vocab_size} with vocab_size={spec.vocab_size} "
         f"(mllama_text_model's embedding has the head's rows + {EXTRA_EMBEDDING_ROWS})")
    need(not spec.tie_embeddings, "tie_embeddings=true (mllama_text_model ties no head)")
    need(set(spec.attention_kinds) <= {"global", ""},
         "attention layers other than global ones (mllama_text_model's self-attention is "
         "full, with RoPE)")
    need(set(spec.ffn_kinds) == {"dense"},
         "an FFN other than a dense one on every layer (MllamaTextMLP)")
    att, ffn = spec.attention, spec.ffn
    assert ffn is not None
    need(not (att.qkv_bias or att.out_bias or ffn.bias),
         "attention or FFN biases (mllama_text_model has none)")
    need(att.qk_norm == "none", f"attention.qk_norm={att.qk_norm!r} (mllama_text_model's "
                                f"self-attention has no q/k norm)")
    cross = spec.cross_attention
    need(cross is None or cross.image_tokens == 0,
         f"cross_attention.image_tokens={cross and cross.image_tokens} (the image tokens are "
         f"the input's, not a config field)")
    config = llama_like(spec, "mllama_text_model")
    # MllamaTextConfig's bos_token_id must be an int: its default stands; head_dim is not read
    for key in ("head_dim", "bos_token_id"):
        config.pop(key)
    return {**config, "vocab_size": spec.output_vocab_size,
            "cross_attention_layers": [i for i, mixer in enumerate(spec.mixer_kinds)
                                       if mixer == "cross_attention"]}


MLLAMA_TEXT_MODEL = ModelType(
    "mllama_text_model", _read_mllama_text, write=_write_mllama_text, traits=Traits(),
    head_rows_field="vocab_size",
    defaults={
        "vocab_size": 128256, "hidden_size": 4096, "hidden_act": "silu",
        "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "cross_attention_layers": None, "pad_token_id": 128004,
    })
