"""The base of every report: JSON through `to_dict()`, tables in notebooks, pandas DataFrames.

A report is a frozen pydantic model (`Document`) or, where its values are not plain data (a
sweep's numpy columns, sympy formulas), any class with `Shown`'s methods. How a report prints is
its view, calc.views.<the report's module name>; pandas is imported only when a DataFrame is
asked for and is never a dependency.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calc.errors import install
from calc.spec.model import Frozen

# How a report prints: calc.views.render, installed by calc.views when it is imported (and
# `import calc` imports it). Views sit above reports; this hook lets a report show itself in a
# notebook without an import back up.
renderer: Callable[[Any, str], str] | None = None


class Shown:
    """`to_dict()` (JSON-ready) and the tables Jupyter shows (`_repr_markdown_`, `_repr_html_`)."""

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")  # type: ignore[attr-defined]

    def _repr_markdown_(self) -> str:
        assert renderer is not None, "import calc installs calc.views.render"
        return renderer(self, "markdown")

    def _repr_html_(self) -> str:
        assert renderer is not None, "import calc installs calc.views.render"
        return renderer(self, "html")


class Document(Shown, Frozen):
    """A report as data: every number is a field, `to_dict()` is its JSON contract."""

    def to_dataframe(self) -> Any:
        """One row (named by the report's model, when it has one) with a column per value,
        named by its JSON key ("params.total"), each in its own dtype (ints, floats, bools,
        strings; pandas' nullable ones where a value is missing), so reports concatenate into
        a table: `pandas.concat([r.to_dataframe() for r in reports])`. Needs pandas."""
        values = {k: v for k, v in flatten(self.to_dict()).items() if not isinstance(v, list)}
        return frame({key: [value] for key, value in values.items()},
                     index=[getattr(self, "model", 0)])


def frame(columns: dict[str, list[Any]], index: list[Any]) -> Any:
    """A DataFrame whose columns keep their values' types: int64 (Int64 where a value is
    missing), float64, bool (boolean), string; integers past int64 stay exact Python ints."""
    pd = pandas()
    return pd.DataFrame({key: pd.Series(values, index=index, dtype=_dtype(values))
                         for key, values in columns.items()}, index=index)


_INT64 = 2**63


def _dtype(values: list[Any]) -> str:
    """The pandas dtype that holds `values` (None where missing) exactly."""
    present = [v for v in values if v is not None]
    gap = len(present) < len(values)
    if not present:
        return "object"
    if all(isinstance(v, bool) for v in present):
        return "boolean" if gap else "bool"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        if all(-_INT64 <= v < _INT64 for v in present):
            return "Int64" if gap else "int64"
        return "object"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return "float64"
    if all(isinstance(v, str) for v in present):
        return "string"
    return "object"


def pandas() -> Any:
    """The pandas module, or an ImportError that says how to install it."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(f"a DataFrame needs pandas: {install('notebook')}") from None
    return pd


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """{"params": {"total": 1}} → {"params.total": 1}; lists stay values."""
    if not isinstance(data, dict):
        return {prefix: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out
