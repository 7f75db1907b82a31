"""Tables → text / markdown / latex / html / csv, and JSON: the output formats of every report.

A `Table` holds raw values and a kind per column; text formats print the kind's human form
(thousands separators, decimal prefixes, percentages), CSV keeps the raw numbers. Every format
ends with the conventions the numbers were counted under.
"""

from __future__ import annotations

import io
import math
import os
import re
import sys
import textwrap
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from calc.counting import GIB, GIGA, TERA
from calc.errors import CalcError

FORMATS = ("text", "markdown", "json", "csv", "latex", "html")
# Text output: the width when stdout is not a terminal, how prose columns wrap at that width,
# and the narrowest a prose column gets.
TEXT_WIDTH, WRAP, MIN_WRAP = 100, 60, 16
_TABULATE = {"markdown": "github", "latex": "latex_raw", "html": "html"}  # text: simple_table
_LATEX_SPECIAL = {c: "\\" + c for c in "&%$#_{}"} | {"~": r"\textasciitilde{}",
                                                    "^": r"\textasciicircum{}",
                                                    "\\": r"\textbackslash{}"}
_PREFIXES = ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (TERA, "T"), (GIGA, "B"),
             (1e6, "M"), (1e3, "k"))


def human(value: float, unit: str = "") -> str:
    """A decimal-prefixed short form: 6.74 B, 14.3 GFLOP (G for FLOPs, B for counts)."""
    if value is None or not math.isfinite(value):
        return "" if value is None else str(value)
    # Round to the 3 significant digits shown before choosing the prefix: 999,885,952 is
    # "1 B", not "1e+03 M".
    magnitude = abs(float(f"{value:.3g}"))
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
    if kind == "bool":
        return "yes" if value else "no"
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
        return f"{value / GIB:,.2f} GiB"
    if kind == "hours":
        return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"
    return str(value)


# Characters the reports print that plain pdflatex has no glyph for, in a form it compiles
# (the output is ASCII, so any engine and input encoding reads it).
_LATEX_UNICODE = {
    "≈": r"$\approx$", "×": r"$\times$", "·": r"$\cdot$", "—": "---", "–": "--",
    "−": "$-$", "→": r"$\rightarrow$", "≤": r"$\leq$", "≥": r"$\geq$", "ᵀ": r"$^{\top}$",
    "²": "$^2$", "³": "$^3$", "⁶": "$^6$", "⁻": "$^-$", "¹": "$^1$",
    "⌈": r"$\lceil$", "⌉": r"$\rceil$", "…": r"\ldots{}", "•": r"$\bullet$", "✓": "yes",
    "Σ": r"$\Sigma$", "Ψ": r"$\Psi$", "α": r"$\alpha$", "β": r"$\beta$", "γ": r"$\gamma$",
    "φ": r"$\varphi$", "ρ": r"$\rho$", "µ": r"$\mu$", "μ": r"$\mu$", "∞": r"$\infty$",
    "⊙": r"$\odot$", "√": r"$\surd$", "≠": r"$\neq$", "±": r"$\pm$", "°": r"$^\circ$",
    "‘": "`", "’": "'", "“": "``", "”": "''", "é": r"\'e", "ö": r"\"o", "ü": r"\"u",
    "⅔": "2/3", "½": "1/2", "\u00a0": "~",
}


def _latex_char(ch: str) -> str:
    """One character as LaTeX text: escaped, mapped, or (unknown non-ASCII) its code point."""
    if ch in _LATEX_SPECIAL:
        return _LATEX_SPECIAL[ch]
    if ch.isascii():
        return ch
    return _LATEX_UNICODE.get(ch, f"[U+{ord(ch):04X}]")


def _latex_escape(text: str) -> str:
    return "".join(_latex_char(ch) for ch in text)


def _latex_text(text: str) -> str:
    """A comment line's text: ASCII, the LaTeX specials as they are (a comment ignores them)."""
    return "".join(ch if ch.isascii() else _latex_char(ch) for ch in text)


@dataclass(frozen=True)
class Column:
    name: str
    # text | latex | formula (a (text, LaTeX) pair) | int | count | flops | sci | pct | ratio
    # | hours | bytes | bool (yes/no)
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


def table_key(title: str) -> str:
    """A table's short name: its title's words before any "(" or ":", lowercased and joined by
    "-" ("FLOPs per token (T = 4,096, ...)" → "flops-per-token")."""
    head = re.split(r"[(:]", title, maxsplit=1)[0]
    return "-".join(re.findall(r"[a-z0-9.]+", head.lower())) or "table"


def _keys(tables: list[Table]) -> list[str]:
    """Each table's table_key, numbered where two titles start alike."""
    keys = [table_key(table.title) for table in tables]
    return [key if keys.count(key) == 1 else f"{key}-{keys[:i].count(key) + 1}"
            for i, key in enumerate(keys)]


