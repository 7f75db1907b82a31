"""calc.estimate per call: by preset name, and on a ModelSpec already built.

    python bench/estimate.py [--calls 2000] [--runs 7]

Targets (issue 9): at most 100 µs per call by name, at most 50 µs on a built spec, on a 2-core
machine. Each figure is the best of --runs timings of --calls calls (the least disturbed by
other processes), after one warm-up call. Prints figures; asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import timeit

import calc

MODEL = "llama2-7b"
TARGETS_US = {"by name": 100.0, "on a built ModelSpec": 50.0}
WORKLOADS = {"": {}, ", tokens and GPU": {"tokens": 2e12, "gpu": "a100"}}


def per_call_us(model: object, kwargs: dict, calls: int, runs: int) -> float:
    calc.estimate(model, **kwargs)  # warm-up: loads and validates the preset once
    timer = timeit.Timer(lambda: calc.estimate(model, **kwargs))
    return min(timer.repeat(repeat=runs, number=calls)) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    models = {"by name": MODEL, "on a built ModelSpec": calc.load_preset(MODEL).spec}
    print(f"{'calc.estimate(' + MODEL + ')':46s} {'µs/call':>9s} {'target':>8s}   "
          f"(best of {args.runs} × {args.calls} calls)")
    for label, model in models.items():
        for suffix, kwargs in WORKLOADS.items():
            us = per_call_us(model, kwargs, args.calls, args.runs)
            target = TARGETS_US[label]
            verdict = "ok" if us <= target else "over"
            print(f"{label + suffix:46s} {us:9.1f} {target:8.0f}   {verdict}")


if __name__ == "__main__":
    main()
