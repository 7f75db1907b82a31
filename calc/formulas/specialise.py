"""A formula for one model: its structure put in, its sizes kept symbolic.

`specialise` substitutes a model's 0/1 structure indicators and the sizes that are zero or equal
another for it (d_v = d_qk under MHA), so Llama 2 7B's attention reads 4·L·d·d_qk·h rather than
the general MHA/MLA expression; calc.reports.formulas prints the results.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import sympy
from sympy.core import exprtools

from calc.evaluate import LAYER_COUNTS, symbol_values
from calc.spec import ModelSpec
from calc.symbols import INFO, SYMBOLS

# Sizes kept symbolic when non-zero; everything else is substituted by its value.
_KEPT = ("V", "d", "L", "h", "h_kv", "d_qk", "d_v", "d_ff", "P", "w", "c", "E", "k", "d_e",
         "E_s", "d_s", "r_q", "r_kv", "d_rope", "T", "d_emb", "d_in", "N_s", "k_s", "R_dt", "H_s",
         "G_s", "H_k", "H_v", "d_lk", "d_lv", "k_dn", "k_sc", "h_I", "d_I", "L_idx",
         *LAYER_COUNTS)


def specialise(expr: sympy.Expr, spec: ModelSpec, expand: bool = True) -> sympy.Expr:
    """`expr` for `spec`'s structure; `expand=False` keeps the expression's own nesting (for
    long formulas whose named terms read better unexpanded)."""
    return specialised({"": expr}, spec, expand)[""]


def specialised(named: Mapping[str, sympy.Expr], spec: ModelSpec, expand: bool = True
                ) -> dict[str, sympy.Expr]:
    """Each of `named` specialised (`specialise`); what the expressions share is made once."""
    subs, made = _at_once(structure(spec)), {}
    with _shared_sums():
        special = {name: _put_in(expr, subs, made) for name, expr in named.items()}
        return {name: sympy.factor_terms(sympy.expand(expr) if expand else expr)
                for name, expr in special.items()}


def _put_in(expr: sympy.Basic, subs: Mapping[sympy.Basic, sympy.Basic],
            made: dict[sympy.Basic, sympy.Basic]) -> sympy.Basic:
    """expr.xreplace(subs), each distinct subexpression rebuilt once for all the calls that
    share `made`: a command's formulas share most of their terms, and rebuilding a Max of two
    long sides makes sympy try to order them again (a tenth of a second each time)."""
    if expr in subs:
        return subs[expr]
    if not expr.args:
        return expr
    if expr not in made:
        args = tuple(_put_in(arg, subs, made) for arg in expr.args)
        made[expr] = expr.func(*args) if args != expr.args else expr
    return made[expr]


def structure(spec: ModelSpec) -> dict[sympy.Symbol, Any]:
    """What `specialise` puts in for `spec`'s symbols, as `expr.subs` would take it:
    indicators, and sizes that are zero or equal another for it (d_v = d_qk under MHA)."""
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
    for name in (*LAYER_COUNTS, "L_idx"):
        if values[name] == spec.n_layers:
            subs[SYMBOLS[name]] = SYMBOLS["L"]
    if values["L_moe"] and values["L_dense"] + values["L_moe"] == spec.n_layers:
        subs[SYMBOLS["L_dense"]] = SYMBOLS["L"] - SYMBOLS["L_moe"]
    return subs


def _at_once(subs: Mapping[sympy.Symbol, Any]) -> dict[sympy.Symbol, sympy.Expr]:
    """`subs` as one replacement (xreplace: a single walk over an expression, where
    `expr.subs(dict)` walks it once per symbol, and re-evaluates all of it each time: seconds
    per memory formula). subs applies the symbols one after another in sympy's sort order, so
    a value naming a symbol later in that order gets that symbol's value too (Mixtral's L_dense
    = L − L_moe, then L_moe = L); each value here is made with the later ones put in, so the
    result is the same."""
    at_once: dict[sympy.Symbol, sympy.Expr] = {}
    for symbol in sorted(subs, key=sympy.default_sort_key, reverse=True):
        at_once[symbol] = sympy.sympify(subs[symbol]).xreplace(at_once)
    return at_once


@contextlib.contextmanager
def _shared_sums() -> Iterator[None]:
    """Within the block, each sum sympy's factor_terms meets is put in its gcd form once.

    factor_terms calls exprtools.gcd_terms on every sum in an expression, and a command's
    formulas share their sums (the weights a GPU holds appear in its weights, gradients,
    optimizer states, totals and room): GPT-3 175B's 32 memory formulas make 716 calls on 60
    distinct sums, nine tenths of the time `--formula` took. gcd_terms is a pure function of
    its arguments (sympy expressions are immutable), so the results are kept for the block:
    the formulas are the same, made once (bench/formulas.py)."""
    original = exprtools.gcd_terms
    made: dict[tuple, Any] = {}

    def once(terms: Any, isprimitive: bool = False, clear: bool = True,
             fraction: bool = True) -> Any:
        key = (terms, isprimitive, clear, fraction)
        if key not in made:
            made[key] = original(terms, isprimitive, clear, fraction)
        return made[key]

    exprtools.gcd_terms = once
    try:
        yield
    finally:
        exprtools.gcd_terms = original
