"""DiffLlama: diffllama, Llama with differential attention (Ye et al. 2024, DIFF Transformer)."""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, decoder_defaults
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import llama_like, need, one_attention_bias
from calc.spec import ModelSpec


def _read_diffllama(c: HFConfig) -> dict[str, Any]:
    # modeling_diffllama.py (transformers 5.24.0), DiffLlamaAttention: Llama's q_proj, k_proj,
    # v_proj and o_proj (all four with attention_bias) of head_dim-wide heads; the values of
    # the first half of the KV heads beside the second half's (2·head_dim per map), head i's
    # output minus λ × head i + h/2's, λ from lambda_q1, lambda_k1, lambda_q2, lambda_k2
    # (head_dim each), then nn.RMSNorm(2·head_dim, elementwise_affine=False). It refuses an odd
    # num_key_value_heads and attention_dropout > 0. DiffLlamaMLP is Llama's gated MLP without
    # bias. configuration_diffllama.py: num_key_value_heads defaults to the heads, head_dim to
    # hidden_size // heads (floor).
    d, h = c.size("hidden_size"), c.size("num_attention_heads")
    kv = c.size("num_key_value_heads") if c.given("num_key_value_heads") else h
    if h % kv:
        c.fail(f"num_key_value_heads={kv} must divide num_attention_heads={h}")
    if kv % 2:
        c.fail(f"num_key_value_heads={kv}: transformers' DiffLlama splits the values in two "
               f"halves of the key/value heads and refuses an odd count")
    dropout = c["attention_dropout"]
    if dropout:
        c.fail(f"attention_dropout={dropout!r}: transformers' DiffLlama refuses dropout in "
               f"differential attention")
    width = c.size("head_dim") if c.given("head_dim") else d // h
    bias = c.flag("attention_bias")
    return decoder(c, {"n_heads": h, "n_kv_heads": kv, "head_dim": width},
                   attention={"qkv_bias": bias, "out_bias": bias, "differential": True})


def _write_diffllama(spec: ModelSpec) -> dict[str, Any]:
    att = spec.attention
    need(att.differential, "attention.differential=false (DiffLlama's attention is "
                           "differential)")
    need(not spec.ffn or not spec.ffn.bias, "ffn.bias=true (DiffLlama's MLP has no bias)")
    return {**llama_like(spec, "diffllama"), "attention_bias": one_attention_bias(spec,
                                                                                 "diffllama"),
            "attention_dropout": 0.0}


DIFFLLAMA = ModelType(
    "diffllama", _read_diffllama, write=_write_diffllama, traits=Traits(),
    defaults=decoder_defaults(32000, 2048, 8192, 16, 32, None, "silu", 2048, False,
                              attention_bias=False, attention_dropout=0.0, head_dim=None))
