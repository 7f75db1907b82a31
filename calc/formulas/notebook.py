"""Formulas as notebook objects: `calc.model_formulas("llama2-7b")` renders as LaTeX in Jupyter.

Each Formula is one named quantity of one model (calc.formulas.display.formulas_for: the
general formula with the model's structure substituted), with its value at the model's sizes
(T = its context length). `_repr_latex_` is what Jupyter shows; `.to_dict()` is JSON-ready.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import sympy

from calc.formulas.display import _value, formula_document, formulas_for
from calc.presets import Preset
from calc.report import resolve
from calc.spec import ModelSpec
from calc.symbols import INFO, LATEX_NAMES


def _latex_int(value: int) -> str:
    return f"{value:,}".replace(",", "{,}")


@dataclass(frozen=True)
class Formula:
    name: str
    expr: sympy.Expr
    value: int

    @property
    def latex(self) -> str:
        return sympy.latex(self.expr, symbol_names=LATEX_NAMES)

    @property
    def text(self) -> str:
        return str(self.expr)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "text": self.text, "latex": self.latex, "value": self.value}

    def _repr_latex_(self) -> str:
        return f"$\\text{{{self.name}}} = {self.latex} = {_latex_int(self.value)}$"


@dataclass(frozen=True)
class FormulaSet(Mapping[str, Formula]):
    """A model's formulas by name ("params total", "forward FLOPs/token mlp", ...)."""

    spec: ModelSpec
    formulas: dict[str, Formula]

    def __getitem__(self, name: str) -> Formula:
        return self.formulas[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.formulas)

    def __len__(self) -> int:
        return len(self.formulas)

    @property
    def symbols(self) -> dict[str, str]:
        """What every symbol in these formulas means."""
        used = sorted({str(s) for f in self.formulas.values() for s in f.expr.free_symbols})
        return {name: INFO[name].meaning for name in used}

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.spec.name,
                "formulas": {n: f.to_dict() for n, f in self.formulas.items()},
                "symbols": self.symbols}

    def _repr_latex_(self) -> str:
        lines = [f"\\text{{{name}}} &= {f.latex} = {_latex_int(f.value)}"
                 for name, f in self.formulas.items()]
        return "$$\\begin{aligned}" + " \\\\ ".join(lines) + "\\end{aligned}$$"

    def _repr_markdown_(self) -> str:
        return formula_document(self.spec, "markdown")


def model_formulas(model: str | ModelSpec | Preset) -> FormulaSet:
    spec = resolve(model).spec
    return FormulaSet(spec, {name: Formula(name, expr, _value(expr, spec))
                             for name, expr in formulas_for(spec).items()})
