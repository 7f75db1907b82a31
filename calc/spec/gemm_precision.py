"""Low-precision training recipes: which GEMMs run in FP8 or FP4, and what they add to memory.

Transformer Engine style (NVIDIA Transformer Engine docs, "Using FP8 with Transformer Engine";
Micikevicius et al. 2022, "FP8 Formats for Deep Learning" §4): the layers' linear projections run
their three GEMMs (forward, input gradient, weight gradient) in the low-precision format; the
attention products QKᵀ and A·V, the LM head, norms and softmax stay in 16 bits, and so do the
master weights, gradients and optimizer states of the model-state recipe. Each weight is cast
once per step and the copy kept for the micro-batches that follow, row-wise for the forward and
column-wise (transposed) for the input gradient: two copies per weight. A projection saves its
input for the weight gradient in the low-precision format. Block-scaled formats add a scale per
block: MXFP8 one 8-bit E8M0 scale per 32 values (OCP Microscaling Formats (MX) Specification
v1.0 §5), NVFP4 one FP8 E4M3 scale per 16 values plus one fp32 scale per tensor (NVIDIA,
"Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025). Per-tensor
scaling state (amax history and scales, a few KB per projection) is not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from calc.errors import CalcError
from calc.spec.hardware import GPU

GemmPrecision = Literal["bf16", "fp8", "fp8-blockwise", "mxfp8", "nvfp4"]
COPIES_PER_WEIGHT = 2  # row-wise and column-wise (transposed) casts of each weight


@dataclass(frozen=True)
class GemmPrecisionInfo:
    peak: str | None  # the datasheet peak the projections' GEMMs run at (None: the dtype's)
    element_bytes: Fraction  # one stored value, its share of block scales included
    needs: str | None  # a peak the GPU's datasheet must list (the hardware path exists)
    label: str
    source: str
    copies: int = COPIES_PER_WEIGHT  # cached casts per weight
    # bytes of W_O's stored input (the attention output), None: element_bytes
    attention_output_bytes: Fraction | None = None
    # the MoE's SwiGLU inputs stored in the low-precision format and its output recomputed
    # in the backward (the down projections' input not stored)
    swiglu_recomputed: bool = False

    @property
    def weight_copy_bytes(self) -> Fraction:
        """Bytes per projection weight of the cached low-precision copies."""
        return self.copies * self.element_bytes if self.peak else Fraction(0)


_TE = "NVIDIA Transformer Engine docs ('Using FP8 with Transformer Engine')"
GEMM_PRECISIONS: dict[str, GemmPrecisionInfo] = {
    "bf16": GemmPrecisionInfo(None, Fraction(0), None, "every GEMM in the training dtype",
                              "the model-state recipe"),
    "fp8": GemmPrecisionInfo(
        "fp8", Fraction(1), "fp8", "projections' GEMMs in FP8 (E4M3/E5M2, per-tensor scales)",
        f"{_TE}; Micikevicius et al. 2022 §4"),
    # DeepSeek-V3's recipe (arXiv:2412.19437): E4M3 everywhere with 1×128 activation tiles and
    # 128×128 weight blocks (§3.3.2); activations cached in FP8 for the linear layers'
    # backward, W_O's input in E5M6 (12 bits) and the MoE SwiGLU's inputs in FP8 with its
    # output recomputed (§3.3.3 'Low-Precision Activation'). One cached copy per weight: a
    # 128×128 block keeps its scale when transposed, so the input gradient reads the same
    # copy (the report does not print how weights are cached; this is the block geometry).
    # The scales (one per 128 values, and per 128×128 block) are not counted: ≤ 4/128 = 3.1 %
    # of the stored bytes if they are fp32.
    "fp8-blockwise": GemmPrecisionInfo(
        "fp8", Fraction(1), "fp8",
        "projections' GEMMs in FP8 with 1×128 tile and 128×128 block scales; W_O's input "
        "stored in E5M6, the MoE SwiGLU's inputs in FP8 and its output recomputed",
        "DeepSeek-AI 2024, DeepSeek-V3 report (arXiv:2412.19437) §3.3.1-3.3.3",
        copies=1, attention_output_bytes=Fraction(3, 2), swiglu_recomputed=True),
    "mxfp8": GemmPrecisionInfo(
        "fp8", 1 + Fraction(1, 32), "fp4",
        "projections' GEMMs in MXFP8 (one E8M0 scale per 32 values)",
        f"{_TE}; OCP MX Specification v1.0 §5; MX GEMMs run at the FP8 rate on 5th-generation "
        f"tensor cores (Blackwell), the GPUs whose datasheet lists FP4"),
    "nvfp4": GemmPrecisionInfo(
        "fp4", Fraction(1, 2) + Fraction(1, 16), "fp4",
        "projections' GEMMs in NVFP4 (one E4M3 scale per 16 values)",
        f"{_TE}; NVIDIA 2025, 'Introducing NVFP4' (16-value blocks, E4M3 scales)"),
}


# The step prices an fp8 run by its recipe (calc.spec.layout.Fp8Recipe: how the GEMMs scale), the
# memory counts it by what the recipe stores (GEMM_PRECISIONS). One choice, two names, so each
# implies the other: per-tensor and row-wise scales store one FP8 value an element and two casts
# a weight ("fp8"); DeepSeek-V3's blocks and MXFP8's 32-value scales are rows of their own.
RECIPE_PRECISION = {"delayed": "fp8", "current": "fp8", "rowwise": "fp8",
                    "blockwise": "fp8-blockwise", "mxfp8": "mxfp8"}
PRECISION_RECIPE = {"fp8-blockwise": "blockwise", "mxfp8": "mxfp8"}  # "fp8": any per-tensor one
# The training dtypes whose stacks keep the same model states under fp8 GEMMs (calc.spec.memory
# STACKS: every stack's recipe for fp8 is its recipe for bf16), so an fp8 precision with either
# is the fp8 run.
FP8_WITH_STATES_OF = ("bf16", "fp8")


def fp8_choice(dtype: str | None, recipe: str | None,
               precision: str | None) -> tuple[str | None, str | None, str | None]:
    """(dtype, fp8 recipe, GEMM precision) made one choice: an fp8 dtype implies its recipe's
    precision, an fp8 precision the fp8 dtype and its recipe; ValueError naming the values that
    disagree. Values not given are None; other dtypes and precisions pass unchanged."""
    if precision in RECIPE_PRECISION.values() and dtype in (None, *FP8_WITH_STATES_OF):
        dtype = "fp8"
    if dtype != "fp8":
        return dtype, recipe, precision
    # no recipe: the step's default (calc.timing.schedule.DEFAULT_FP8_RECIPE), per-tensor
    implied = RECIPE_PRECISION[recipe or "delayed"]
    if precision is None:
        return dtype, recipe, implied
    if recipe is None and precision in PRECISION_RECIPE:
        return dtype, PRECISION_RECIPE[precision], precision
    if precision != implied:
        given = "dtype='fp8'" + (f" with fp8_recipe={recipe!r}" if recipe else "")
        raise ValueError(f"precision={precision!r} does not go with {given}, which stores its "
                         f"GEMMs as precision={implied!r}; give one of them, or matching ones "
                         f"({', '.join(f'{r} → {p}' for r, p in RECIPE_PRECISION.items())})")
    return dtype, recipe, precision


def check_path(gpu: GPU, precision: str) -> None:
    """One line naming what is missing when `gpu` has no tensor-core path for `precision` (the
    memory needs only this; a step needs the peaks too)."""
    info = GEMM_PRECISIONS[precision]
    if info.needs is not None and info.needs not in gpu.peak_tflops:
        raise CalcError(f"precision={precision!r}: {gpu.name} has no {info.needs} peak in its "
                        f"datasheet, so it has no {precision} tensor-core path ({info.source})")


def gemm_peaks(gpu: GPU, precision: str, dtype: str) -> tuple[float, float]:
    """(the low-precision GEMMs' peak, the training dtype's peak) of `gpu`, FLOP/s; one line
    naming what is missing when the GPU has no such path."""
    check_path(gpu, precision)
    info = GEMM_PRECISIONS[precision]
    base = gpu.peak_flops(dtype)
    return (gpu.peak_flops(info.peak) if info.peak else base), base


def precision_sentence(precision: str) -> str:
    """What a low-precision recipe runs where, and what it stores."""
    info = GEMM_PRECISIONS[precision]
    return (f"Precision {precision}: {info.label} — the layers' projections, forward and both "
            f"gradients, at the {info.peak} peak; attention's QKᵀ and A·V, the LM head, routers "
            f"and adapters at the training dtype. Memory: {info.copies} cached casts per "
            f"projection weight ({float(info.weight_copy_bytes):g} bytes) and each projection's "
            f"input saved at {float(info.element_bytes):g} bytes; scaling state not counted. "
            f"Source: {info.source}.")
