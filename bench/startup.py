"""Start-up benchmark: the main report's wall time against a bare interpreter.

    python bench/startup.py [--runs 21]

Target (issue "The calculator", DESIGN.md): the report prints in under 0.3 s median on a 2-core
machine, with neither torch nor sympy imported. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

MAIN = [sys.executable, "-m", "calc", "llama2-7b", "--tokens", "2e12", "--gpu", "a100"]
BARE = [sys.executable, "-c", "pass"]
IMPORTS = [sys.executable, "-c", "import calc"]


def median_seconds(argv: list[str], runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    median_seconds(MAIN, 2)  # warm the file cache and .pyc files
    rows = [("python -c pass", *median_seconds(BARE, runs)),
            ("python -c 'import calc'", *median_seconds(IMPORTS, runs)),
            ("python -m calc llama2-7b --tokens 2e12 --gpu a100", *median_seconds(MAIN, runs))]
    print(f"{'command':52s} {'median s':>9s} {'min s':>7s}   ({runs} runs)")
    for name, median, fastest in rows:
        print(f"{name:52s} {median:9.3f} {fastest:7.3f}")
    overhead = rows[2][1] - rows[0][1]
    print(f"report over bare interpreter: {overhead:.3f} s; target: report < 0.300 s median")


if __name__ == "__main__":
    main()
