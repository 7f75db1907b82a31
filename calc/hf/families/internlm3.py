"""InternLM3 (Shanghai AI Laboratory): internlm3, built as Llama."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, biased_decoder, decoder_defaults, divides
from calc.hf.model_type import ModelType


def _read(c: HFConfig) -> dict[str, Any]:
    # configuration_internlm3.py builds LlamaForCausalLM; validate_architecture wants
    # hidden_size a multiple of the heads and qkv_bias == bias.
    divides(c)
    bias = c.flag("attention_bias")
    if bias != c.flag("mlp_bias"):
        c.fail(f"qkv_bias={bias} with bias={c['mlp_bias']}: transformers' InternLM3 "
               f"(Llama) has one bias setting for q, k, v, o and the MLP")
    return biased_decoder(c, bias, bias, c.flag("mlp_bias"))


# No writer: llama's writer holds every spec it reads.
INTERNLM3 = ModelType(
    "internlm3", _read, aliases={"qkv_bias": "attention_bias", "bias": "mlp_bias"},
    defaults=decoder_defaults(128512, 4096, 10240, 48, 32, 2, "silu", 32768, False,
                              attention_bias=False, mlp_bias=False, head_dim=128))
