"""How each report prints: calc.views.<X> shows the reports of calc.reports.<X>.

`render(report, fmt)` is the one output path of every command and notebook: JSON straight from
`report.to_dict()`, every other format from the report's view (a title, tables and notes) through
calc.tables. A view module has one function, `view(report) -> View`; only the module of the
report at hand is imported, so the main report's path loads calc.views.estimate alone.
"""

from __future__ import annotations

import importlib
from typing import Any

from calc import document
from calc.errors import CalcError
from calc.tables import FORMATS, View, render_json, render_tables

_REPORTS = "calc.reports."


def view(report: Any) -> View:
    """The title, tables and notes that show `report` (a report of calc.reports.<X>)."""
    module = type(report).__module__
    if not module.startswith(_REPORTS):
        raise CalcError(f"render: {type(report).__name__} is not a calc report (what "
                        f"calc.estimate, calc.memory, calc.compare ... return)")
    name = module.removeprefix(_REPORTS)
    return importlib.import_module(f"calc.views.{name}").view(report)


def render(report: Any, fmt: str = "text", table: str | None = None) -> str:
    """A calc report in one of calc.tables.FORMATS; `table` keeps one of its tables (named by
    calc.tables.table_key; not with json, whose keys are the report's own)."""
    if fmt not in FORMATS:
        raise CalcError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if fmt == "json":
        if table is not None:
            raise CalcError("--table picks a printed table; with --format json every value is "
                            "already under its own key")
        return render_json(report.to_dict())
    shown = view(report)
    return render_tables(shown.title, shown.tables, shown.notes, fmt, table)


document.renderer = render
