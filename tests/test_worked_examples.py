"""Worked numbers by hand, each from a published shape or rule, against calc's counts.

A parameter count is exact; where a source rounds (12·L·d², "1.3B"), the test keeps the digits
the source prints.
"""

from __future__ import annotations

import pytest
import sympy

import calc
from calc.evaluate import count_flops, count_params, training_cost
from calc.formulas import params as P
from calc.formulas.specialise import specialise
from calc.symbols import SYMBOLS

LLAMA2_7B = calc.load_preset("llama2-7b").spec


def test_llama2_7b_by_hand():
    """meta-llama/Llama-2-7b-hf config.json (d 4096, d_ff 11008, V 32000, 32 layers, untied,
    RMSNorm) counted by hand, part by part; the total is the llama2_7b_en checkpoint's
    'params' in KerasHub's llama_presets.py."""
    c = count_params(LLAMA2_7B)
    attention = sum(c.per_layer[k] for k in ("attention/q", "attention/kv", "attention/o"))
    ffn = c.per_dense_ffn["mlp/up"] + c.per_dense_ffn["mlp/down"]
    assert attention == 67_108_864  # 4d²
    assert ffn == 135_266_304  # 3·d·d_ff
    assert 32 * (attention + ffn) == 6_476_005_376
    assert c.components["embedding/token"] + c.components["lm_head"] == 262_144_000  # 2Vd
    assert c.components["norms"] + c.components["final_norm"] == 266_240  # 2dL + d
    assert c.total == 6_738_415_616


def _matrices_only(spec: calc.ModelSpec) -> int:
    """Attention and FFN weight matrices of all layers (no biases, norms, embeddings)."""
    flops = count_flops(spec, 1, "full").components
    return sum(flops[k] for k in ("attention/q", "attention/kv", "attention/o", "mlp")) // 2


def test_gpt3_175b_is_12_L_d2_plus_embeddings():
    """Kaplan et al. 2020 Eq. 2.1 (N ≈ 12·n_layer·d_model²) at GPT-3 175B's 96 layers of
    12,288 (Brown et al. 2020 Table 2.1): 173.9B, plus 0.6B of embeddings."""
    spec = calc.load_preset("gpt3-175b").spec
    assert _matrices_only(spec) == 12 * 96 * 12_288**2
    assert round(_matrices_only(spec) / 1e9, 1) == 173.9
    assert round(count_params(spec).embedding / 1e9, 1) == 0.6


def test_gpt_style_1_3b():
    """GPT-3 XL's shape (Brown et al. 2020 Table 2.1: L = 24, d = 2048) with V = 50,000, tied:
    12·L·d² ≈ 1.21B (Kaplan et al. 2020 Eq. 2.1) plus V·d ≈ 0.10B ≈ the printed 1.3B."""
    spec = calc.load_preset("chapter-gpt-1.3b").spec
    assert round(_matrices_only(spec) / 1e9, 2) == 1.21
    assert round(count_params(spec).components["embedding/token"] / 1e9, 2) == 0.10
    assert round(count_params(spec).total / 1e9, 1) == 1.3


def test_llama2_7b_training_cost():
    """6·N·D (Kaplan et al. 2020 §2.1) for Llama 2 7B's 2.0T tokens (Touvron et al. 2023
    Table 1) ≈ 8.1e22; at the A100's dense BF16 312 TFLOP/s (NVIDIA A100 datasheet) × 40 % MFU
    ≈ 6.5e8 GPU-seconds ≈ 180,000 GPU-hours, within 3 % of the 184,320 the model card
    publishes (meta-llama/llama MODEL_CARD.md)."""
    n = count_params(LLAMA2_7B).total
    cost = training_cost(6 * n, 2e12, 312e12, 0.4, 1)
    assert round(cost.flops / 1e22, 1) == 8.1
    assert round(cost.gpu_hours * 3600 / 1e8, 1) == 6.5
    assert round(cost.gpu_hours, -4) == 180_000
    assert abs(cost.gpu_hours / 184_320 - 1) < 0.03


