"""GPU (accelerator) specifications: dense peak throughput per dtype, memory, bandwidth.

Peaks are dense: datasheets often print sparse figures (2× higher, marked "with sparsity"), and a
model's FLOPs are dense. Every entry in presets/gpus.toml carries its source.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from calc.errors import CalcError
from calc.spec.model import Frozen

Dtype = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"]
DTYPES: tuple[str, ...] = get_args(Dtype)


class GPU(Frozen):
    """One accelerator as its datasheet describes it."""

    name: str = Field(min_length=1, description="catalogue key, e.g. 'a100'")
    title: str = Field(min_length=1, description="product name, e.g. 'NVIDIA A100 80GB SXM4'")
    peak_tflops: dict[Dtype, float] = Field(
        description="dense peak in TFLOP/s (TOP/s for int8) per dtype; tensor cores where any")
    memory_gib: float = Field(gt=0, description="device memory (vendors' 'GB' here are GiB)")
    bandwidth_gb_s: float | None = Field(None, gt=0, description="memory bandwidth, GB/s")
    tdp_w: float | None = Field(None, gt=0, description="board power, W")
    source: str = Field(min_length=1, description="datasheet or page the figures come from")
    notes: str = Field("", description="caveats: what is derived, what is unconfirmed")

    def peak_flops(self, dtype: str) -> float:
        """Dense peak FLOP/s at `dtype`; an error (never a guess) when the datasheet has none."""
        tflops = self.peak_tflops.get(dtype)  # type: ignore[call-overload]
        if tflops is None:
            have = ", ".join(self.peak_tflops)
            raise CalcError(f"dtype {dtype!r}: {self.name} has no dense {dtype} peak in its "
                            f"datasheet (it has: {have})")
        return tflops * 1e12
