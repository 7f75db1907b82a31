"""Start-up benchmark: the main report's time against a bare interpreter.

    python bench/startup.py [--runs 21]

Targets: the report prints in under 0.3 s median on a 2-core machine, with neither torch nor
sympy imported (issue "The calculator"), and in at most 4 times a bare interpreter's median
measured in the same run (issue 9). The floor row imports pydantic's BaseModel and nothing else:
calc's specs and reports are pydantic models, so no report can start faster than that.

Each command runs in a child process that may write .pyc files (PYTHONDONTWRITEBYTECODE is
dropped: an installed package has them), after two warm-up runs, alternating with the others so
that all see the same load. Wall-clock and CPU seconds (user + system of the child) are both
printed: on a shared machine CPU time is what a start costs, wall-clock what it waited too.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "floor: python -c 'from pydantic import BaseModel'":
        [sys.executable, "-c", "from pydantic import BaseModel"],
    "python -c 'import calc'": [sys.executable, "-c", "import calc"],
    "python -m calc llama2-7b --tokens 2e12 --gpu a100":
        [sys.executable, "-m", "calc", "llama2-7b", "--tokens", "2e12", "--gpu", "a100"],
}
BARE, FLOOR, _, MAIN = COMMANDS
TARGET_SECONDS, TARGET_RATIO = 0.300, 4.0
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(argv: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    for argv in COMMANDS.values():  # warm the file cache and write the .pyc files
        run(argv), run(argv)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in COMMANDS}
    for _ in range(runs):
        for name, argv in COMMANDS.items():
            times[name].append(run(argv))
    wall = {name: statistics.median(t[0] for t in ts) for name, ts in times.items()}
    cpu = {name: statistics.median(t[1] for t in ts) for name, ts in times.items()}
    print(f"{'command':52s} {'wall s':>7s} {'CPU s':>7s} {'÷ bare':>7s}   (medians of {runs})")
    for name in COMMANDS:
        print(f"{name:52s} {wall[name]:7.3f} {cpu[name]:7.3f} {wall[name] / wall[BARE]:6.1f}×")
    report, ratio = wall[MAIN], wall[MAIN] / wall[BARE]
    print(f"report median {report:.3f} s (target < {TARGET_SECONDS:.3f} s: "
          f"{'ok' if report < TARGET_SECONDS else 'over'}); report / bare interpreter "
          f"{ratio:.1f}× wall, {cpu[MAIN] / cpu[BARE]:.1f}× CPU (target <= {TARGET_RATIO:g}×: "
          f"{'ok' if ratio <= TARGET_RATIO else 'over'}); the pydantic floor alone is "
          f"{wall[FLOOR] / wall[BARE]:.1f}× wall, {cpu[FLOOR] / cpu[BARE]:.1f}× CPU")


if __name__ == "__main__":
    main()
