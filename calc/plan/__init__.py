"""Planning reports: training memory per GPU (`memory`), serving (`inference`) and
compute-optimal sizing (`optimal`). The library functions are calc.memory, calc.infer and
calc.optimal; each returns a report with `to_dict()` (its JSON) and its conventions."""

from __future__ import annotations

from typing import Any

from calc.spec.model import Frozen

# Below this, a float count of bytes or FLOPs is still an exact integer (2^53).
_EXACT_FLOAT = 2**53


def whole(value: int | float) -> int | float:
    """An integral float as an int (JSON prints 120000000000, not 120000000000.0); others as
    they are. Only below 2^53, where a float still holds the exact integer."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_FLOAT:
        return int(value)
    return value


class PlanReport(Frozen):
    """Base of the planning reports: JSON via `to_dict()`, tables in notebooks."""

    conventions: list[str]

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def _repr_markdown_(self) -> str:
        from calc.render import render

        return render(self, "markdown")

    def _repr_html_(self) -> str:
        from calc.render import render

        return render(self, "html")
