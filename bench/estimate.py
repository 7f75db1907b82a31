"""calc.estimate per call: by preset name, and on a ModelSpec already built.

    python bench/estimate.py [--calls 2000] [--runs 7]

Targets (issues 9 and 17): at most 100 µs per call by name, at most 50 µs on a built spec, on a
2-core machine, with and without a training run to price. Each figure is the best of --runs
timings of --calls calls, after two warm-up calls (the first builds what a spec keeps: its layer
counts, symbols and parameter counts; the second builds the workload's validator), in CPU time
of this process and in wall-clock time (the same on an idle machine; on a shared one CPU time
is what a call costs, wall-clock time what it waited too). Prints figures; asserts nothing
about speed.
"""

from __future__ import annotations

import argparse
import time
import timeit

import calc

MODEL = "llama2-7b"
TARGETS_US = {"by name": 100.0, "on a built ModelSpec": 50.0}
WORKLOADS = {"": {}, ", tokens and GPU": {"tokens": 2e12, "gpu": "a100"}}


def per_call_us(model: object, kwargs: dict, calls: int, runs: int) -> tuple[float, float]:
    """Best CPU and best wall-clock µs per call."""
    for _ in range(2):  # warm-up: what the spec keeps, then the workload's validator
        calc.estimate(model, **kwargs)
    out = []
    for clock in (time.process_time, time.perf_counter):
        timer = timeit.Timer(lambda: calc.estimate(model, **kwargs), timer=clock)
        out.append(min(timer.repeat(repeat=runs, number=calls)) / calls * 1e6)
    return out[0], out[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    models = {"by name": MODEL, "on a built ModelSpec": calc.load_preset(MODEL).spec}
    print(f"{'calc.estimate(' + MODEL + ')':40s} {'CPU µs':>8s} {'wall µs':>8s} {'target':>7s}"
          f"   (best of {args.runs} × {args.calls} calls)")
    for label, model in models.items():
        for suffix, kwargs in WORKLOADS.items():
            cpu, wall = per_call_us(model, kwargs, args.calls, args.runs)
            target = TARGETS_US[label]
            verdict = "ok" if cpu <= target else "over"
            print(f"{label + suffix:40s} {cpu:8.1f} {wall:8.1f} {target:7.0f}   {verdict} (CPU)")


if __name__ == "__main__":
    main()
