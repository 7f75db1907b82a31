"""One reader of the numbers a user types, for the CLI and the library alike.

`2e12`, `2T`, `1.5B`, `2_000` and `2000` are the same kind of value whether they come from
`--tokens 2T` or `calc.estimate(..., tokens="2T")`; a bool is not a number, and NaN, infinity
and values outside a quantity's range are refused with one line naming the field. The ranges are
data (RANGES): wide enough for any real run, narrow enough that a typo (an MFU of 1e-300, 1e-5
training tokens) is refused rather than printed as a 300-digit ratio.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator

from calc.counting import GIGA, TERA
from calc.errors import CalcError

# Decimal suffixes, case-insensitive: 2T = 2e12 (G is B for those who write GFLOP-style).
SUFFIXES = {"k": 1e3, "m": 1e6, "b": GIGA, "g": GIGA, "t": TERA, "p": 1e15}


@dataclass(frozen=True)
class Range:
    """Where a quantity may lie: [low, high], or (low, high] when `open_low`."""

    low: float
    high: float
    open_low: bool = False
    example: str = ""

    def holds(self, value: float) -> bool:
        above = value > self.low if self.open_low else value >= self.low
        return above and value <= self.high

    def __str__(self) -> str:
        return f"{'(' if self.open_low else '['}{_short(self.low)}, {_short(self.high)}]"


def _short(value: float) -> str:
    return f"{value:g}".replace("e+", "e")


# Training tokens: at least one, at most 1e18 (over 10,000 × the largest published run, Qwen3's
# 36T). Utilisation: 0.1 % of peak is already a broken run; 1 is the bound itself. FLOPs and
# days: the compute-budget questions of calc.optimal.
RANGES: dict[str, Range] = {
    "tokens": Range(1, 1e18, example="2e12 or 2T"),
    "epochs": Range(0, 1e6, open_low=True, example="3 (passes over the dataset)"),
    "mfu": Range(1e-3, 1, example="0.4 (a fraction of the dense peak)"),
    "mbu": Range(1e-3, 1, example="0.8 (a fraction of the memory bandwidth)"),
    "flops": Range(1, 1e40, example="5.76e23"),
    "days": Range(0, 1e6, open_low=True, example="30"),
    "tokens_per_parameter": Range(0, 1e6, open_low=True, example="20"),
    # cost and energy (calc.formulas.cost); host memory of a node for offload, GiB
    "price": Range(0, 1e6, open_low=True, example="2.5 (per GPU-hour)"),
    "pue": Range(1, 10, example="1.1"),
    "grid_intensity": Range(0, 1e4, example="385 (g CO2e per kWh)"),
    "host_memory_gib": Range(0, 1 << 24, open_low=True, example="2048"),
    # a node's NVMe drives together (ZeRO-Infinity), GB/s
    "nvme_gb_s": Range(0, 1e5, open_low=True, example="10 (four PCIe Gen4 drives read)"),
    # serving (calc.infer): requests a second, latency targets, shares of a prompt or a length
    "request_rate": Range(0, 1e7, open_low=True, example="10 (requests a second)"),
    "latency_ms": Range(0, 1e7, open_low=True, example="50 (milliseconds)"),
    "share": Range(0, 0.99, example="0.2 (a fraction)"),
    # memory a GPU keeps beside what a run allocates (CUDA context, NCCL, fragmentation), GiB
    "memory_margin": Range(0, 1 << 20, example="4 (GiB)"),
}


def parse(value: Any) -> float:
    """A finite float from a number or a text like '2e12', '2T', '1.5 B', '2_000'; ValueError
    (naming no field) for anything else, bools included."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is a bool, not a number")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip().replace("_", "")
        scale = SUFFIXES.get(text[-1:].lower(), 1.0) if text[-1:].isalpha() else 1.0
        try:
            number = float(text[:-1] if scale != 1.0 else text) * scale
        except ValueError:
            raise ValueError(f"{value!r} is not a number") from None
    else:
        raise ValueError(f"{value!r} is not a number")
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite number")
    return number


def quantity(value: Any, field: str, kind: str | None = None) -> float:
    """`value` read by `parse` and checked against RANGES[kind or field]; CalcError naming
    `field`, the value and the range."""
    bounds = RANGES[kind or field]
    try:
        number = parse(value)
    except ValueError as error:
        raise CalcError(f"{field}: {error}; expected a number in {bounds}, e.g. "
                        f"{bounds.example}") from None
    if not bounds.holds(number):
        raise CalcError(f"{field}: {value!r} is outside {bounds}; e.g. {bounds.example}")
    return number


@dataclass(frozen=True)
class Quantity:
    """The RANGES key of a field's quantity, kept on its type (calc.commands reads it to give
    the field's flag the same reader)."""

    kind: str


def annotated(kind: str) -> Any:
    """The type of a spec field holding a RANGES[kind] quantity: `tokens: Tokens | None`."""
    return Annotated[float, BeforeValidator(_validator(kind)), Quantity(kind)]


def _validator(kind: str) -> Any:
    """A pydantic BeforeValidator function for a field of RANGES[kind] (None passes)."""

    def check(value: Any, info: Any) -> Any:
        if value is None:
            return None
        try:
            return quantity(value, info.field_name, kind)
        except CalcError as error:
            raise ValueError(str(error)) from None

    return check
