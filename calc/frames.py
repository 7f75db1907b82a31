"""pandas DataFrames of calc's report objects, for notebooks; pandas is never a dependency.

Each function imports pandas when called and says how to install it when it is missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from calc.comparison import Comparison


def pandas() -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise ImportError('a DataFrame needs pandas: pip install "calc[notebook]"') from None
    return pd


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """{"params": {"total": 1}} → {"params.total": 1}; lists stay values."""
    if not isinstance(data, dict):
        return {prefix: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def report_frame(report: Any) -> Any:
    """One row per number of `report.to_dict()`, indexed by its JSON key ("params.total")."""
    values = {k: v for k, v in flatten(report.to_dict()).items() if not isinstance(v, list)}
    return pandas().DataFrame({"value": pandas().Series(values, dtype=object)})


def comparison_frame(comparison: Comparison) -> Any:
    """Quantities × models (models × quantities with layout='rows'), indexed by each row's
    unique key ("params.total", "memory.total_bytes"): labels repeat across groups."""
    frame = pandas().DataFrame(
        {model: [row.values[i] for row in comparison.rows]
         for i, model in enumerate(comparison.models)}, dtype=object,  # exact integers
        index=pandas().Index([row.key for row in comparison.rows], name="quantity"))
    return frame.T if comparison.layout == "rows" else frame
