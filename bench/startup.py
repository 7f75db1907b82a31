"""Start-up benchmark: the main report's wall time against a bare interpreter.

    python bench/startup.py [--runs 21]

Targets: the report prints in under 0.3 s median on a 2-core machine, with neither torch nor
sympy imported (issue "The calculator"), and in at most 4 times a bare interpreter's
median measured in the same run (issue 9). Prints figures; asserts nothing.
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
TARGET_SECONDS, TARGET_RATIO = 0.300, 4.0


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
    report, bare = rows[2][1], rows[0][1]
    ratio = report / bare
    print(f"report over bare interpreter: {report - bare:.3f} s; report median {report:.3f} s "
          f"(target < {TARGET_SECONDS:.3f} s: {'ok' if report < TARGET_SECONDS else 'over'})")
    print(f"report / bare interpreter: {ratio:.1f}× (target <= {TARGET_RATIO:g}×: "
          f"{'ok' if ratio <= TARGET_RATIO else 'over'})")


if __name__ == "__main__":
    main()
