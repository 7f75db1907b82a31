"""Tables → text / markdown / latex / html / csv, and JSON: the output formats of every report.

A `Table` holds raw values and a kind per column; text formats print the kind's human form
(thousands separators, decimal prefixes, percentages), CSV keeps the raw numbers. Every format
ends with the conventions the numbers were counted under.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import textwrap
from dataclasses import dataclass, field
from typing import Any

FORMATS = ("text", "markdown", "json", "csv", "latex", "html")
_TABULATE = {"text": "simple", "markdown": "github", "latex": "latex_raw", "html": "html"}
_LATEX_SPECIAL = {c: "\\" + c for c in "&%$#_{}"} | {"~": r"\textasciitilde{}",
                                                    "^": r"\textasciicircum{}",
                                                    "\\": r"\textbackslash{}"}
_PREFIXES = ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "B"),
             (1e6, "M"), (1e3, "k"))


def human(value: float, unit: str = "") -> str:
    """A decimal-prefixed short form: 6.74 B, 14.3 GFLOP (G for FLOPs, B for counts)."""
    if value is None or not math.isfinite(value):
        return "" if value is None else str(value)
    magnitude = abs(value)
    if magnitude >= 1e27:
        return f"{value:.3g}".replace("e+", "e") + (f" {unit}" if unit else "")
    for scale, prefix in _PREFIXES:
        if magnitude >= scale:
            prefix = "G" if prefix == "B" and unit else prefix
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g}" + (f" {unit}" if unit else "")


@dataclass(frozen=True)
class Cell:
    """A value with its own kind, for tables whose rows (not columns) share a unit."""

    value: Any
    kind: str


def _format(value: Any, kind: str) -> str:
    if isinstance(value, Cell):
        value, kind = value.value, value.kind
    if value is None or value == "":
        return ""
    if kind == "formula":  # (text, LaTeX): render_tables shows the LaTeX where it can
        return str(value[0])
    if isinstance(value, str) or kind in ("text", "latex"):
        return str(value)
    if kind == "int":
        if isinstance(value, float) and not value.is_integer():
            return f"{value:,.1f}"
        return f"{int(value):,}"
    if kind == "count":
        return human(value)
    if kind == "flops":
        return human(value, "FLOP")
    if kind == "sci":
        return f"{value:.3e}".replace("e+", "e")
    if kind == "pct":
        return f"{100 * value:.2f} %"
    if kind == "ratio":
        return f"{value:.3f}"
    if kind == "bytes":  # binary, labelled
        return f"{value / 2**30:,.2f} GiB"
    if kind == "hours":
        return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"
    return str(value)


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


@dataclass(frozen=True)
class Column:
    name: str
    # text | latex | formula (a (text, LaTeX) pair) | int | count | flops | sci | pct | ratio
    # | hours | bytes
    kind: str = "text"


@dataclass
class Table:
    title: str
    columns: list[Column]
    rows: list[list[Any]] = field(default_factory=list)

    def add(self, *cells: Any) -> None:
        self.rows.append(list(cells))

    def formatted(self) -> list[list[str]]:
        return [[_format(value, column.kind)
                 for value, column in zip(row, self.columns, strict=True)]
                for row in self.rows]


def _raw(value: Any, kind: str) -> Any:
    """A cell's value as CSV keeps it: the number, or a formula's text form."""
    if isinstance(value, Cell):
        return value.value
    return value[0] if kind == "formula" else value


def _csv(tables: list[Table], notes: list[str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for table in tables:
        writer.writerow([table.title])
        writer.writerow([c.name for c in table.columns])
        raw = ([_raw(v, c.kind) for v, c in zip(row, table.columns, strict=True)]
               for row in table.rows)
        writer.writerows(["" if v is None else v for v in row] for row in raw)
        writer.writerow([])
    writer.writerows(["convention", note] for note in notes)
    return out.getvalue()


def _align(table: Table) -> list[str]:
    return ["left" if c.kind in ("text", "latex") else "right" for c in table.columns]


def render_tables(title: str, tables: list[Table], notes: list[str], fmt: str) -> str:
    """One document in `fmt` (not json): a title, the tables, then the notes."""
    from tabulate import tabulate  # imported here: json output does not need it

    if fmt == "csv":
        return _csv(tables, notes)
    parts: list[str] = []
    style = _TABULATE[fmt]
    heading = {"text": "{}", "markdown": "### {}", "latex": "% {}",
               "html": "<h3>{}</h3>"}[fmt]
    if fmt == "markdown":
        parts.append(f"## {title}")
    elif fmt == "html":
        parts.append(f"<h2>{html.escape(title)}</h2>")
    elif fmt == "latex":
        parts.append(f"% {title}")
    else:
        parts.append(title)
    for table in tables:
        name = html.escape(table.title) if fmt == "html" else table.title
        rows = table.formatted()
        if fmt != "text":  # formulas as inline maths: $...$ compiles in LaTeX and renders in
            # Jupyter's markdown and html
            for i, column in enumerate(table.columns):
                if column.kind == "formula":
                    for row, raw in zip(rows, table.rows, strict=True):
                        row[i] = f"${raw[i][1]}$"
        if fmt == "latex":  # cells are text, except columns that already hold LaTeX
            latex = [c.kind in ("latex", "formula") for c in table.columns]
            rows = [[cell if latex[i] else _latex_escape(cell) for i, cell in enumerate(row)]
                    for row in rows]
        if fmt == "text":  # wrap long prose cells (not the first column) to keep lines short
            wide = [i for i, c in enumerate(table.columns) if i and c.kind == "text"]
            rows = [[textwrap.fill(cell, 60) if i in wide else cell
                     for i, cell in enumerate(row)] for row in rows]
        headers = [c.name for c in table.columns]
        if fmt == "latex":
            headers = [_latex_escape(h) for h in headers]
        body = tabulate(rows, headers=headers, tablefmt=style,
                        colalign=_align(table), disable_numparse=True)
        parts.append(f"{heading.format(name)}\n{body}")
    if notes:
        if fmt == "html":
            items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
            parts.append(f"<ul class=\"conventions\">{items}</ul>")
        elif fmt == "latex":
            parts.append("\n".join(f"% {n}" for n in notes))
        elif fmt == "markdown":
            parts.append("\n".join(f"- {n}" for n in notes))
        else:
            wrapped = (textwrap.fill(n, 100, initial_indent="- ", subsequent_indent="  ")
                       for n in notes)
            parts.append("Notes:\n" + "\n".join(wrapped))
    return "\n\n".join(parts) + "\n"


def render_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


@dataclass
class View:
    """What a report looks like as a document: a title, tables, and notes under them."""

    title: str
    tables: list[Table]
    notes: list[str]


# ---- byte quantities: both units side by side, always labelled ---------------------------
GB, GIB = 1e9, 2**30


def bytes_table(title: str) -> Table:
    """A table of byte quantities: exact bytes, GB (1e9) and GiB (2^30), and a note."""
    return Table(title, [Column("quantity"), Column("bytes", "int"), Column("GB (1e9)", "ratio"),
                         Column("GiB (2^30)", "ratio"), Column("note")])


def add_bytes(table: Table, label: str, value: float | None, note: str = "") -> None:
    """A row of `bytes_table` (nothing when the value is unknown)."""
    if value is not None:
        table.add(label, value, value / GB, value / GIB, note)


def verdict(fits: bool | None) -> str:
    return "" if fits is None else ("fits" if fits else "does NOT fit")
