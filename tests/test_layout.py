"""The layout docs/architecture.md describes: imports run one way (no cycle, counting imports
inside functions and under TYPE_CHECKING), one name per feature in every layer, and lazy
`calc.<name>` functions that no module import can replace."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import re
import textwrap
import types
from pathlib import Path

import pytest

import calc

PACKAGE = Path(calc.__file__).parent
LAZY_TARGET = re.compile(r"calc(\.\w+)+:\w+")  # calc._LAZY's "module:attribute" strings


def modules() -> dict[str, Path]:
    """Every module of calc by dotted name (a package by its own name)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: set[str]) -> set[str]:
    """The calc modules `path` imports anywhere in it (top level, functions, TYPE_CHECKING,
    and calc._LAZY's import strings); `from calc.x import y` counts calc.x.y when y is a
    module. Parent packages a dotted import runs implicitly are not counted."""
    def module_of(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {module_of(a.name) for a in node.names if a.name.startswith("calc")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "calc":
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in known else module_of(node.module))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and LAZY_TARGET.fullmatch(node.value):
            found.add(module_of(node.value.partition(":")[0]))
    return found - {None}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, set(known)) - {name} for name, path in known.items()}


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_cycle_check_finds_a_cycle():
    """The checker itself: a two-module circle and a self-contained chain."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


# Which part of calc may import which: every package and every module directly under calc/
# ("calc" is the package's own __init__.py), from the top down. A row names only rows below it,
# so imports run one way (commands → views → reports → plan → calibration/timing →
# evaluate/formulas → spec, with counting, errors, numbers and lazy at the bottom). An import
# anywhere in a module (inside a function and under TYPE_CHECKING too) that its row does not
# name fails test_imports_follow_the_table. docs/architecture.md quotes this table (`python
# tests/test_layout.py` prints it, `python -m calc docs` copies it there).
MAY_IMPORT = {
    "__main__": "cli",
    "cli": "commands errors",
    "commands": "calc web views reports plan presets spec tables files numbers counting errors",
    "web": "views presets errors",  # the page: commands hand it their parsers and reports
    "calc": "views reports presets hf evaluate spec lazy errors",  # __version__ for commands
    "views": "reports plan timing presets document tables files spec counting errors",
    "reports": "verify sweeps plan calibration serving timing presets hf host formulas symbols "
               "evaluate _compiled document spec counting errors",
    "verify": "presets hf evaluate spec",
    "sweeps": "presets evaluate _compiled document spec symbols numbers counting errors",
    "plan": "calibration serving timing trainers presets evaluate _compiled spec counting errors "
            "lazy",
    "calibration": "serving timing source_flops presets spec counting errors",
    "serving": "timing presets evaluate _compiled spec counting errors",
    "timing": "presets evaluate spec counting errors",
    "trainers": "presets spec errors",
    "source_flops": "evaluate spec errors",
    "presets": "hf files spec errors",
    "hf": "files spec errors",
    "document": "spec errors",
    "tables": "counting errors",
    "files": "errors",
    "host": "counting errors",
    "formulas": "evaluate spec symbols counting",  # specialise: a spec's structure put in
    "symbols": "counting",
    "evaluate": "_compiled spec counting",
    "_compiled": "",
    "spec": "numbers counting errors lazy",
    "numbers": "counting errors",
    "counting": "",
    "errors": "",
    "lazy": "",
}


def part(module: str) -> str:
    """The row of MAY_IMPORT a module belongs to: `calc.reports.step` → `reports`."""
    return module.split(".")[1] if "." in module else module


def parts_on_disk() -> set[str]:
    return {part(module) for module in modules()}


def upward(table: dict[str, str]) -> list[str]:
    """Rows naming a row above them, themselves or no row at all: the table is not layered."""
    order = list(table)
    return [f"{row} may import {name}" for rank, row in enumerate(order)
            for name in table[row].split() if name not in order[rank + 1:]]


def unlisted(graph: dict[str, set[str]], table: dict[str, str]) -> list[str]:
    """Every import from one part of calc into another that the importer's row does not name."""
    return sorted(f"{module} imports {target}: {part(module)} may import only "
                  f"{table[part(module)] or 'nothing of calc'}"
                  for module, targets in graph.items() for target in targets
                  if part(target) != part(module)
                  and part(target) not in table[part(module)].split())


