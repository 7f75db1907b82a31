"""SmolLM3 (Hugging Face): smollm3."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, heads
from calc.hf.model_type import ModelType
from calc.hf.per_layer import flags, kinds_of, merge, per_layer


def _read(c: HFConfig) -> dict[str, Any]:
    # configuration_smollm3.py: no_rope_layers[i] = 0 drops RoPE (default every
    # no_rope_layer_interval-th layer); modeling_smollm3.py: a layer slides only with
    # use_sliding_window and layer_types "sliding_attention"; attention_bias on q, k, v, o,
    # mlp_bias on the MLP.
    layers = c.size("num_hidden_layers")
    interval = c.size("no_rope_layer_interval")
    rope = (flags(c, "no_rope_layers", layers) if c["no_rope_layers"]
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


# No writer: a NoPE layer counts as a global one, so llama's writer holds its specs without
# sliding layers (and vaultgemma's some with them); one with sliding layers and a biased MLP no
# writer holds.
SMOLLM3 = ModelType(
    "smollm3", _read, getattr_fields=("head_dim",),
    defaults={
        "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 11008,
        "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4,
        "hidden_act": "silu", "max_position_embeddings": 32768, "use_sliding_window": False,
        "sliding_window": None, "no_rope_layers": None, "no_rope_layer_interval": 4,
        "layer_types": None, "attention_bias": False, "mlp_bias": False,
        "tie_word_embeddings": True,
    })
