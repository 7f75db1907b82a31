"""Show the formulas: general (with 0/1 indicators) or specialised to one model, text or LaTeX.

`specialise(expr, spec)` substitutes the model's structure (indicators, and sizes that are zero
or equal for it, such as d_v = d_qk under MHA) and keeps its sizes symbolic, so Llama 2 7B's
attention reads 4·L·d·d_qk·h rather than the general MHA/MLA expression.
"""

from __future__ import annotations

from typing import Any

import sympy

from calc.evaluate import LAYER_COUNTS, symbol_values
from calc.formulas import COMMAND_GROUPS, GROUPS, flops, params
from calc.render import Column, Table, render_json, render_tables
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
        if INFO[name].kind == "indicator" or name == "n_norm" or (name in _KEPT and not value):
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


def _document(title: str, caption: str, formulas: dict[str, sympy.Expr],
              values: dict[str, int] | None, note: str, fmt: str,
              about: dict[str, str]) -> str:
    """Formulas as text or LaTeX (by `fmt`), their values when given, and a symbol legend."""
    latex = {n: sympy.latex(e, symbol_names=LATEX_NAMES) for n, e in formulas.items()}
    used = sorted({str(s) for e in formulas.values() for s in e.free_symbols})
    if fmt == "json":
        entries = {n: {"text": str(e), "latex": latex[n],
                       **({"value": values[n]} if values is not None else {})}
                   for n, e in formulas.items()}
        return render_json({**about, "formulas": entries,
                            "symbols": {name: INFO[name].meaning for name in used}})
    shown = "latex" if fmt in ("latex", "markdown", "html") else "text"
    columns = [Column("quantity"), Column("formula", "latex" if fmt == "latex" else "text")]
    if values is not None:
        columns.append(Column("value", "int"))
    table = Table(f"Formulas ({shown}); {caption}", columns)
    for name, expr in formulas.items():
        formula = (str(expr) if shown == "text"
                   else f"${latex[name]}$" if fmt == "markdown" else latex[name])
        table.add(name, formula, *([values[name]] if values is not None else []))
    legend = [f"{name} = {INFO[name].meaning}" for name in used]
    return render_tables(title, [table], [*legend, note], fmt)


def formula_document(spec: ModelSpec, fmt: str = "text") -> str:
    """The model's formulas with their values at its sizes (T = its context length)."""
    formulas = formulas_for(spec)
    values = {name: _value(expr, spec) for name, expr in formulas.items()}
    note = (f"Values at T = context_length = {spec.context_length:,}. The general forms, with "
            f"0/1 structure indicators, are in calc.formulas.")
    return _document(f"{spec.name} — formulas", f"indicators substituted for {spec.name}",
                     formulas, values, note, fmt, {"model": spec.name})


def command_document(command: str, model: str | ModelSpec | None = None,
                     fmt: str = "text") -> str:
    """The formulas a planning command evaluates: the model's structure substituted when a
    `model` (preset name, spec file or ModelSpec) is given; the options' symbols (ZeRO stage,
    recomputation, ...) stay symbolic."""
    from calc.report import resolve

    formulas = {f"{group} {key}": expr for group in COMMAND_GROUPS[command]
                for key, expr in GROUPS[group].items()}
    caption = "general form, 0/1 indicators kept"
    spec = resolve(model).spec if model is not None else None
    if spec is not None:
        special = {name: specialise(expr, spec, expand=False) for name, expr in formulas.items()}
        formulas = {name: expr for name, expr in special.items() if expr != 0}
        caption = f"structure of {spec.name} substituted, options kept"
    note = ("Each formula's source is cited in calc/formulas/ (memory.py, inference.py, "
            "scaling.py); the command's notes name the conventions.")
    title = f"calc {command}{f' {spec.name}' if spec else ''} — formulas"
    return _document(title, caption, formulas, None, note, fmt, {"command": command})
