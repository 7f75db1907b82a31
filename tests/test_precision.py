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


def test_an_fp8_step_counts_the_memory_of_its_recipe():
    """`--dtype fp8` (what the step prices) and `--precision` (what the memory counts) name one
    choice: an fp8 dtype alone stores the per-tensor recipe's copies and inputs, DeepSeek-V3's
    blockwise recipe its own, as if the precision had been given."""
    fp8 = calc.memory("llama2-7b", dtype="fp8").memory
    assert fp8.weight_copies_bytes == 2 * HIDDEN
    assert fp8.total_bytes == calc.memory("llama2-7b", precision="fp8").memory.total_bytes
    blockwise = calc.memory("llama2-7b", dtype="fp8", fp8_recipe="blockwise").memory
    assert blockwise.weight_copies_bytes == HIDDEN  # one copy: a 128×128 block transposes
    assert blockwise.total_bytes == calc.memory(
        "llama2-7b", dtype="fp8", precision="fp8-blockwise").memory.total_bytes


def test_an_fp8_precision_prices_the_step_in_fp8():
    """The step of `--precision fp8-blockwise` runs its GEMMs at the fp8 peak with the
    blockwise recipe, as `--dtype fp8 --fp8-recipe blockwise` does."""
    layout = dict(gpu="h100", gpus=8, tp=2, global_batch=64)
    by_precision = calc.step("llama3-8b", precision="fp8-blockwise", **layout)
    by_dtype = calc.step("llama3-8b", dtype="fp8", fp8_recipe="blockwise", **layout)
    assert (by_precision.layout.dtype, by_precision.layout.fp8_recipe) == ("fp8", "blockwise")
    assert by_precision.step_time_s == by_dtype.step_time_s
    assert by_precision.memory_per_gpu_bytes == by_dtype.memory_per_gpu_bytes
    assert by_precision.step_time_s < calc.step("llama3-8b", **layout).step_time_s


def test_every_stack_keeps_the_same_states_under_fp8_and_bf16():
    """fp8_choice makes a bf16 run with FP8 GEMMs the fp8 run: true while every stack's
    recipe for fp8 is its recipe for bf16."""
    from calc.spec.gemm_precision import FP8_WITH_STATES_OF
    from calc.spec.memory import STACKS

    assert all(stack.recipes[dtype] == stack.recipes["fp8"]
               for stack in STACKS.values() for dtype in FP8_WITH_STATES_OF)


@pytest.mark.parametrize("options, named", [
    (dict(dtype="fp8", precision="bf16"), "precision='bf16'"),
    (dict(dtype="fp8", fp8_recipe="current", precision="fp8-blockwise"), "fp8_recipe='current'"),
    (dict(dtype="fp16", precision="fp8"), "dtype='fp16'"),
])
def test_an_fp8_choice_that_disagrees_is_one_line(options, named):
    with pytest.raises(calc.CalcError, match=named) as error:
        calc.step("llama3-8b", gpu="h100", gpus=8, tp=2, global_batch=64, **options)
    assert "\n" not in str(error.value)
