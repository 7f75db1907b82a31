"""Attention kernels at their measured speed: the QKᵀ and A·V products of a layer, priced at what
the kernel a stack runs reaches at that sequence length, head dimension and masking, forward
and backward (presets/attention.toml, from the kernels' authors' benchmarks).

A series is one kernel's TFLOP/s on one GPU over sequence lengths, for one direction, head
dimension and masking. A lookup interpolates log-linearly in the sequence length and in the head
dimension between the measured points (the end points beyond them) and scales by the GPU's dense
16-bit peak over the measured GPU's (a GPU of the same generation runs the same kernel). A causal
backward without its own series is the non-causal backward times the forward's causal /
non-causal ratio at the same point: masking idles the same tiles in both passes.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from calc.counting import TERA
from calc.errors import CalcError, one_line
from calc.presets import _data_dir, get_gpu
from calc.spec.model import Frozen

FILE = "attention.toml"
Kernel = Literal["fa2", "fa3", "cudnn"]
Direction = Literal["forward", "backward"]
ATTENTION_DTYPE = "bf16"  # the kernels measured run 16-bit (fp8 runs keep attention in bf16)


class KernelSeries(Frozen):
    """One kernel's measured speed on one GPU over sequence lengths."""

    gpu: str = Field(min_length=1, description="GPU-catalogue key of the GPU measured")
    kernel: Kernel
    direction: Direction
    head_dim: int = Field(ge=16, le=1024)
    causal: bool
    seq_len: tuple[int, ...] = Field(min_length=2, description="tokens per sequence, rising")
    tflops: tuple[float, ...] = Field(min_length=2, description="TFLOP/s at each length "
                                                                 "(causal: half the square)")
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _paired(self) -> KernelSeries:
        if len(self.seq_len) != len(self.tflops) or list(self.seq_len) != sorted(
                set(self.seq_len)):
            raise ValueError("seq_len must rise and pair with tflops one to one")
        return self


@cache
def load_kernels() -> tuple[KernelSeries, ...]:
    """presets/attention.toml's series."""
    data = tomllib.loads((_data_dir() / FILE).read_text(encoding="utf-8"))
    try:
        return tuple(KernelSeries.model_validate(entry) for entry in data["series"])
    except ValidationError as error:
        raise CalcError(one_line(error, f"presets/{FILE}")) from None


def _between(points: list[tuple[float, float]], x: float) -> float:
    """y at x, linear between the (x, y) points (sorted by x), the end values beyond them."""
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in pairwise(points):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


@dataclass(frozen=True)
class AttentionKernel:
    """One kernel as measured on one GPU, priced on a GPU whose 16-bit peak is `scale` times
    the measured GPU's."""

    name: str
    series: tuple[KernelSeries, ...]
    scale: float

    def _measured(self, direction: str, causal: bool, head_dim: int, seq_len: float) -> float:
        """TFLOP/s as measured, interpolated over head dimensions and lengths."""
        chosen = [s for s in self.series if s.direction == direction and s.causal == causal]
        by_dim = {
            s.head_dim: _between([(math.log2(n), t) for n, t in zip(s.seq_len, s.tflops,
                                                                      strict=True)],
                                 math.log2(max(seq_len, 1)))
            for s in chosen}
        return _between(sorted((math.log2(d), t) for d, t in by_dim.items()),
                        math.log2(head_dim))

    def flops_per_s(self, direction: Direction, causal: bool, head_dim: int,
                    seq_len: float) -> float:
        """FLOP/s of a call over `seq_len` tokens at `head_dim`, on the priced GPU."""
        have = {(s.direction, s.causal) for s in self.series}
        if (direction, causal) in have:
            measured = self._measured(direction, causal, head_dim, seq_len)
        else:  # a causal backward: the forward's masking ratio
            measured = (self._measured(direction, not causal, head_dim, seq_len)
                        * self._measured("forward", causal, head_dim, seq_len)
                        / self._measured("forward", not causal, head_dim, seq_len))
        return measured * TERA * self.scale


def attention_kernel(name: str, gpu: str, generation_gpus: tuple[str, ...]
                     ) -> AttentionKernel | None:
    """Kernel `name` measured on a GPU of `gpu`'s generation (`generation_gpus`), scaled to
    `gpu`'s 16-bit peak; None when no GPU of the generation was measured with it."""
    series = [s for s in load_kernels() if s.kernel == name and s.gpu in generation_gpus]
    if not series:
        return None
    measured = series[0].gpu
    if any(s.gpu != measured for s in series):
        raise CalcError(f"presets/{FILE}: kernel {name} measured on several GPUs of one "
                        f"generation; keep one")
    scale = get_gpu(gpu).peak_flops(ATTENTION_DTYPE) / get_gpu(measured).peak_flops(
        ATTENTION_DTYPE)
    return AttentionKernel(name, tuple(series), scale)