def test_the_table_has_a_row_per_package_and_module():
    assert sorted(parts_on_disk() - set(MAY_IMPORT)) == [], "add their rows to MAY_IMPORT"
    assert sorted(set(MAY_IMPORT) - parts_on_disk()) == [], "MAY_IMPORT names what is gone"


def test_the_table_runs_one_way():
    assert upward(MAY_IMPORT) == []


def test_imports_follow_the_table():
    """commands → views → reports → the bottom, as MAY_IMPORT says, part by part."""
    assert unlisted(import_graph(), MAY_IMPORT) == []


def test_the_table_checks_catch_what_they_should(tmp_path):
    """The checkers themselves: an upward row, an import inside a function or under
    TYPE_CHECKING that the table does not allow."""
    assert upward({"views": "reports", "reports": "views"}) == ["reports may import views"]
    assert upward({"views": "reports", "reports": "nowhere"}) == ["reports may import nowhere"]
    source = tmp_path / "module.py"
    source.write_text("from typing import TYPE_CHECKING\n"
                      "if TYPE_CHECKING:\n    from calc.views import estimate\n"
                      "def f():\n    import calc.commands.docs\n")
    known = {"calc.views", "calc.views.estimate", "calc.commands", "calc.commands.docs"}
    graph = {"calc.spec.model": imports(source, known)}
    assert unlisted(graph, MAY_IMPORT) == [
        f"calc.spec.model imports {target}: spec may import only {MAY_IMPORT['spec']}"
        for target in ("calc.commands.docs", "calc.views.estimate")]


def table_text(table: dict[str, str] = MAY_IMPORT, width: int = 99) -> str:
    """The table as docs/architecture.md shows it: one row per part, top to bottom."""
    indent = max(map(len, table)) + 2
    lines = [f"{'part':<{indent}}may import", f"{'-' * (indent - 2)}  {'-' * 10}"]
    for row, names in table.items():
        lines += textwrap.wrap(", ".join(names.split()) or "nothing of calc", width,
                               initial_indent=row.ljust(indent), subsequent_indent=" " * indent)
    return "\n".join(lines) + "\n"


def _names(package: str) -> set[str]:
    path = PACKAGE / package
    return {m.name for m in pkgutil.iter_modules([str(path)]) if not m.name.startswith("_")}


def test_one_name_per_feature():
    """Every report has a view of the same name; every view shows a report (or draws one)."""
    reports, views = _names("reports"), _names("views")
    assert reports - views == set()
    # plots: calc.plot and its kinds (views/figures/, one module per figure, drawn from reports)
    assert views - reports == {"plot", "figures"}
    commands = _names("commands")
    # verbs without a report of their own: the catalogue's two, the docs generator, plots, the
    # page (web: it shows the others')
    assert commands - reports == {"list", "gpus", "docs", "plot", "web"}


def test_lazy_names_are_not_modules():
    """No calc/<name>.py or calc/<name>/ shadows a lazy calc.<name>."""
    for name in calc._LAZY:
        assert importlib.util.find_spec(f"calc.{name}") is None, name


def test_lazy_names_survive_importing_every_module():
    """Importing every module (as a CLI command or test would) leaves each lazy name what the
    table says it is."""
    expected = {}
    for name, target in calc._LAZY.items():
        module, _, attribute = target.partition(":")
        expected[name] = getattr(importlib.import_module(module), attribute)
    torchless = importlib.util.find_spec("torch") is None
    for module in modules():
        if module == "calc.__main__" or (torchless and module.startswith("calc.verify.")):
            continue
        importlib.import_module(module)
    for name, value in expected.items():
        assert getattr(calc, name) is value
        assert not isinstance(getattr(calc, name), types.ModuleType)


def test_plot_stays_a_function_after_the_plot_command(cli, tmp_path):
    """The bug this layout fixed: once calc/plot.py was imported, calc.plot was that module."""
    pytest.importorskip("matplotlib")
    assert cli("plot", "pie", "gpt2", "-o", str(tmp_path / "x.png")).code == 2
    figure = calc.plot("params", "gpt2")
    assert figure.axes


if __name__ == "__main__":
    print(table_text(), end="")
