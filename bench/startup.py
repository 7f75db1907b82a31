"""Start-up benchmark: the main report's time against importing pydantic, a bare interpreter and
the floor of what it imports.

    python bench/startup.py [--runs 21]

Targets: the report prints in under 0.3 s median on a 2-core machine, with neither torch nor
sympy imported (issue "The calculator"), and in at most 1.5 times the median of `python -c
"from pydantic import BaseModel"` measured in the same run (issue 17; it replaced issue 9's 4
times a bare interpreter: pydantic stays on the path).

The floor rows import, in a bare interpreter, what the main command cannot do without. The
modules it imports are read from its sys.modules when it ends, so the rows follow the code:
- the standard-library modules calc's own modules on that path import at their top (argparse,
  tomllib, ...): the floor of calc's code whatever its dependencies are;
- every module the command imports but calc's: the standard library's and the third-party
  packages' (pydantic, pydantic_core, ...) and what they import in turn. The command can start
  no faster, whatever calc's own modules do; the gap between this floor and the command is
  calc's: its modules, its pydantic classes, reading the preset and drawing the tables.

Each command runs in a child process that may write .pyc files (PYTHONDONTWRITEBYTECODE is
dropped: an installed package has them), after two warm-up runs, alternating with the others so
that all see the same load. Wall-clock and CPU seconds (user + system of the child) are both
printed: on a shared machine CPU time is what a start costs, wall-clock what it waited too.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout whose calc `python -m calc` runs
MAIN = [sys.executable, "-m", "calc", "llama2-7b", "--tokens", "2e12", "--gpu", "a100"]
TARGET_SECONDS, TARGET_RATIO = 0.300, 1.5
PYDANTIC = "python -c 'from pydantic import BaseModel'"  # what TARGET_RATIO divides by
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def loaded(code: str = "") -> list[str]:
    """The modules `python -c code` has loaded when it ends, in the order it loaded them
    (sys.modules: -X importtime would miss what importlib.import_module loads)."""
    code += "\nimport sys\nprint(repr(list(sys.modules)), file=sys.stderr)"
    out = subprocess.run([sys.executable, "-c", code], check=True, env=ENV, cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr
    return [m for m in ast.literal_eval(out.splitlines()[-1]) if m != "__main__"]


def running(module_argv: list[str]) -> str:
    """Code that runs `python -m *module_argv` and goes on after it exits."""
    return (f"import runpy, sys\nsys.argv = {module_argv!r}\ntry:\n"
            f" runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n"
            f"except SystemExit:\n pass")


def stdlib(name: str) -> bool:
    return name.split(".")[0] in sys.stdlib_module_names


def top_imports(module: str) -> list[str]:
    """The modules calc's `module` imports at its top level (not in functions or branches)."""
    path = ROOT.joinpath(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    if not path.exists():  # calc.preset_data: presets/ installed as package data, no code
        return []
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return [name for node in body for name in (
        [a.name for a in node.names] if isinstance(node, ast.Import) else
        [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
        else [])]


def importing(names: list[str]) -> list[str]:
    """A command that imports `names` in turn."""
    return [sys.executable, "-c",
            f"for m in {names!r}:\n try: __import__(m)\n except ImportError: pass"]


def floors(modules: list[str], bare: list[str]) -> dict[str, tuple[list[str], str]]:
    """The floor commands, with what each imports, for a command that imports `modules` (see the
    docstring); what a bare interpreter imports (`bare`) is left out."""
    ours = [m for m in modules if m.split(".")[0] == "calc"]
    wanted = sorted({name for m in ours for name in top_imports(m)
                     if stdlib(name) and name not in bare})
    others = [m for m in modules if m.split(".")[0] != "calc" and m not in bare]
    packages = sorted({m.split(".")[0] for m in others if not stdlib(m) and m[0] != "_"
                       and importlib.util.find_spec(m.split(".")[0])})
    return {"floor: stdlib that calc's modules import": (
                importing(wanted), f"{len(wanted)} modules: {', '.join(wanted)}"),
            "floor: all its imports but calc's": (
                importing(others), f"{len(others)} modules: the stdlib's and "
                                   f"{', '.join(packages)}'s")}


def run(argv: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=ENV, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    run(MAIN)  # write the .pyc files before the import log is read
    bare, main_name = "python -c pass", " ".join(["python", *MAIN[1:]])
    found = floors(loaded(running(MAIN[2:])), loaded())
    commands = {bare: [sys.executable, "-c", "pass"],
                PYDANTIC: [sys.executable, "-c", "from pydantic import BaseModel"],
                **{name: argv for name, (argv, _) in found.items()},
                "python -c 'import calc'": [sys.executable, "-c", "import calc"],
                main_name: MAIN}
    for argv in commands.values():  # warm the file cache
        run(argv), run(argv)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(run(argv))
    wall = {name: statistics.median(t[0] for t in ts) for name, ts in times.items()}
    cpu = {name: statistics.median(t[1] for t in ts) for name, ts in times.items()}
    width = max(map(len, commands))
    print(f"{'command':{width}s} {'wall s':>7s} {'CPU s':>7s} {'÷ bare':>7s} {'÷ pydantic':>10s}"
          f"   (medians of {runs})")
    for name in commands:
        print(f"{name:{width}s} {wall[name]:7.3f} {cpu[name]:7.3f} "
              f"{wall[name] / wall[bare]:6.2f}× {wall[name] / wall[PYDANTIC]:9.2f}×")
    for name, (_, what) in found.items():
        print(f"{name}: {what}")
    report, ratio = wall[main_name], wall[main_name] / wall[PYDANTIC]
    print(f"report: {report:.3f} s median (target < {TARGET_SECONDS:.3f} s: "
          f"{'ok' if report < TARGET_SECONDS else 'over'}); {ratio:.2f}× the wall time of "
          f"{PYDANTIC}, {cpu[main_name] / cpu[PYDANTIC]:.2f}× its CPU time (target <= "
          f"{TARGET_RATIO:g}×: {'ok' if ratio <= TARGET_RATIO else 'over'}); "
          f"{report / wall[bare]:.1f}× a bare interpreter's")
    every = list(found)[-1]  # every import but calc's
    print("floors: " + "; ".join(f"{name[7:]} {wall[name] / wall[PYDANTIC]:.2f}× pydantic's "
                                 f"wall, {cpu[name] / cpu[PYDANTIC]:.2f}× CPU" for name in found)
          + f"; calc's own share above the last {report - wall[every]:.3f} s wall, "
            f"{cpu[main_name] - cpu[every]:.3f} s CPU")


if __name__ == "__main__":
    main()
