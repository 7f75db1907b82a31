"""A comparison as tables: one per row group, a column per model (or a row, layout='rows')."""

from __future__ import annotations

from calc.reports.compare import Comparison, ComparisonRow
from calc.tables import Cell, Column, Table, View


def _groups(comparison: Comparison) -> dict[str, list[ComparisonRow]]:
    groups: dict[str, list[ComparisonRow]] = {}
    for row in comparison.rows:
        groups.setdefault(row.group, []).append(row)
    return groups


def view(comparison: Comparison) -> View:
    tables = []
    for title, rows in _groups(comparison).items():
        if comparison.layout == "rows":  # a catalogue: one row per model
            table = Table(title, [Column("model")]
                          + [Column(row.label, row.kind) for row in rows])
            for i, model in enumerate(comparison.models):
                table.add(model, *(row.values[i] for row in rows))
        else:
            table = Table(title, [Column("quantity")]
                          + [Column(model, "int") for model in comparison.models])
            for row in rows:  # each row its own unit: the cells carry their kind
                table.add(row.label, *(Cell(value, row.kind) for value in row.values))
        tables.append(table)
    names = ", ".join(comparison.models)
    title = f"calc compare: {names}" if len(names) < 80 else \
        f"calc compare: {len(comparison.models)} models"
    return View(title, tables, comparison.conventions)
