"""The kinds of work the step-time model prices, one record each: a matrix product, an
element-wise kernel, a recurrence (a scan or a convolution of the non-attention mixers).

calc.timing.operators lists a model's records once; calc.timing.compute prices them per layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

ACTIVATION_BYTES = 2  # activations stay 16-bit outside the matrix products, fp8 runs included

# How tensor parallelism splits a product (Megatron-LM, Shoeybi et al. 2019 §3): its output
# columns (n / t), its input rows (k / t), the key/value heads (n / min(t, h_kv): heads beyond
# h_kv are replicated), or not at all (a router, replicated on every rank).
Split = Literal["column", "row", "kv", "none"]
# Where an element-wise kernel runs: on the full hidden width every tensor-parallel rank holds
# (split t ways only by sequence parallelism), or inside the split region (always t ways).
Region = Literal["replicated", "tensor"]
# What runs a recurrence: CUDA cores (an fp32 loop) or tensor cores (a chunked algorithm).
Unit = Literal["vector", "tensor"]


def _known(value: str, kind: object, field: str) -> None:
    """A record's typed field holds one of its Literal's values: a typo raises at once instead
    of mis-pricing silently."""
    if value not in get_args(kind):
        raise ValueError(f"{field}={value!r}: expected one of {', '.join(get_args(kind))}")


@dataclass(frozen=True)
class Matmul:
    """One matrix product of a layer (or the LM head) for every token."""

    name: str  # calc's component key, with /up or /down where the FFN is split in two
    flops: float  # forward FLOPs per token, every layer that has it (calc's exact count)
    n: int  # output width of one instance before tensor parallelism
    k: int  # input width before tensor parallelism
    layers: int  # layers that run it (the LM head: 1)
    split: Split
    expert: bool = False  # rows are the tokens routed to one expert
    # a "kv" product's key/value heads where its layers have their own (attention.kind_shapes);
    # 0: the model's (ModelTerms.kv_heads)
    kv_heads: int = 0
    # weight sets held where layers share them (the shared block: shared_block.n_blocks sets
    # for its depths); 0: one per layer. Memory holds these; each layer still reads its set.
    weight_sets: int = 0

    def __post_init__(self) -> None:
        _known(self.split, Split, "split")

    @property
    def stored_layers(self) -> int:
        """Copies of the weight held: its sets, else one per layer."""
        return self.weight_sets or self.layers


@dataclass(frozen=True)
class ElementWise:
    """Bytes an element-wise kernel moves per token, all layers, forward pass."""

    name: str
    bytes: float
    region: Region
    dropout: bool = False  # runs only with dropout
    eager: bool = False  # runs only with eager (not flash) attention

    def __post_init__(self) -> None:
        _known(self.region, Region, "region")

    def runs(self, dropout: bool, flash_attention: bool) -> bool:
        """Whether a layout with these choices runs this kernel."""
        return (dropout or not self.dropout) and (not flash_attention or not self.eager)


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
    unit: Unit
    backward: float  # backward time per forward time

    def __post_init__(self) -> None:
        _known(self.unit, Unit, "unit")
