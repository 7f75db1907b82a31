"""HyperCLOVA X (Naver): hyperclovax, Granite's layers with optional norms after each sublayer.

The embedding, residual, attention and logits multipliers scale activations: no parameter, no
matrix product, no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, biased_decoder, decoder_defaults
from calc.hf.model_type import ModelType


def _read_hyperclovax(c: HFConfig) -> dict[str, Any]:
    # modeling_hyperclovax.py: attention_bias on q, k, v, o; mlp_bias on gate, up, down;
    # use_post_norm adds post_norm1/post_norm2 after the attention and the MLP (Peri-LN): a
    # norm before and after each sublayer. head_dim None is hidden_size / heads
    # (configuration_hyperclovax.py).
    bias = c.flag("attention_bias")
    spec = biased_decoder(c, bias, bias, c.flag("mlp_bias"))
    if c.flag("use_post_norm"):
        spec["norm"] = {"kind": "rmsnorm", "placement": "sandwich"}
    return spec


# No writer: seed_oss's holds its specs without post norms, glm4's those with them.
HYPERCLOVAX = ModelType(
    "hyperclovax", _read_hyperclovax,
    defaults=decoder_defaults(32000, 4096, 11008, 32, 32, None, "silu", 2048, False,
                              attention_bias=False, mlp_bias=False, head_dim=None,
                              use_post_norm=True))
