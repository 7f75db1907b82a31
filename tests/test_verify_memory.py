"""verify --memory: transformers' saved tensors against calc's activation bytes."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from calc.presets import load_model
from calc.reports.memory_check import verify_memory


@pytest.fixture(scope="module")
def report():
    preset = load_model("llama3.2-1b")
    return verify_memory(preset.spec, preset.hf_config, seq_len=32, batch=2)


def test_the_loss_saves_the_fp32_log_softmax_that_calc_counts(report):
    """Both sides hold the logits once in fp32 for the backward: 4 × V × tokens."""
    loss = [row for row in report.saved if row.module == "(loss)" and row.shape]
    assert {row.bytes for row in loss} == {4 * 128_256 * 64}


def test_every_layer_saves_the_same_and_the_sum_is_compared(report):
    layer = sum(r.bytes for r in report.saved if r.attention == "eager" and r.part == "layer 1")
    layers = next(c for c in report.memory_check
                  if c.attention == "eager" and c.part == "layers")
    # Llama 3.2 1B: 16 identical layers; RoPE's cos and sin (32 tokens × 64, bf16), shared by
    # every layer, are one storage each, counted once where first saved (layer 0)
    assert layers.saved_bytes == 16 * layer + 2 * 32 * 64 * 2


def test_differences_are_reported_not_hidden(report):
    """transformers' RMSNorm keeps its fp32 upcast and the gated MLP four d_ff-wide tensors:
    more than calc's fused-kernel count, so the check is not exact and exits 1."""
    assert not report.ok
    modules = {r.module for r in report.saved}
    assert "model.layers.1.input_layernorm" in modules
    assert any(r.dtype == "float32" and r.module.endswith("layernorm") for r in report.saved)
