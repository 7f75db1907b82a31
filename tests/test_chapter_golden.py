"""The source chapters' worked numbers (../shared/seeds), each with where it comes from.

000 = "1.3 Transformer" (实例演算, 自测, 代码);
001 = CS336 lecture 3 ("参数量估算", "Chinchilla 比例").
A parameter count is exact; the chapter's own approximations keep the digits it prints.
"""

from __future__ import annotations

import pytest
import sympy

import calc
from calc.evaluate import count_flops, count_params, training_cost
from calc.formulas import params as P
from calc.reports.formulas import specialise
from calc.symbols import SYMBOLS

LLAMA2_7B = calc.load_preset("llama2-7b").spec


def test_llama2_7b_table_exactly():
    """000 实例演算 '7B 级模型的参数量' table, row by row."""
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
    """000 实例演算: 12 × 96 × 12,288² ≈ 173.9B, plus 0.6B of embeddings."""
    spec = calc.load_preset("gpt3-175b").spec
    assert _matrices_only(spec) == 12 * 96 * 12_288**2
    assert round(_matrices_only(spec) / 1e9, 1) == 173.9
    assert round(count_params(spec).embedding / 1e9, 1) == 0.6


def test_chapter_1_3b_example():
    """000 自测: L = 24, d = 2048, V = 50,000, tied: 12·L·d² ≈ 1.21B plus V·d ≈ 0.10B ≈ 1.3B."""
    spec = calc.load_preset("chapter-gpt-1.3b").spec
    assert round(_matrices_only(spec) / 1e9, 2) == 1.21
    assert round(count_params(spec).components["embedding/token"] / 1e9, 2) == 0.10
    assert round(count_params(spec).total / 1e9, 1) == 1.3


def test_llama2_7b_training_cost():
    """000 实例演算 '训练成本': 6·N·D ≈ 8.1e22; at 312 TFLOP/s × 40 % ≈ 6.5e8 GPU-seconds
    ≈ 180,000 GPU-hours, against the published 184,320 (Llama 2 model card)."""
    n = count_params(LLAMA2_7B).total
    cost = training_cost(6 * n, 2e12, 312e12, 0.4, 1)
    assert round(cost.flops / 1e22, 1) == 8.1
    assert round(cost.gpu_hours * 3600 / 1e8, 1) == 6.5
    assert round(cost.gpu_hours, -4) == 180_000
    assert abs(cost.gpu_hours / 184_320 - 1) < 0.03  # "在几个百分点之内"


def test_attention_at_4096_against_2n():
    """000 '每个 token 的 FLOPs': at T = 4096 attention adds 4·L·T·d ≈ 2.1 GFLOPs per token
    (half under a causal mask) against 2N ≈ 13.5 GFLOPs."""
    full = count_flops(LLAMA2_7B, 4096, "full").components["attention/scores"]
    causal = count_flops(LLAMA2_7B, 4096, "causal").components["attention/scores"]
    assert full == 4 * 32 * 4096 * 4096
    assert round(full / 1e9, 1) == 2.1
    assert causal == full * (4096 + 1) // (2 * 4096)  # the triangle with its diagonal
    assert round(2 * count_params(LLAMA2_7B).total / 1e9, 1) == 13.5


def test_swiglu_8_thirds_gives_12_d2_plus_2d():
    """001 '参数量估算': SwiGLU with d_ff = 8/3·d: 4d² + 3·d·(8/3)d + 2d = 12d² + 2d per layer."""
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
    """001 'Chinchilla 比例': D ≈ 20·N, 70B → about 1.4T tokens."""
    report = calc.estimate("llama2-70b")
    assert round(report.params.chinchilla_tokens / 1e12, 1) == 1.4
    assert calc.counting.TOKENS_PER_PARAMETER * 70e9 == 1.4e12


@pytest.mark.parametrize("vocab, expected", [(65, 842_752)])
def test_minimal_character_gpt_about_084m(vocab, expected):
    """000 代码: '这个约 0.84M 参数的模型' — 826,112 + 256·V parameters (two V×128 matrices)."""
    spec = calc.load_preset("chapter-char-gpt").spec.updated(vocab_size=vocab)
    total = count_params(spec).total
    assert total == expected == 826_112 + 256 * vocab
    assert round(total / 1e6, 2) == 0.84


@pytest.mark.parametrize("name, gflops", [
    ("deepseek-v3", 250),  # Zhao et al. 2025 (Insights into DeepSeek-V3, ISCA'25) Table 2
    ("llama3.1-405b", 2448),  # same table, "LLaMA-405B dense"
])
def test_training_flops_per_token_at_4096_against_isca25(name, gflops):
    """ISCA'25 Table 2 prints training GFLOPs per token at sequence length 4096 to 3-4 digits
    without stating its attention convention; calc's causal count lands within 1.1 %."""
    train = calc.estimate(name, seq_len=4096).flops_per_token.train
    assert abs(train / (gflops * 1e9) - 1) < 0.011
