"""Planning reports: training memory per GPU (`memory`), serving (`inference`) and
compute-optimal sizing (`optimal`). The library functions are calc.memory, calc.infer and
calc.optimal; each returns a calc.report.Document: `to_dict()` is its JSON, with conventions.
"""

from __future__ import annotations

# A count of bytes: an exact int when whole; a float where a division (by a parallel degree, by
# 2 for int4) leaves a fraction.
Bytes = int | float

# Below this, a float count of bytes or FLOPs is still an exact integer (2^53).
_EXACT_FLOAT = 2**53


def whole(value: int | float) -> int | float:
    """An integral float as an int (JSON prints 120000000000, not 120000000000.0); others as
    they are. Only below 2^53, where a float still holds the exact integer."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_FLOAT:
        return int(value)
    return value
