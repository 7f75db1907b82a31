"""Apertus (Swiss AI): apertus, and apertus1p5_text, Apertus 1.5's language model."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import (
    HFConfig,
    decoder_defaults,
    heads,
    layernorm_decoder,
    no_null_head_dim,
)
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import base, need, plain
from calc.spec import ModelSpec

# Fields of Apertus' release that transformers' ApertusConfig does not read: its model always has
# per-head q/k norms, pre-norms and an MLP without bias. A file asking otherwise is refused.
_FIXED = {"qk_norm": True, "post_norm": False, "mlp_bias": False}


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_apertus.py: LlamaAttention (attention_bias on q, k, v, o) with RMSNorm over each
    # head's queries and keys (q_norm, k_norm of head_dim); a plain MLP up_proj → act →
    # down_proj without bias; hidden_act xielu is XIELUActivation, whose alpha_p and alpha_n
    # are parameters of shape (1,) in every MLP (activations.py).
    no_null_head_dim(c)
    for key, value in _FIXED.items():
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


def _write(spec: ModelSpec) -> dict[str, Any]:
    # Per-head q/k norms, a plain MLP without bias, xIELU or a fixed activation.
    need(spec.attention.qk_norm == "head", f"attention.qk_norm={spec.attention.qk_norm!r} "
         f"(apertus normalises each head's queries and keys)")
    ffn = spec.ffn
    act = "xielu" if ffn is not None and ffn.activation == "xielu" else plain(spec, "apertus")
    return {**base(spec, "apertus"), "num_key_value_heads": spec.n_kv_heads,
            "head_dim": spec.head_dim_qk, "intermediate_size": spec.ffn.d_ff,
            "hidden_act": act, "max_position_embeddings": spec.context_length,
            "attention_bias": spec.attention.qkv_bias}


APERTUS = ModelType(
    "apertus", _read, write=_write, traits=Traits(gated=False), getattr_fields=("head_dim",),
    defaults=decoder_defaults(131072, 4096, 14336, 32, 32, None, "xielu", 65536, False,
                              attention_bias=False))


def _read_apertus1p5_text(c: HFConfig) -> dict[str, Any]:
    # modular_apertus1p5.py (transformers 5.24.0): Apertus' decoder layers unchanged, the
    # embedding of vocab_size rows (text, image and audio tokens) and lm_head of
    # output_vocab_size rows, the first ones, that the model can emit (None, or vocab_size,
    # which Apertus1p5TextConfig.__post_init__ turns into None: vocab_size rows). The config
    # refuses a width outside [1, vocab_size] (validate_output_vocab_size).
    spec = _read(c)
    rows = c["output_vocab_size"]
    if rows is not None:
        vocab = c.size("vocab_size")
        if isinstance(rows, bool) or not isinstance(rows, int) or not 1 <= rows <= vocab:
            c.fail(f"output_vocab_size={rows!r} must be a whole number in [1, vocab_size="
                   f"{vocab}] (transformers refuses it otherwise)")
        # Tied, the head is the embedding: PreTrainedModel.tie_weights swaps lm_head's weight
        # for embed_tokens' whole vocab_size × d matrix, so the logits are vocab_size wide
        # whatever output_vocab_size says (built and run on transformers 5.24.0).
        if rows < vocab and not spec["tie_embeddings"]:
            spec["output_vocab_size"] = rows
    return spec


def _write_apertus1p5_text(spec: ModelSpec) -> dict[str, Any]:
    # Apertus' fields, and the head's rows where it is narrower than the vocabulary.
    return {**_write(spec), "model_type": "apertus1p5_text",
            "output_vocab_size": spec.output_vocab_size}


# The Apertus 1.5 text config's defaults: Apertus' but for the vocabulary (266,752: text plus
# the image and audio code ranges) and output_vocab_size (configuration_apertus1p5.py).
APERTUS1P5_TEXT = ModelType(
    "apertus1p5_text", _read_apertus1p5_text, write=_write_apertus1p5_text,
    traits=Traits(gated=False), getattr_fields=("head_dim",), head_rows_field="output_vocab_size",
    defaults=decoder_defaults(266752, 4096, 14336, 32, 32, None, "xielu", 65536, False,
                              attention_bias=False, output_vocab_size=None))
