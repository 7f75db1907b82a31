"""Formula benchmark: `python -m calc memory gpt3-175b --formula`, the longest --formula output.

    python bench/formulas.py [--runs 5]

Target (issue 17): at most 1 s on a 2-core machine. The command runs in a child process, after
one warm-up run that writes the .pyc files, alternating with a bare interpreter so that both see
the same load; wall-clock and CPU seconds (user + system of the child) are both printed: on a
shared machine CPU time is what a run costs, wall-clock what it waited too. Then, in this
process, the steps it takes: importing the command's modules and sympy (with the sympy.tensor
modules sympy's Add imports on first use), building the expressions of calc.formulas it shows
(calc.formulas.GROUPS builds a group's module when the group is first read), specialising the
32 memory formulas to GPT-3 175B (calc.reports.formulas.command_formulas) and printing them as
text. The command's last step, the interpreter's shutdown, is left short by calc/__main__.py
(gc.freeze). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout whose calc `python -m calc` runs
COMMAND = [sys.executable, "-m", "calc", "memory", "gpt3-175b", "--formula"]
TARGET_SECONDS = 1.0


def run(argv: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def steps() -> dict[str, tuple[float, float]]:
    """Wall-clock and CPU seconds of each step of the command, in this process (first run)."""
    out: dict[str, tuple[float, float]] = {}

    def timed(name: str, step) -> object:
        wall, cpu = time.perf_counter(), time.process_time()
        result = step()
        out[name] = (time.perf_counter() - wall, time.process_time() - cpu)
        return result

    timed("import calc.cli, calc.commands.memory",
          lambda: (__import__("calc.cli"), __import__("calc.commands.memory")))
    timed("import sympy", lambda: __import__("sympy"))
    timed("import sympy.tensor (Add imports it on first use)",
          lambda: __import__("sympy.tensor.tensor"))
    timed("import calc.reports.formulas (builds params, flops)",
          lambda: __import__("calc.reports.formulas"))
    from calc.formulas import COMMAND_GROUPS, GROUPS
    from calc.reports.formulas import command_formulas
    from calc.views import render

    timed("build the memory groups (memory, finetune, ...)",
          lambda: [GROUPS[group] for group in COMMAND_GROUPS["memory"]])
    formulas = timed("command_formulas('memory', 'gpt3-175b')",
                     lambda: command_formulas("memory", "gpt3-175b"))
    timed("render as text", lambda: render(formulas, "text"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    bare = [sys.executable, "-c", "pass"]
    run(COMMAND), run(bare)  # warm-up: .pyc files, the file cache
    times: dict[str, list[tuple[float, float]]] = {"command": [], "bare": []}
    for _ in range(runs):
        times["command"].append(run(COMMAND))
        times["bare"].append(run(bare))
    wall = {k: statistics.median(t[0] for t in v) for k, v in times.items()}
    cpu = {k: statistics.median(t[1] for t in v) for k, v in times.items()}
    best = min(t[0] for t in times["command"])
    print(f"{'step':56s} {'wall s':>7s} {'CPU s':>7s}")
    print(f"{'python -c pass':56s} {wall['bare']:7.3f} {cpu['bare']:7.3f}")
    for name, (w, c) in steps().items():
        print(f"{'  ' + name:56s} {w:7.3f} {c:7.3f}")
    name = " ".join(["python", *COMMAND[1:]])
    print(f"{name:56s} {wall['command']:7.3f} {cpu['command']:7.3f}")
    print(f"formulas: {wall['command']:.2f} s median wall of {runs} (best {best:.2f} s), "
          f"{cpu['command']:.2f} s CPU (target <= {TARGET_SECONDS:g} s: "
          f"{'ok' if wall['command'] <= TARGET_SECONDS else 'over'})")


if __name__ == "__main__":
    main()
