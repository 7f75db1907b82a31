"""Each unit fact once: the bytes of a GiB, the seconds of an hour, the hours of a day and the
decimal giga and tera live in calc/counting.py; everywhere else names them (GIB, GIGA, TERA,
SECONDS_PER_HOUR, HOURS_PER_DAY), so a unit cannot drift between two copies. Docstrings,
comments and text are free to mention the numbers; code is not."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "calc"
HOME = ("counting.py", "_compiled.py")  # the units' home; generated code
SOURCES = sorted(p for p in ROOT.rglob("*.py")
                 if not (p.parent == ROOT and p.name in HOME))
UNITS = {2**30: "GIB", 3600: "SECONDS_PER_HOUR", 10**9: "GIGA", 10**12: "TERA"}


def _value(node: ast.AST) -> float | None:
    """The number a literal or a power of two literals spells, else None (a shift such as
    1 << 30 is a bound on a count, not a unit)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) \
            and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        left, right = _value(node.left), _value(node.right)
        if left is not None and right is not None:
            return left**right
    return None


def unit_literals(source: str) -> list[str]:
    """The unit constants `source` spells out in code: a GiB, an hour's seconds, a giga or a
    tera as a number, and 24 multiplying or dividing something about hours or days."""
    tree = ast.parse(source)
    operands = {id(side) for n in ast.walk(tree)
                if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow)
                for side in (n.left, n.right)}
    found = []
    for node in ast.walk(tree):
        value = _value(node)
        if value in UNITS and id(node) not in operands:
            found.append((node.lineno, f"{ast.unparse(node)} (use {UNITS[value]})"))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Div):
            for side, other in ((node.left, node.right), (node.right, node.left)):
                text = ast.unparse(other).lower()
                if _value(side) == 24 and ("hour" in text or "day" in text):
                    found.append((node.lineno, f"{ast.unparse(node)} (use HOURS_PER_DAY)"))
    return [f"line {line}: {what}" for line, what in sorted(found)]


def test_the_check_finds_each_unit():
    source = ("a = x / 2**30\nb = y * 3600\nc = z / 1e9\nd = w * 1e12\n"
              "e = gpu_hours / gpus / 24\nf = 1 << 30\ng = 24 * layers\n")
    assert [line.split(":")[0] for line in unit_literals(source)] == \
        ["line 1", "line 2", "line 3", "line 4", "line 5"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_units_come_from_counting(path):
    assert unit_literals(path.read_text(encoding="utf-8")) == []
