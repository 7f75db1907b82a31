"""CPM-Ant (OpenBMB): cpmant, a pre-norm decoder whose attention scores take a learned bias by
relative-position bucket and segment pair, with a segment embedding and prompt embeddings."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import NO_TOKENS, need
from calc.spec import ModelSpec

_ARCH = "cpmant"


def _read_cpmant(c: HFConfig) -> dict[str, Any]:
    # modeling_cpmant.py (transformers 5.24.0): input_embedding has vocab_size +
    # prompt_types · prompt_length rows (the prompt embeddings after the vocabulary) and
    # segment_embedding segment_types rows, added to it; CpmAntSegmentPositionEmbedding one table
    # of segment_types² + position_bias_num_buckets rows × num_attention_heads for the whole
    # model, its rows looked up by segment pair or relative-position bucket and added to every
    # layer's scores; each layer an RMSNorm with a weight (CpmAntLayerNorm) before attention
    # (project_q/k/v d → heads · dim_head, attention_out back, no bias) and before the FFN
    # (w_0 with GELU times w_1, d → dim_ff, w_out back, no bias); output_layernorm; lm_head
    # Linear(d, vocab_size, bias=False), tied to nothing (_tied_weights_keys is empty, whatever
    # tie_word_embeddings says), scoring the vocabulary and not the prompt rows.
    vocab, types, segments = c.size("vocab_size"), c.size("prompt_types"), c.size("segment_types")
    # CpmAntModel.forward prepends prompt_length ids from vocab_size + 2·prompt_length (the
    # third prompt type's) and gives each token segment 2 (0 to padding and the prompt);
    # _position_bucket's exact buckets are num_buckets // 4: transformers runs none of these
    # below their minimum (an index past its table, or a division by zero)
    for key, value, least in (("prompt_types", types, 3), ("segment_types", segments, 3),
                              ("position_bias_num_buckets", c["position_bias_num_buckets"], 4)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            c.fail(f"{key}={value!r} must be a whole number >= {least}: CpmAntModel.forward "
                   f"reads prompt type 2, segment 2 and num_buckets // 4 exact buckets")
    prompts = types * c.size("prompt_length")
    return {
        "vocab_size": vocab + prompts, "output_vocab_size": vocab,
        "d_model": c.size("hidden_size"), "n_layers": c.size("num_hidden_layers"),
        # the longest distance the buckets tell apart, "the maximum sequence length that this
        # model might ever be used with" (CpmAntConfig's docstring)
        "context_length": c.size("position_bias_max_distance"),
        "attention": {"n_heads": c.size("num_attention_heads"), "head_dim": c.size("dim_head")},
        "ffn": {"activation": "geglu", "d_ff": c.size("dim_ff")},
        "norm": {"kind": "rmsnorm", "placement": "pre"},
        "position": {"kind": "bucketed", "buckets": c.size("position_bias_num_buckets"),
                     "segments": segments},
        "segment_embedding": segments,
        "tie_embeddings": False,
    }


def _write_cpmant(spec: ModelSpec) -> dict[str, Any]:
    position, ffn, att = spec.position, spec.ffn, spec.attention
    need(position.kind == "bucketed" and (position.buckets or 0) >= 4,
         f"position.kind={position.kind!r} ({_ARCH}'s scores take a bucketed bias of 4 "
         f"buckets or more)")
    need(position.segments >= 3 and spec.segment_embedding == position.segments,
         f"segment_embedding={spec.segment_embedding} with position.segments="
         f"{position.segments} ({_ARCH}'s segment_types, 3 or more, sizes both)")
    need(ffn is not None and ffn.activation == "geglu" and not ffn.bias,
         f"ffn ({_ARCH}'s is GELU-gated without bias)")
    assert ffn is not None and position.buckets is not None
    rows, prompts = spec.head_rows, spec.vocab_size - spec.head_rows
    need(prompts >= 3, f"output_vocab_size={spec.output_vocab_size} with vocab_size="
                       f"{spec.vocab_size} ({_ARCH}'s embedding holds 3 or more prompt types "
                       f"of prompt tokens beside the head's vocabulary)")
    # the prompt rows as types × length: the fewest types transformers runs (a divisor of 3
    # or more; prompts itself at worst), each prompt as long as that leaves
    types = next(k for k in range(3, prompts + 1) if prompts % k == 0)
    return {"model_type": _ARCH, "vocab_size": rows, "hidden_size": spec.d_model,
            "num_attention_heads": att.n_heads, "dim_head": spec.head_dim_qk,
            "dim_ff": ffn.d_ff, "num_hidden_layers": spec.n_layers,
            "position_bias_num_buckets": position.buckets,
            "position_bias_max_distance": spec.context_length,
            "prompt_types": types, "prompt_length": prompts // types,
            "segment_types": position.segments, **NO_TOKENS}


CPMANT = ModelType(
    "cpmant", _read_cpmant, write=_write_cpmant,
    traits=Traits(positions=("bucketed",)), head_rows_field="vocab_size",
    defaults={
        "vocab_size": 30720, "hidden_size": 4096, "num_attention_heads": 32, "dim_head": 128,
        "dim_ff": 10240, "num_hidden_layers": 48, "position_bias_num_buckets": 512,
        "position_bias_max_distance": 2048, "prompt_types": 32, "prompt_length": 32,
        "segment_types": 32,
    })