def select(tables: list[Table], name: str) -> Table:
    """The table whose key is `name` (case and spaces aside); CalcError listing the names."""
    keys = _keys(tables)
    wanted = "-".join(name.lower().split())
    if wanted not in keys:
        raise CalcError(f"--table {name!r}: this report's tables are {', '.join(keys)}")
    return tables[keys.index(wanted)]


def _raw_rows(table: Table) -> list[list[Any]]:
    return [["" if v is None else v
             for v in (_raw(v, c.kind) for v, c in zip(row, table.columns, strict=True))]
            for row in table.rows]


def _csv(tables: list[Table], notes: list[str]) -> str:
    """One tidy table: a line per cell, `table, row, column, value` (the row named by its first
    cell), the raw numbers; the notes as table "notes", column "note"."""
    import csv  # the csv format's own module: not on the text path (bench/startup.py)

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["table", "row", "column", "value"])
    for key, table in zip(_keys(tables), tables, strict=True):
        for row in _raw_rows(table):
            writer.writerows([key, row[0], column.name, value]
                             for column, value in zip(table.columns[1:], row[1:], strict=True)
                             if value != "")
    writer.writerows(["notes", i, "note", note] for i, note in enumerate(notes, 1))
    return out.getvalue()


def _csv_table(table: Table) -> str:
    """One table as it prints: a header, then a line per row, the raw numbers."""
    import csv

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.name for c in table.columns])
    writer.writerows(_raw_rows(table))
    return out.getvalue()


def text_width() -> int:
    """Columns text output may take: the terminal's when stdout is one (COLUMNS when set, as
    shutil reads it), else TEXT_WIDTH (so files, pipes, notebooks and the generated docs do not
    depend on a window's size)."""
    if sys.stdout is not None and sys.stdout.isatty():
        return max(40, terminal_columns(TEXT_WIDTH))
    return TEXT_WIDTH


