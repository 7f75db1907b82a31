"""Formulas as a table: each named quantity, its formula (text, or LaTeX where the format can
show it: markdown, html, latex), its value when it has one, and a legend of the symbols."""

from __future__ import annotations

from calc.reports.formulas import FormulaSet
from calc.tables import Column, Table, View


def view(formulas: FormulaSet) -> View:
    valued = any(f.value is not None for f in formulas.values())
    columns = [Column("quantity"), Column("formula", "formula")]
    if valued:
        columns.append(Column("value", "int"))
    table = Table(f"Formulas; {formulas.caption}", columns)
    for name, formula in formulas.items():
        table.add(name, (formula.text, formula.latex), *([formula.value] if valued else []))
    legend = [f"{name} = {meaning}" for name, meaning in formulas.symbols.items()]
    return View(formulas.title, [table], [*legend, formulas.note])
