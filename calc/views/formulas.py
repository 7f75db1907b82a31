"""Formulas as a table: each named quantity, its formula (text, or LaTeX where the format can
show it: markdown, html, latex), its value when it has one, and a legend of the symbols."""

from __future__ import annotations

from calc.reports.formulas import Formula, FormulaSet
from calc.tables import Column, Table, View


class _Forms:
    """A formula's (text, LaTeX) pair for a "formula" cell, each printed when first asked for:
    the text format never reads the LaTeX, which takes sympy as long again to print."""

    def __init__(self, formula: Formula):
        self._formula = formula

    def __getitem__(self, index: int) -> str:
        if index not in (0, 1):
            raise IndexError(index)
        return self._formula.latex if index else self._formula.text


def view(formulas: FormulaSet) -> View:
    valued = any(f.value is not None for f in formulas.values())
    columns = [Column("quantity"), Column("formula", "formula")]
    if valued:
        columns.append(Column("value", "int"))
    table = Table(f"Formulas; {formulas.caption}", columns)
    for name, formula in formulas.items():
        table.add(name, _Forms(formula), *([formula.value] if valued else []))
    legend = [f"{name} = {meaning}" for name, meaning in formulas.symbols.items()]
    return View(formulas.title, [table], [*legend, formulas.note])
