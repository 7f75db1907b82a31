"""The base of every report: JSON through `to_dict()`, tables in notebooks, pandas DataFrames.

A report is a frozen pydantic model (`Document`) or, where its values are not plain data (a
sweep's numpy columns, sympy formulas), any class with `Shown`'s methods. How a report prints is
its view, calc.views.<the report's module name>; pandas is imported only when a DataFrame is
asked for and is never a dependency.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
        """Every number, indexed by its JSON key ("params.total"); needs pandas installed."""
        values = {k: v for k, v in flatten(self.to_dict()).items() if not isinstance(v, list)}
        return pandas().DataFrame({"value": pandas().Series(values, dtype=object)})


def pandas() -> Any:
    """The pandas module, or an ImportError that says how to install it."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError('a DataFrame needs pandas: pip install -e ".[notebook]"') from None
    return pd


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """{"params": {"total": 1}} → {"params.total": 1}; lists stay values."""
    if not isinstance(data, dict):
        return {prefix: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out
