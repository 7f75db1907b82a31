"""A formula for one model: its structure put in, its sizes kept symbolic.

`specialise` substitutes a model's 0/1 structure indicators and the sizes that are zero or equal
another for it (d_v = d_qk under MHA), so Llama 2 7B's attention reads 4·L·d·d_qk·h rather than
the general MHA/MLA expression; calc.reports.formulas prints the results.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import sympy
from sympy.core import exprtools

from calc.evaluate import KIND_COUNTS, LAYER_COUNTS, symbol_values
from calc.spec import ModelSpec
from calc.symbols import INFO, SYMBOLS

# Sizes kept symbolic when non-zero; everything else is substituted by its value.
_KEPT = ("V", "V_o", "d", "L", "h", "h_kv", "d_qk", "d_v", "d_ff", "P", "w", "c", "E", "E_0",
         "k", "d_e", "E_s", "d_s", "r_q", "r_kv", "d_rope", "r_ng", "T", "d_emb", "d_in", "N_s",
         "k_s", "R_dt", "H_s", "G_s", "H_k", "H_v", "d_lk", "d_lv", "k_dn", "r_g", "k_sc", "h_I",
         "d_I", "L_idx", "L_kvs", "L_kvs2", "L_kvsl", "L_kvsl2", "L_dw", "L_sb", "M_sb", "r_sb",
         "L_s_sb", *LAYER_COUNTS, *KIND_COUNTS, "L_s_att2", "L_s_kvs", "L_s_kvs2", "L_s_dw",
         "L_csa", "L_hca", "L_sel", "L_s_sel", "d_rl", "E_rl", "k_rc", "H_rct", "N_brq", "N_brs",
         "L_brs", "k_ca", "k_cb",
         "r_rt", "n_pk")
# A kind's own head shapes (attention.kind_shapes) and the model's they equal when equal
_KIND_SHAPES = {"h2": "h", "h_kv2": "h_kv", "d_qk2": "d_qk", "h_t2": "h_t", "h_g2": "h_g",
                "r_q2": "r_q", "r_kv2": "r_kv", "d_rope2": "d_rope"}


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
        if values["d_v"] == values["d_qk"]:  # MHA's values as wide as its keys
            subs[SYMBOLS["d_v"]] = SYMBOLS["d_qk"]
        if spec.n_kv_heads == spec.attention.n_heads:
            subs[SYMBOLS["h_kv"]] = SYMBOLS["h"]
    if not spec.n_local_layers:
        subs[SYMBOLS["w"]] = SYMBOLS["T"]
    if not values["L_chk"]:
        subs[SYMBOLS["c"]] = SYMBOLS["T"]
    # the layers of a kind with head shapes of its own: its sizes where they are the model's,
    # and its local or chunked layers, all of them, as L'_att
    for own, model in _KIND_SHAPES.items():
        if own in values and values[own] == values.get(model, -1):
            subs[SYMBOLS[own]] = SYMBOLS[model]
    if values["d_v2"] == values["d_v"]:
        subs[SYMBOLS["d_v2"]] = subs.get(SYMBOLS["d_v"], SYMBOLS["d_v"])
    elif spec.attention.mla is None and values["d_v2"] == values["d_qk2"]:
        subs[SYMBOLS["d_v2"]] = subs.get(SYMBOLS["d_qk2"], SYMBOLS["d_qk2"])
    for name in ("L_loc2", "L_chk2"):
        if values[name] and values[name] == values["L_att2"]:
            subs[SYMBOLS[name]] = SYMBOLS["L_att2"]
    if values["d_emb"] == values["d"]:
        subs[SYMBOLS["d_emb"]] = SYMBOLS["d"]
    if values["V_o"] == values["V"]:  # a head of every row: V_o is V
        subs[SYMBOLS["V_o"]] = SYMBOLS["V"]
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


# One block at a time (threads): a block puts back the functions it found, sympy's own.
_ONE_BLOCK = threading.RLock()


@contextlib.contextmanager
def _shared_sums() -> Iterator[None]:
    """Within the block, what sympy's factor_terms works out for a term is worked out once.

    factor_terms takes a sum's content and primitive (as_content_primitive, which recurses
    through all of the sum), then does the same to each of its terms, and so on down, so a term
    nested n sums deep is taken apart n times; then it puts each sum in its gcd form
    (exprtools.gcd_terms). A command's formulas also share their terms (the weights a GPU holds
    appear in its weights, gradients, optimizer states, totals and room): GPT-3 175B's 32
    memory formulas make 31,500 as_content_primitive calls on 340 distinct terms and 1,182
    gcd_terms calls on 91 distinct sums. Both are pure functions of their arguments (sympy
    expressions are immutable), so their results are kept for the block: the same formulas,
    factored in a sixth of the time factor_terms takes without it (keeping gcd_terms's alone:
    a half; bench/formulas.py). The functions are sympy's own again after the block."""
    made: dict[tuple, Any] = {}

    def once(function: Callable[..., Any], *args: Any) -> Any:
        key = (function, *args)
        if key not in made:
            made[key] = function(*args)
        return made[key]

    def gcd_terms(terms: Any, isprimitive: bool = False, clear: bool = True,
                  fraction: bool = True) -> Any:
        return once(original_gcd_terms, terms, isprimitive, clear, fraction)

    def content_primitive(part: Callable[..., Any]) -> Callable[..., Any]:
        def as_content_primitive(self: sympy.Expr, radical: bool = False, clear: bool = True
                                 ) -> tuple[sympy.Expr, sympy.Expr]:
            return once(part, self, radical, clear)
        return as_content_primitive

    with _ONE_BLOCK:
        original_gcd_terms = exprtools.gcd_terms
        # the kinds of node that take themselves apart (sympy/core: add.py, mul.py, power.py);
        # the others' as_content_primitive is Expr's (1, self) or a number's
        parts = {kind: vars(kind)["as_content_primitive"]
                 for kind in (sympy.Add, sympy.Mul, sympy.Pow)}
        exprtools.gcd_terms = gcd_terms
        for kind, part in parts.items():
            kind.as_content_primitive = content_primitive(part)  # type: ignore[method-assign]
        try:
            yield
        finally:
            exprtools.gcd_terms = original_gcd_terms
            for kind, part in parts.items():
                kind.as_content_primitive = part  # type: ignore[method-assign]
