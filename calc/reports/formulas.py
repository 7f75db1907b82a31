"""The formulas as a report: `calc.model_formulas("llama2-7b")` and every `--formula` flag.

A model's formulas are the general ones (calc.formulas, with 0/1 structure indicators) with its
structure substituted (`specialise`: indicators, and sizes that are zero or equal for it, such
as d_v = d_qk under MHA) and its sizes kept symbolic, so Llama 2 7B's attention reads 4·L·d·d_qk·h
rather than the general MHA/MLA expression; each with its value at the model's sizes (T = its
context length). A planning command's formulas keep its options (ZeRO stage, recomputation)
symbolic. Jupyter shows a FormulaSet as LaTeX; calc.views.formulas prints it as a table.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import sympy

from calc.document import Shown
from calc.evaluate import LAYER_COUNTS, symbol_values
from calc.formulas import COMMAND_GROUPS, GROUPS, flops, params
from calc.presets import Preset, resolve
from calc.spec import ModelSpec
from calc.symbols import INFO, LATEX_NAMES, SYMBOLS

# Sizes kept symbolic when non-zero; everything else is substituted by its value.
_KEPT = ("V", "d", "L", "h", "h_kv", "d_qk", "d_v", "d_ff", "P", "w", "c", "E", "k", "d_e",
         "E_s", "d_s", "r_q", "r_kv", "d_rope", "T", "d_emb", "d_in", "N_s", "k_s", "R_dt", "H_s",
         "G_s", "H_k", "H_v", "d_lk", "d_lv", "k_dn", "k_sc", *LAYER_COUNTS)


def specialise(expr: sympy.Expr, spec: ModelSpec, expand: bool = True) -> sympy.Expr:
    """`expr` for `spec`'s structure; `expand=False` keeps the expression's own nesting (for
    long formulas whose named terms read better unexpanded)."""
    values = symbol_values(spec)
    subs: dict[sympy.Symbol, Any] = {}
    for name, value in values.items():
        # indicators and fixed per-layer counts (norms a layer, an activation's parameters)
        fixed = INFO[name].kind == "indicator" or name in ("n_norm", "n_act")
        if fixed or (name in _KEPT and not value):
            subs[SYMBOLS[name]] = value
    if spec.attention.mla is None:
        subs[SYMBOLS["d_v"]] = SYMBOLS["d_qk"]
        if spec.n_kv_heads == spec.attention.n_heads:
            subs[SYMBOLS["h_kv"]] = SYMBOLS["h"]
    if not spec.n_local_layers:
        subs[SYMBOLS["w"]] = SYMBOLS["T"]
    if not values["L_chk"]:
        subs[SYMBOLS["c"]] = SYMBOLS["T"]
    if values["d_emb"] == values["d"]:
        subs[SYMBOLS["d_emb"]] = SYMBOLS["d"]
    # A kind every layer has is counted by L; dense FFNs on every layer MoE leaves, by L − L_moe.
    for name in LAYER_COUNTS:
        if values[name] == spec.n_layers:
            subs[SYMBOLS[name]] = SYMBOLS["L"]
    if values["L_moe"] and values["L_dense"] + values["L_moe"] == spec.n_layers:
        subs[SYMBOLS["L_dense"]] = SYMBOLS["L"] - SYMBOLS["L_moe"]
    special = expr.subs(subs)
    return sympy.factor_terms(sympy.expand(special) if expand else special)


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
    special = {name: specialise(expr, spec) for name, expr in named.items()}
    return {name: expr for name, expr in special.items() if expr != 0}


def _value(expr: sympy.Expr, spec: ModelSpec) -> int:
    values = {SYMBOLS[n]: v for n, v in symbol_values(spec).items()}
    values[SYMBOLS["T"]] = spec.context_length
    return int(expr.subs(values))


def _latex_int(value: int) -> str:
    return f"{value:,}".replace(",", "{,}")


@dataclass(frozen=True)
class Formula:
    """One named quantity: its expression and, for a model's formulas, its value."""

    name: str
    expr: sympy.Expr
    value: int | None = None

    @property
    def latex(self) -> str:
        return sympy.latex(self.expr, symbol_names=LATEX_NAMES)

    @property
    def text(self) -> str:
        return str(self.expr)

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
    formulas = {name: Formula(name, expr, _value(expr, spec))
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
        special = {name: specialise(expr, spec, expand=False) for name, expr in named.items()}
        named = {name: expr for name, expr in special.items() if expr != 0}
        caption = f"structure of {spec.name} substituted, options kept"
    note = ("Each formula's source is cited in calc/formulas/ (memory.py, inference.py, "
            "scaling.py); the command's notes name the conventions.")
    title = f"calc {command}{f' {spec.name}' if spec else ''} — formulas"
    return FormulaSet(title, caption, note, {"command": command},
                      {name: Formula(name, expr) for name, expr in named.items()})
