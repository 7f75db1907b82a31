"""The layout docs/architecture.md describes: imports run one way (no cycle, counting imports
inside functions and under TYPE_CHECKING), one name per feature in every layer, and lazy
`calc.<name>` functions that no module import can replace."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import re
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


def test_imports_run_one_way():
    """commands → views → reports → the bottom; nothing below imports a layer above it."""
    layers = ["calc.commands", "calc.views", "calc.reports"]
    graph = import_graph()
    for module, targets in graph.items():
        for rank, layer in enumerate(layers):
            if module == layer or module.startswith(layer + "."):
                above = layers[:rank]
                break
        else:
            above = [*layers] if module not in ("calc", "calc.cli", "calc.__main__") else []
        wrong = [t for t in targets for layer in above
                 if t == layer or t.startswith(layer + ".")]
        assert not wrong, f"{module} imports {wrong}, a layer above it"


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
    # verbs without a report of their own: the catalogue's two, the docs generator, plots
    assert commands - reports == {"list", "gpus", "docs", "plot"}


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
