"""Low-precision GEMM recipes (Transformer Engine style FP8, MXFP8, NVFP4): which FLOPs run at
which peak, the weight copies and the projection inputs they store."""

from __future__ import annotations

from fractions import Fraction

import pytest

import calc
from calc.spec.gemm_precision import GEMM_PRECISIONS

LLAMA2_7B = calc.load_preset("llama2-7b").spec
D, FF, V, LAYERS = 4096, 11008, 32000, 32
HIDDEN = LAYERS * (4 * D * D + 3 * D * FF)  # the layers' projection weights


def test_fp8_runs_the_projections_at_the_fp8_peak():
    """Projections (3 passes) at the H100's dense FP8 1978.9 TFLOP/s, attention and the LM head
    at its BF16 989.4: the step's effective peak is their FLOPs-weighted harmonic mean."""
    report = calc.estimate("llama2-7b", tokens=1e12, gpu="h100", precision="fp8")
    f = report.flops_per_token
    low = 3 * 2 * HIDDEN
    assert report.training.low_precision_share == pytest.approx(low / f.train, rel=1e-12)
    assert low == f.train - 3 * (f.components["attention/scores"] + 2 * D * V)
    peak = f.train / (low / 1978.9e12 + (f.train - low) / 989.4e12)
    assert report.training.peak_flops == pytest.approx(peak, rel=1e-12)
    bf16 = calc.estimate("llama2-7b", tokens=1e12, gpu="h100")
    assert bf16.training.gpu_hours / report.training.gpu_hours == pytest.approx(
        peak / 989.4e12, rel=1e-12)


def test_fp8_memory_weight_copies_and_inputs():
    """Two FP8 casts per projection weight; a projection's saved input at 1 byte: in a GPT-3
    layer (flash attention, dropout) the inputs of QKV (2sbh), W_O (2sbh), the MLP's up (2sbh)
    and down (8sbh) halve, 34·s·b·h → 27·s·b·h."""
    m = calc.memory("llama2-7b", precision="fp8").memory
    assert m.weight_copies_bytes == 2 * HIDDEN
    # allocated, not total: the margin's fragmentation share grows with what is allocated
    assert m.allocated_bytes == calc.memory("llama2-7b").memory.allocated_bytes + 2 * HIDDEN - (
        calc.memory("llama2-7b").memory.activations_bytes - m.activations_bytes)
    s, h = 2048, 12288
    gpt3 = calc.memory("gpt3-175b", precision="fp8", flash_attention=True, dropout=True).memory
    assert gpt3.activations_per_layer_bytes == 27 * s * h


def test_block_scaled_formats():
    """OCP MX v1.0: one 8-bit scale per 32 values; NVFP4: one E4M3 scale per 16 4-bit values."""
    assert GEMM_PRECISIONS["mxfp8"].element_bytes == 1 + Fraction(1, 32)
    assert GEMM_PRECISIONS["nvfp4"].element_bytes == Fraction(1, 2) + Fraction(1, 16)
    report = calc.estimate("llama2-7b", tokens=1e12, gpu="b200", precision="nvfp4")
    assert report.training.low_precision_peak == 9000e12  # B200 dense FP4


@pytest.mark.parametrize("gpu, precision", [("a100", "fp8"), ("h100", "mxfp8"),
                                            ("h100", "nvfp4")])
def test_no_low_precision_path_is_one_line(gpu, precision):
    with pytest.raises(calc.CalcError, match=f"{gpu} has no .* peak") as error:
        calc.estimate("llama2-7b", tokens=1e12, gpu=gpu, precision=precision)
    assert "\n" not in str(error.value)
