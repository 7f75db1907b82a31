"""Storage precisions: how many bytes one stored element takes, by dtype.

Weights, KV cache and activations are stored in one of these. int4/fp4 pack two elements a byte.
Block-quantised formats (GPTQ, AWQ, MX) also store a scale per group of elements (e.g. 16 bits
per 128 weights, +0.125 bits each); calc does not count those scales, and says so.
"""

from __future__ import annotations

from typing import Literal, get_args

StorageDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"]
STORAGE_DTYPES: tuple[str, ...] = get_args(StorageDtype)

BYTES_PER_ELEMENT: dict[str, int | float] = {
    "fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5, "fp4": 0.5,
}