def test_attention_at_4096_against_2n():
    """PaLM's attention term (Chowdhery et al. 2022 Appendix B: 12·L·H·Q·T per training token,
    so 4·L·T·d forward) at T = 4096 for Llama 2 7B: ≈ 2.1 GFLOPs per token (about half under a
    causal mask) against 2N ≈ 13.5 GFLOPs."""
    full = count_flops(LLAMA2_7B, 4096, "full").components["attention/scores"]
    causal = count_flops(LLAMA2_7B, 4096, "causal").components["attention/scores"]
    assert full == 4 * 32 * 4096 * 4096
    assert round(full / 1e9, 1) == 2.1
    assert causal == full * (4096 + 1) // (2 * 4096)  # the triangle with its diagonal
    assert round(2 * count_params(LLAMA2_7B).total / 1e9, 1) == 13.5


def test_swiglu_8_thirds_gives_12_d2_plus_2d():
    """SwiGLU at d_ff = 2/3·4d (Shazeer 2020 §2 keeps the parameters of a 4d MLP; Touvron et
    al. 2023, LLaMA §2.2): 4d² + 3·d·(8/3)d + 2d = 12d² + 2d per layer, with two RMSNorms."""
    spec = calc.ModelSpec(vocab_size=100, d_model=768, n_layers=1, context_length=16,
                          attention={"n_heads": 12}, ffn={"activation": "swiglu", "d_ff": 2048},
                          norm={"kind": "rmsnorm"}, position={"kind": "rope"})
    per_layer = sum(P.PER_LAYER.values()) + sum(P.DENSE_FFN.values())
    d = SYMBOLS["d"]
    symbolic = specialise(per_layer, spec).subs({SYMBOLS["d_ff"]: sympy.Rational(8, 3) * d,
                                                 SYMBOLS["h"] * SYMBOLS["d_qk"]: d})
    assert sympy.expand(symbolic) == 12 * d**2 + 2 * d
    c = count_params(spec)
    assert sum(c.per_layer.values()) + sum(c.per_dense_ffn.values()) == 12 * 768**2 + 2 * 768


def test_20_tokens_per_parameter_for_70b():
    """Hoffmann et al. 2022: D ≈ 20·N (Table 3), Chinchilla's 70B on 1.4T tokens."""
    report = calc.estimate("llama2-70b")
    assert round(report.params.chinchilla_tokens / 1e12, 1) == 1.4
    assert calc.counting.TOKENS_PER_PARAMETER * 70e9 == 1.4e12


@pytest.mark.parametrize("vocab", [65, 100])
def test_minimal_character_gpt_by_hand(vocab):
    """The chapter-char-gpt preset (d 128, 4 layers, 256 positions, biases, untied head without
    bias) counted by hand: per block two LayerNorms 2·2d, qkv d·3d + 3d, proj d·d + d, up
    d·4d + 4d, down 4d·d + d; then 256·d positions, a final LayerNorm 2d and two V×d
    matrices. 826,112 + 256·V: 842,752 (about 0.84M) at tiny-shakespeare's 65 characters."""
    d = 128
    block = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
    assert 4 * block + 256 * d + 2 * d == 826_112
    spec = calc.load_preset("chapter-char-gpt").spec.updated(vocab_size=vocab)
    assert count_params(spec).total == 826_112 + 2 * vocab * d


@pytest.mark.parametrize("name, gflops", [
    ("deepseek-v3", 250),  # Zhao et al. 2025 (Insights into DeepSeek-V3, ISCA'25) Table 2
    ("llama3.1-405b", 2448),  # same table, "LLaMA-405B dense"
])
def test_training_flops_per_token_at_4096_against_isca25(name, gflops):
    """ISCA'25 Table 2 prints training GFLOPs per token at sequence length 4096 to 3-4 digits
    without stating its attention convention; calc's causal count lands within 1.1 %."""
    train = calc.estimate(name, seq_len=4096).flops_per_token.train
    assert abs(train / (gflops * 1e9) - 1) < 0.011
