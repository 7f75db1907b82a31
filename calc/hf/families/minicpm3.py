"""MiniCPM3 (OpenBMB): minicpm3, DeepSeek-V2's latent attention with dense FFNs.

scale_emb and scale_depth scale activations: no parameter, no matrix product, no count.
"""

from __future__ import annotations

from typing import Any

from calc.hf.fields import HFConfig, decoder, divides
from calc.hf.model_type import ModelType, Traits
from calc.hf.writing import divisible, llama_like, need
from calc.spec import ModelSpec


def _read(c: HFConfig) -> dict[str, Any]:
    # modeling_minicpm3.py: DeepSeek-V2's multi-head latent attention (attention_bias on q_a,
    # kv_a and o) with a dense LlamaMLP (mlp_bias) on every layer; v_head_dim defaults to
    # hidden_size / heads (configuration_minicpm3.py); tied by default.
    divides(c)
    bias = c.flag("attention_bias")
    h = c.size("num_attention_heads")
    if c.given("num_key_value_heads") and c["num_key_value_heads"] != h:
        c.fail(f"num_key_value_heads={c['num_key_value_heads']} must equal num_attention_heads="
               f"{h}: the latent attention gives every head its keys, and transformers' "
               f"MiniCPM3 would repeat them num_attention_heads / num_key_value_heads times")
    v_head_dim = c.size("v_head_dim") if c.given("v_head_dim") else c.size("hidden_size") // h
    return decoder(c, {"n_heads": h}, ffn_bias=c.flag("mlp_bias"), attention={
        "qkv_bias": bias, "out_bias": bias, "mla": {
            "q_lora_rank": c.size("q_lora_rank") if c.given("q_lora_rank") else None,
            "kv_lora_rank": c.size("kv_lora_rank"), "v_head_dim": v_head_dim,
            "qk_nope_head_dim": c.size("qk_nope_head_dim", minimum=0),
            "qk_rope_head_dim": c.size("qk_rope_head_dim", minimum=0)}})


def _write(spec: ModelSpec) -> dict[str, Any]:
    # Multi-head latent attention with dense FFNs only (DeepSeek's writers need experts).
    mla = spec.attention.mla
    need(mla is not None, "attention.mla=None (minicpm3 uses multi-head latent attention)")
    divisible(spec, "minicpm3")
    config = llama_like(spec, "minicpm3")  # num_key_value_heads: every head (MLA)
    del config["head_dim"]
    return {**config, "attention_bias": spec.attention.qkv_bias, "mlp_bias": spec.ffn.bias,
            **mla.model_dump()}


MINICPM3 = ModelType(
    "minicpm3", _read, write=_write, traits=Traits(mla=True),
    defaults={
        "vocab_size": 73448, "hidden_size": 2560, "intermediate_size": 6400,
        "num_hidden_layers": 62, "num_attention_heads": 40, "num_key_value_heads": 40,
        "hidden_act": "silu",
        "max_position_embeddings": 32768, "tie_word_embeddings": True, "attention_bias": False,
        "mlp_bias": False, "q_lora_rank": 768, "kv_lora_rank": 256, "qk_nope_head_dim": 64,
        "qk_rope_head_dim": 32, "v_head_dim": None,
    })