def terminal_columns(fallback: int) -> int:
    """`shutil.get_terminal_size((fallback, ...)).columns` (CPython 3.11 Lib/shutil.py): COLUMNS
    when it is a positive integer, else the width of the terminal sys.__stdout__ is, else
    `fallback`. Read here because importing shutil (bz2, lzma) costs the main command more
    than its whole table drawing (bench/startup.py); argparse's help takes it too (Parser)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or fallback
    except (AttributeError, ValueError, OSError):
        return fallback


@lru_cache(maxsize=4096)  # _fitted draws a table again and again, each cell at the same width
def _wrap(text: str, width: int) -> str:
    """Lines of at most `width` where the words allow: a name (confirmed_secondary) stays
    whole."""
    return textwrap.fill(text, width, break_long_words=False)


def _fitted(rows: list[list[str]], headers: list[str], table: Table, width: int) -> str:
    """The text table, fitted to `width` as far as wrapping goes: prose columns wrap at 60 on
    a page of 100 columns and take every column a wider terminal adds, headers wrap to their
    column's cells, then the widest prose column narrows, again and again (row names to no less
    than 32, others to 16). Numbers never wrap."""
    prose = [i for i, c in enumerate(table.columns) if c.kind == "text"]
    cells = [max([len(line) for row in rows for line in row[i].splitlines()] + [MIN_WRAP])
             for i in range(len(headers))]
    wrap = WRAP + max(0, width - TEXT_WIDTH)
    limits = {i: min(cells[i], wrap) if i else cells[i] for i in prose}
    floor = {i: 2 * MIN_WRAP if i == 0 else MIN_WRAP for i in prose}

    def draw(heads: list[str]) -> str:
        wrapped = [[_wrap(cell, limits[i]) if i in limits else cell
                    for i, cell in enumerate(row)] for row in rows]
        return simple_table(wrapped, heads, _align(table))

    def too_wide(body: str) -> bool:
        return max(map(len, body.splitlines()), default=0) > width

    body = draw(headers)
    if not too_wide(body):
        return body
    heads = [_wrap(h, min(cells[i], wrap)) for i, h in enumerate(headers)]
    body = draw(heads)
    while too_wide(body):
        narrowable = [i for i in limits if limits[i] > floor[i]]
        if not narrowable:  # as narrow as wrapping makes it
            break
        widest = max(narrowable, key=lambda i: limits[i])
        limits[widest] = max(floor[widest], limits[widest] * 4 // 5)
        heads = [_wrap(h, min(cells[i], limits[i])) if i in limits else heads[i]
                 for i, h in enumerate(headers)]
        body = draw(heads)
    return body


def simple_table(rows: list[list[str]], headers: list[str], aligns: list[str]) -> str:
    """The text format's table, exactly as tabulate draws it with tablefmt="simple", colalign=
    `aligns` ("left"/"right") and disable_numparse=True (tests/test_tables.py compares them):
    each column as wide as its widest line or its header + 2, cells stripped and padded, columns
    two spaces apart, a row of dashes under the headers, trailing spaces cut. A cell or header
    with "\n" spans lines; widths are len() (no wide or ANSI-coloured characters), no "\r".
    Drawn here rather than by tabulate: importing tabulate reads its package metadata, which
    costs more than the main report takes to draw its tables (bench/startup.py)."""
    if not rows:  # tabulate aligns the headers of a table without rows to the left
        aligns = ["left"] * len(headers)
    multiline = any("\n" in cell for row in [headers, *rows] for cell in row)  # before strip
    rows = [[cell.strip() for cell in row] for row in rows]
    widths = [max([_width(head) + 2, *(_width(row[i]) for row in rows)])
              for i, head in enumerate(headers)]

    def lines(cells: list[str], header: bool = False) -> list[str]:
        # each cell's lines padded to its column, a short cell filled with blanks; as in
        # tabulate, an empty cell of a multi-line table has no line (a row of them none)
        split = [cell.split("\n") if cell or header or not multiline else [] for cell in cells]
        out = []
        for k in range(max(map(len, split), default=0)):
            parts = [part[k] if k < len(part) else "" for part in split]
            out.append("  ".join(part.rjust(width) if align == "right" else part.ljust(width)
                                 for part, width, align in zip(parts, widths, aligns, strict=True))
                       .rstrip())
        return out

    drawn = [*lines(headers, header=True), "  ".join("-" * width for width in widths)]
    for row in rows:
        drawn += lines(row)
    return "\n".join(drawn)


def _width(text: str) -> int:
    return max(len(line) for line in text.split("\n"))


def _html_escape(text: str) -> str:
    import html  # its entity table loads with the html format, not on the text path

    return html.escape(text)


def _align(table: Table) -> list[str]:
    return ["left" if c.kind in ("text", "latex") else "right" for c in table.columns]


def render_tables(title: str, tables: list[Table], notes: list[str], fmt: str,
                  only: str | None = None) -> str:
    """One document in `fmt` (not json): a title, the tables, then the notes; with `only` (a
    table_key), that table alone under its own title (csv: its header and rows)."""
    if only is not None:
        chosen = select(tables, only)
        if fmt == "csv":
            return _csv_table(chosen)
        tables = [chosen]
    if fmt == "csv":
        return _csv(tables, notes)
    width = text_width()
    parts: list[str] = []
    heading = {"text": "{}", "markdown": "### {}", "latex": "% {}",
               "html": "<h3>{}</h3>"}[fmt]
    if only is None:  # one table: its own title is the document's (html's escape only for
        # html: it imports html.entities)
        parts.append(f"## {title}" if fmt == "markdown" else
                     f"<h2>{_html_escape(title)}</h2>" if fmt == "html" else
                     f"% {_latex_text(title)}" if fmt == "latex" else title)
    for table in tables:
        name = _html_escape(table.title) if fmt == "html" else table.title
        name = _latex_text(name) if fmt == "latex" else name
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
        headers = [c.name for c in table.columns]
        if fmt == "latex":
            headers = [_latex_escape(h) for h in headers]
        if fmt == "text":  # prose columns wrapped to fit the terminal
            body = _fitted(rows, headers, table, width)
        else:
            from tabulate import tabulate  # markdown, latex and html tables

            body = tabulate(rows, headers=headers, tablefmt=_TABULATE[fmt],
                            colalign=_align(table), disable_numparse=True)
        parts.append(f"{heading.format(name)}\n{body}")
    if notes:
        if fmt == "html":
            items = "".join(f"<li>{_html_escape(n)}</li>" for n in notes)
            parts.append(f"<ul class=\"conventions\">{items}</ul>")
        elif fmt == "latex":
            parts.append("\n".join(f"% {_latex_text(n)}" for n in notes))
        elif fmt == "markdown":
            parts.append("\n".join(f"- {n}" for n in notes))
        else:
            wrapped = (textwrap.fill(n, width, initial_indent="- ",
                                     subsequent_indent="  ") for n in notes)
            parts.append("Notes:\n" + "\n".join(wrapped))
    return "\n\n".join(parts) + "\n"


def render_json(data: Any) -> str:
    import json  # with --format json only: the text path needs no JSON

    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


@dataclass
class View:
    """What a report looks like as a document: a title, tables, and notes under them."""

    title: str
    tables: list[Table]
    notes: list[str]


# ---- byte quantities: both units side by side, always labelled ---------------------------
GB = GIGA  # decimal gigabyte, beside the binary GiB


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
