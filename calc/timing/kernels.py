"""The kinds of work the step-time model prices, one record each: a matrix product, an
element-wise kernel, a recurrence (a scan or a convolution of the non-attention mixers).

calc.timing.operators lists a model's records once; calc.timing.compute prices them per layout.
"""

from __future__ import annotations

from dataclasses import dataclass

ACTIVATION_BYTES = 2  # activations stay 16-bit outside the matrix products, fp8 runs included


@dataclass(frozen=True)
class Matmul:
    """One matrix product of a layer (or the LM head) for every token."""

    name: str  # calc's component key, with /up or /down where the FFN is split in two
    flops: float  # forward FLOPs per token, every layer that has it (calc's exact count)
    n: int  # output width of one instance before tensor parallelism
    k: int  # input width before tensor parallelism
    layers: int  # layers that run it (the LM head: 1)
    split: str  # column (n / t), row (k / t), kv (n / min(t, h_kv)), none (replicated)
    expert: bool = False  # rows are the tokens routed to one expert


@dataclass(frozen=True)
class ElementWise:
    """Bytes an element-wise kernel moves per token, all layers, forward pass."""

    name: str
    bytes: float
    region: str  # replicated (split t ways only by sequence parallelism) | tensor (always)
    when: str = ""  # "", "dropout", "eager", "eager+dropout": the layout choices it needs


@dataclass(frozen=True)
class Recurrence:
    """A scan or a causal convolution of a non-attention mixer, all layers that have it: its
    FLOPs (calc.formulas.mixers' convention) and the bytes a fused kernel moves (its inputs read
    and its output written once; the state stays on chip), per token, forward. Priced on a
    roofline: FLOPs at the CUDA-core fp32 peak (`unit` vector) or at the flash-kernel fraction
    of the 16-bit tensor-core peak (`unit` tensor: chunked algorithms whose work is matrix
    products), bytes at the element-wise HBM rate. Tensor parallelism splits it by heads or
    channels."""

    name: str  # calc's component key: mamba/scan, mamba/conv, deltanet/scan, ...
    flops: float
    bytes: float
    unit: str  # vector | tensor
    backward: float  # backward time per forward time
