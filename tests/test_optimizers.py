"""Optimizers as data: state bytes per parameter, each with its source, including those whose
states follow the shapes (Adafactor's factored second moment, Muon's matrix-only momentum)."""

from __future__ import annotations

import pytest

import calc
from calc.spec.memory import OPTIMIZERS, RECIPES

LLAMA2_7B = calc.load_preset("llama2-7b").spec
N = calc.count_params(LLAMA2_7B).total
# Llama 2 7B by hand (config.json): 32 layers of d = 4096, d_ff = 11008, V = 32000, untied head,
# two RMSNorms per layer and a final one.
D, FF, V, LAYERS = 4096, 11008, 32000, 32
HIDDEN = LAYERS * (4 * D * D + 3 * D * FF)
VECTORS = (2 * LAYERS + 1) * D


def _optimizer_bytes(optimizer: str, **options) -> float:
    return calc.memory("llama2-7b", optimizer=optimizer, **options).memory.optimizer_bytes


def test_every_optimizer_has_a_source():
    for name, info in OPTIMIZERS.items():
        assert info.source and info.label, name


@pytest.mark.parametrize("optimizer, per_param", [("adamw", 8), ("adam8bit", 2), ("sgd", 4),
                                                  ("lion", 4)])
def test_flat_optimizers(optimizer, per_param):
    """AdamW 8, 8-bit Adam 2, SGD with momentum 4 (HF model_memory_anatomy); Lion's one
    momentum 4 (Chen et al. 2023 §2); plus the mixed recipe's fp32 master copy, 4."""
    assert _optimizer_bytes(optimizer) == (per_param + 4) * N


def test_muon_keeps_one_momentum_per_hidden_matrix():
    """Liu et al. 2025 §2: Muon on the layers' matrices, AdamW on embeddings, head and norms."""
    assert HIDDEN + 2 * V * D + VECTORS == N
    assert _optimizer_bytes("muon") == pytest.approx(
        4 * N + 4 * HIDDEN + 8 * (N - HIDDEN), rel=1e-12)


def test_adafactor_factors_every_matrix():
    """Shazeer & Stern 2018 §3: rows + columns per matrix (embeddings and head included), the
    full second moment per vector; no first moment (HF's beta1=None)."""
    sides = LAYERS * (4 * (D + D) + 3 * (D + FF)) + 2 * (V + D)
    assert _optimizer_bytes("adafactor") == pytest.approx(4 * N + 4 * (sides + VECTORS),
                                                          rel=1e-12)


def test_adafactor_and_muon_on_adapters():
    """LoRA: A (n_in × r) and B (r × n_out) are matrices: Adafactor keeps n_in + n_out + 2r
    values per adapter, Muon one momentum per parameter (and no fp32 master copy under the
    fine-tune's default stack, transformers' pure-bf16)."""
    options = dict(finetune="lora", lora_rank=8, lora_targets="q,v")
    adapters = 2 * LAYERS * 8 * (D + D)
    muon = calc.memory("llama2-7b", optimizer="muon", **options).memory
    assert muon.options.recipe_name == "pure-bf16"
    assert muon.optimizer_bytes == pytest.approx(4 * adapters, rel=1e-12)
    factored = calc.memory("llama2-7b", optimizer="adafactor", **options).memory
    assert factored.optimizer_bytes == pytest.approx(4 * 2 * LAYERS * (D + D + 2 * 8),
                                                     rel=1e-12)


def test_pure_bf16_recipe_is_qlora_papers_16_bit_baseline():
    """Dettmers et al. 2023 §1: regular 16-bit fine-tuning of LLaMA 65B takes more than 780 GB:
    16-bit weights and gradients and fp32 Adam states, 12 bytes per parameter."""
    m = calc.memory("llama1-65b", recipe="pure-bf16").memory
    states = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes
    assert sum(m.bytes_per_param.values()) == 12 and RECIPES["pure-bf16"].master == 0
    assert 780e9 < states < 790e9
