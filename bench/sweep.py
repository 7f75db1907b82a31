"""Sweep benchmark: configurations per second, calc.sweep against the one-at-a-time path.

    python bench/sweep.py [--runs 3] [--scale 1.0]

Target (issue "Comparison tables ... sweeps over millions of configurations"): at least 5
million configurations per second for parameters + FLOPs + GPU-hours on a 2-core machine. A
configuration counts when its parameters, training FLOPs per token and GPU-hours are in
memory as full-length columns. Three workloads:

- grid: widths × depths × heads × KV heads × FFN ratios (model shapes) × tokens × GPUs;
- zipped: every row its own shape, context, tokens, GPU and MFU (nothing shared);
- one at a time: calc.estimate per configuration, and the bare compiled functions
  (count_params, count_flops, training_cost) per configuration on prebuilt specs.

Each sweep row sampled is checked against calc.estimate (integers equal, floats equal).
Prints figures (median of --runs, after one warm-up); asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import calc
from calc.evaluate import count_flops, count_params, training_cost

BASE = "llama2-7b"
TIMED = ("params_total", "flops_train", "gpu_hours")  # what a configuration must have


def _timed(make, runs: int) -> tuple[float, object]:
    make()  # warm-up: first-touch page faults, imports
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = make()
        for name in TIMED:
            result[name]  # materialise the full-length columns
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def grid_axes(scale: float) -> dict:
    widths = np.arange(1, 1 + max(2, int(64 * scale))) * 128
    return {"d_model": widths, "n_layers": np.arange(2, 130, 2), "n_heads": [8, 16, 32, 64],
            "n_kv_heads": [1, 2, 4, 8], "ffn_ratio": [2, 2.5, 8 / 3, 3, 3.5, 4, 4.5, 5],
            "tokens": np.logspace(11, 13, 10), "gpu": ["a100", "h100", "h200", "mi300x"]}


def zipped_axes(n: int) -> dict:
    rng = np.random.default_rng(0)
    heads = rng.choice([8, 16, 32, 64], n)
    return {"d_model": heads * rng.integers(16, 257, n), "n_layers": rng.integers(2, 129, n),
            "n_heads": heads, "n_kv_heads": heads // rng.choice([1, 2, 4, 8], n),
            "d_ff": rng.integers(256, 65_536, n), "seq_len": rng.integers(1, 33, n) * 1024,
            "tokens": rng.uniform(1e11, 1e13, n), "mfu": rng.uniform(0.2, 0.6, n),
            "gpu": rng.choice(np.array(["a100", "h100", "h200", "mi300x"]), n), "grid": False}


def one_at_a_time(result: calc.Sweep, count: int) -> tuple[float, float, int]:
    """Seconds per configuration by calc.estimate and by the bare compiled functions, and how
    many of `count` sampled sweep rows agree with calc.estimate exactly."""
    base = calc.load_preset(BASE).spec
    rng = np.random.default_rng(1)
    rows = [result.row(int(i)) for i in rng.choice(len(result), count, replace=False)]
    specs = [base.updated(**{"d_model": r["d_model"], "n_layers": r["n_layers"],
                             "attention.n_heads": r["n_heads"],
                             "attention.n_kv_heads": r["n_kv_heads"], "ffn.d_ff": r["d_ff"]})
             for r in rows]
    start = time.perf_counter()
    reports = [calc.estimate(s, seq_len=r["seq_len"], tokens=r["tokens"], gpu=r["gpu"],
                             mfu=r["mfu"]) for s, r in zip(specs, rows, strict=True)]
    per_estimate = (time.perf_counter() - start) / count
    peaks = {g: calc.get_gpu(g).peak_flops("bf16") for g in ("a100", "h100", "h200", "mi300x")}
    start = time.perf_counter()
    for spec, r in zip(specs, rows, strict=True):
        count_params(spec)
        flops = count_flops(spec, r["seq_len"])
        training_cost(flops.train, r["tokens"], peaks[r["gpu"]], r["mfu"], 1)
    per_compiled = (time.perf_counter() - start) / count
    agree = sum(r["params_total"] == rep.params.total and r["flops_train"] ==
                rep.flops_per_token.train and r["gpu_hours"] == rep.training.gpu_hours
                for r, rep in zip(rows, reports, strict=True))
    return per_estimate, per_compiled, agree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="grid and zip size factor")
    parser.add_argument("--sample", type=int, default=500,
                        help="sweep rows checked against calc.estimate (and timed one by one)")
    args = parser.parse_args()
    grid_time, grid = _timed(lambda: calc.sweep(BASE, **grid_axes(args.scale)), args.runs)
    n_zip = max(1000, int(2_000_000 * args.scale))
    zip_time, zipped = _timed(lambda: calc.sweep(BASE, **zipped_axes(n_zip)), args.runs)
    per_estimate, per_compiled, agree_zip = one_at_a_time(zipped, args.sample)
    agree_grid = one_at_a_time(grid, min(args.sample, 100))[2]
    rows = [
        ("calc.sweep, grid (shapes × tokens × GPUs)", len(grid), len(grid) / grid_time),
        ("calc.sweep, zipped (every row distinct)", len(zipped), len(zipped) / zip_time),
        ("calc.estimate, one at a time", args.sample, 1 / per_estimate),
        ("count_params + count_flops + training_cost", args.sample, 1 / per_compiled),
    ]
    print(f"{'path':46s} {'configs':>12s} {'configs/s':>14s}   (median of {args.runs})")
    for name, count, rate in rows:
        print(f"{name:46s} {count:12,d} {rate:14,.0f}")
    print(f"speed-up of the zipped sweep over calc.estimate: {per_estimate * rows[1][2]:,.0f}×; "
          f"over the bare compiled path: {per_compiled * rows[1][2]:,.0f}×")
    print(f"agreement with calc.estimate (params, train FLOPs/token, GPU-hours equal): "
          f"zipped {agree_zip}/{args.sample}, grid {agree_grid}/{min(args.sample, 100)}")
    print("target: >= 5,000,000 configurations/s for parameters + FLOPs + GPU-hours")


if __name__ == "__main__":
    main()
