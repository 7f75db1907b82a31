"""Plots (the optional `plot` extra: pip install -e ".[plot]"); matplotlib is imported here only.

    calc.plot("context", ["llama2-7b", "mistral-7b"], "context.png")
    python -m calc plot context llama2-7b mistral-7b -o context.png

The kinds are the modules of calc.views.figures (KINDS; each module's docstring says what it
draws). Each returns a matplotlib Figure (shown inline by Jupyter) and saves it when given a
path. The numbers come from the same reports as every table.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calc.errors import CalcError, install
from calc.files import output_path, write_atomic
from calc.views import figures

KINDS = tuple(sorted(m.name for m in pkgutil.iter_modules(figures.__path__)))
SUFFIXES = (".png", ".svg", ".pdf")  # the formats a path's suffix picks; none means .png


def figure_class() -> Any:
    """matplotlib's Figure (no pyplot: no global state), or a CalcError saying how to install it."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise CalcError(f"plots need matplotlib: {install('plot')}") from None
    return Figure


def describe(kind: str) -> str:
    """What a kind draws: the first line of its module's docstring."""
    module = importlib.import_module(f"calc.views.figures.{kind}")
    return (module.__doc__ or kind).strip().splitlines()[0]


def plot(kind: str, models: str | Sequence[str] = (), path: str | Path | None = None, *,
         force: bool = False, **options: Any) -> Any:
    """A Figure of `kind` (KINDS) for `models` with the kind's `options`; saved when `path` is
    given, in the format its suffix names (SUFFIXES; none: .png), never over an existing file
    unless `force`."""
    if kind not in KINDS:
        raise CalcError(f"plot kind {kind!r}: expected one of {', '.join(KINDS)}")
    if path is not None:  # checked before the work
        path = output_path(path, "plot path", force=force, suffixes=SUFFIXES, flag="force=True")
    names = [models] if isinstance(models, str) else list(models)
    made = figure_class()
    draw = importlib.import_module(f"calc.views.figures.{kind}").draw
    try:
        figure = draw(made, names, **options)
    except TypeError as error:  # an option the kind does not take
        raise CalcError(f"plot {kind}: {error}".replace("draw() ", "")) from None
    if path is not None:
        fmt = Path(path).suffix[1:].lower()
        write_atomic(path, lambda temporary: figure.savefig(temporary, dpi=120, format=fmt))
    return figure


def svg(figure: Any) -> str:
    """A figure as an inline <svg> element (calc.web's plots), without the XML prologue."""
    import io

    out = io.StringIO()
    figure.savefig(out, format="svg")
    text = out.getvalue()
    return text[text.index("<svg"):]
