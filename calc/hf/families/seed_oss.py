"""Seed-OSS (ByteDance Seed): seed_oss, the one Llama-shaped type with a bias switch each for
q/k/v, o and the MLP: its writer also writes the specs of granite, ernie4_5, helium and glm."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, biased_decoder, decoder_defaults
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import llama_like
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_seed_oss.py: attention_bias on q, k, v, attention_out_bias on o, mlp_bias.
    return biased_decoder(c, c.flag("attention_bias"), c.flag("attention_out_bias"),
                          c.flag("mlp_bias"))


def _write(spec: ModelSpec) -> dict[str, Any]:
    att = spec.attention
    return {**llama_like(spec, "seed_oss"), "attention_bias": att.qkv_bias,
            "attention_out_bias": att.out_bias, "mlp_bias": spec.ffn.bias}


SEED_OSS = ModelType(
    "seed_oss", _read, write=_write, traits=Traits(),
    defaults=decoder_defaults(155136, 4096, 27648, 64, 80, 8, "silu", 524288, False,
                              attention_bias=True, attention_out_bias=False, mlp_bias=False,
                              head_dim=128))
