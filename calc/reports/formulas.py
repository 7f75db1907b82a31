"""The formulas as a report: `calc.model_formulas("llama2-7b")` and every `--formula` flag.

A model's formulas are the general ones (calc.formulas, with 0/1 structure indicators) with its
structure substituted (calc.formulas.specialise: indicators, and sizes that are zero or equal
for it, such as d_v = d_qk under MHA) and its sizes kept symbolic, so Llama 2 7B's attention
reads 4·L·d·d_qk·h rather than the general MHA/MLA expression; each with its value at the
model's sizes (T = its context length). A planning command's formulas keep its options (ZeRO
stage, recomputation) symbolic. Jupyter shows a FormulaSet as LaTeX; calc.views.formulas
prints it as a table.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy
from sympy.printing.latex import LatexPrinter
from sympy.printing.str import StrPrinter

from calc.document import Shown
from calc.evaluate import symbol_values
from calc.formulas import COMMAND_GROUPS, GROUPS, flops, params
from calc.formulas.specialise import specialised
from calc.presets import Preset, resolve
from calc.spec import ModelSpec
from calc.symbols import INFO, LATEX_NAMES, SYMBOLS


def formulas_for(spec: ModelSpec) -> dict[str, sympy.Expr]:
    """The named formulas of one model: parameters by component and in total, FLOPs per token."""
    named: dict[str, sympy.Expr] = {}
    for key, expr in params.COMPONENTS.items():
        named[f"params {key}"] = expr
    named.update({f"params {key}": expr for key, expr in params.SUMMARY.items()})
    named.update({f"forward FLOPs/token {key}": expr
                  for key, expr in flops.FORWARD_PER_TOKEN.items()})
    scores = flops.ATTENTION_SCORES_PER_SEQUENCE
    named["attention FLOPs/sequence, causal"] = scores.subs(SYMBOLS["i_causal"], 1)
    named["attention FLOPs/sequence, full"] = scores.subs(SYMBOLS["i_causal"], 0)
    special = specialised(named, spec)
    return {name: expr for name, expr in special.items() if expr != 0}


def _sizes(spec: ModelSpec) -> dict[sympy.Symbol, sympy.Integer]:
    """Every symbol's value for `spec`, T its context length (numbers: no order matters)."""
    values = {SYMBOLS[n]: sympy.Integer(v) for n, v in symbol_values(spec).items()}
    values[SYMBOLS["T"]] = sympy.Integer(spec.context_length)
    return values


def _value(expr: sympy.Expr, sizes: Mapping[sympy.Symbol, sympy.Integer]) -> int:
    return int(expr.xreplace(sizes))


def _latex_int(value: int) -> str:
    return f"{value:,}".replace(",", "{,}")


class _Once:
    """A sympy printer that prints each distinct compound term once: a set's formulas repeat
    the same sums, and ordering a sum's terms for printing is most of the time printing takes
    (a quarter of a second for GPT-3 175B's memory formulas, a fortieth with this). A term's
    text does not depend on where it stands (its parent adds any brackets), except a lone
    Float's, and atoms and calls with options are printed as they are."""

    def __init__(self, settings: dict[str, Any]):
        super().__init__(settings)  # type: ignore[call-arg]
        self._made: dict[sympy.Basic, str] = {}

    def _print(self, expr: Any, **kwargs: Any) -> str:
        if kwargs or not isinstance(expr, sympy.Basic) or not expr.args:
            return super()._print(expr, **kwargs)  # type: ignore[misc]
        if expr not in self._made:
            self._made[expr] = super()._print(expr)  # type: ignore[misc]
        return self._made[expr]


class _Text(_Once, StrPrinter):
    pass


class _Latex(_Once, LatexPrinter):
    pass


class Printers:
    """The text and LaTeX printers a set's formulas share: what str(expr) and
    sympy.latex(expr, symbol_names=LATEX_NAMES) print, each shared term printed once."""

    def __init__(self) -> None:
        self._text: _Text | None = None
        self._latex: _Latex | None = None

    def text(self, expr: sympy.Basic) -> str:
        self._text = self._text or _Text({"order": None})  # as str(expr) prints
        return self._text.doprint(expr)

    def latex(self, expr: sympy.Basic) -> str:
        self._latex = self._latex or _Latex({"symbol_names": LATEX_NAMES})
        return self._latex.doprint(expr)


@dataclass(frozen=True)
class Formula:
    """One named quantity: its expression and, for a model's formulas, its value."""

    name: str
    expr: sympy.Expr
    value: int | None = None
    printers: Printers = field(default_factory=Printers, compare=False, repr=False)

    @property
    def latex(self) -> str:
        return self.printers.latex(self.expr)

    @property
    def text(self) -> str:
        return self.printers.text(self.expr)

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "latex": self.latex,
                **({"value": self.value} if self.value is not None else {})}

    def _repr_latex_(self) -> str:
        value = "" if self.value is None else f" = {_latex_int(self.value)}"
        return f"$\\text{{{self.name}}} = {self.latex}{value}$"


@dataclass(frozen=True)
class FormulaSet(Shown, Mapping[str, Formula]):
    """Formulas by name ("params total", "forward FLOPs/token mlp", ...), with what they are of
    (`about`: the model or the command), a caption and a note for the printed table."""

    title: str
    caption: str
    note: str
    about: dict[str, str]
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
        return {**self.about, "formulas": {n: f.to_dict() for n, f in self.formulas.items()},
                "symbols": self.symbols}

    def _repr_latex_(self) -> str:
        lines = [f"\\text{{{name}}} &= {f.latex}"
                 + ("" if f.value is None else f" = {_latex_int(f.value)}")
                 for name, f in self.formulas.items()]
        return "$$\\begin{aligned}" + " \\\\ ".join(lines) + "\\end{aligned}$$"


def model_formulas(model: str | ModelSpec | Preset) -> FormulaSet:
    """A model's formulas with their values at its sizes (T = its context length)."""
    spec = resolve(model).spec
    sizes, printers = _sizes(spec), Printers()
    formulas = {name: Formula(name, expr, _value(expr, sizes), printers)
                for name, expr in formulas_for(spec).items()}
    note = (f"Values at T = context_length = {spec.context_length:,}. The general forms, with "
            f"0/1 structure indicators, are in calc.formulas.")
    return FormulaSet(f"{spec.name} — formulas", f"indicators substituted for {spec.name}",
                      note, {"model": spec.name}, formulas)


def command_formulas(command: str, model: str | ModelSpec | Preset | None = None) -> FormulaSet:
    """The formulas a planning command evaluates: the model's structure substituted when a
    `model` is given; the options' symbols (ZeRO stage, recomputation, ...) stay symbolic."""
    named = {f"{group} {key}": expr for group in COMMAND_GROUPS[command]
             for key, expr in GROUPS[group].items()}
    caption = "general form, 0/1 indicators kept"
    spec = resolve(model).spec if model is not None else None
    if spec is not None:
        special = specialised(named, spec, expand=False)
        named = {name: expr for name, expr in special.items() if expr != 0}
        caption = f"structure of {spec.name} substituted, options kept"
    note = ("Each formula's source is cited in calc/formulas/ (memory.py, inference.py, "
            "scaling.py); the command's notes name the conventions.")
    title = f"calc {command}{f' {spec.name}' if spec else ''} — formulas"
    printers = Printers()
    return FormulaSet(title, caption, note, {"command": command},
                      {name: Formula(name, expr, printers=printers)
                       for name, expr in named.items()})
