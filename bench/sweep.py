"""Sweep benchmark: configurations per second, calc.sweep against plain numpy and one at a time.

    python bench/sweep.py [--runs 3] [--scale 1.0]

Targets (issue "Comparison tables ... sweeps over millions of configurations", and issue 9): at
least 5 million configurations per second for parameters + FLOPs + GPU-hours on a 2-core
machine, and at least 0.9 of a plain numpy evaluation of the same closed form on the same
workload. A configuration counts when its parameters, training FLOPs per token and GPU-hours are
in memory as full-length columns. Three workloads:

- grid: widths × depths × heads × KV heads × FFN ratios (model shapes) × tokens × GPUs;
- zipped: every row its own shape, context, tokens, GPU and MFU (nothing shared);
- one at a time: calc.estimate per configuration, and the bare compiled functions
  (count_params, count_flops, training_cost) per configuration on prebuilt specs.

The numpy baseline writes the closed form of the base model's family (Llama: RMSNorm, SwiGLU,
RoPE, untied head, no biases) by hand, broadcasting over the axes, and is checked against the
sweep (integers equal, floats within 1e-12). Each sweep row sampled is checked against
calc.estimate (integers equal, floats equal). Prints figures (best of --runs, after one
warm-up: the machine is shared); asserts nothing about speed.
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
GPUS = ("a100", "h100", "h200", "mi300x")
TARGET_RATE, TARGET_SHARE = 5_000_000, 0.9


def _run(make) -> tuple[float, float, object]:
    """Wall-clock and CPU seconds (this process, every thread) of one run, and its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = make()
    for name in TIMED:
        result[name]  # materialise the full-length columns
    return time.perf_counter() - wall, time.process_time() - cpu, result


def _against(sweep, plain, runs: int) -> dict:
    """calc.sweep and its numpy baseline timed in alternation, so that both see the same load:
    the best wall-clock time of each (the least disturbed by other processes), and the median
    over the pairs of the baseline's time over the sweep's, in wall-clock and in CPU seconds
    (what the work costs when other processes share the cores). Only the last results are
    kept: a grid's columns take half a gigabyte."""
    makers = {"sweep": sweep, "plain": plain}
    times: dict[str, list[tuple[float, float]]] = {"sweep": [], "plain": []}
    last: dict[str, object] = {}
    for i in range(runs + 1):  # run 0 warms up: first-touch page faults, imports
        for name in ("sweep", "plain") if i % 2 == 0 else ("plain", "sweep"):
            last.pop(name, None)  # free the previous result before the next run
            wall, cpu, last[name] = _run(makers[name])
            if i:
                times[name].append((wall, cpu))
    pairs = list(zip(times["sweep"], times["plain"], strict=True))
    return {"sweep_s": min(t[0] for t in times["sweep"]),
            "plain_s": min(t[0] for t in times["plain"]),
            "share": statistics.median(p[0] / s[0] for s, p in pairs),
            "cpu_share": statistics.median(p[1] / s[1] for s, p in pairs), **last}


def grid_axes(scale: float) -> dict:
    widths = np.arange(1, 1 + max(2, int(64 * scale))) * 128
    return {"d_model": widths, "n_layers": np.arange(2, 130, 2), "n_heads": [8, 16, 32, 64],
            "n_kv_heads": [1, 2, 4, 8], "ffn_ratio": [2, 2.5, 8 / 3, 3, 3.5, 4, 4.5, 5],
            "tokens": np.logspace(11, 13, 10), "gpu": list(GPUS)}


def zipped_axes(n: int) -> dict:
    rng = np.random.default_rng(0)
    heads = rng.choice([8, 16, 32, 64], n)
    return {"d_model": heads * rng.integers(16, 257, n), "n_layers": rng.integers(2, 129, n),
            "n_heads": heads, "n_kv_heads": heads // rng.choice([1, 2, 4, 8], n),
            "d_ff": rng.integers(256, 65_536, n), "seq_len": rng.integers(1, 33, n) * 1024,
            "tokens": rng.uniform(1e11, 1e13, n), "mfu": rng.uniform(0.2, 0.6, n),
            "gpu": rng.choice(np.array(GPUS), n), "grid": False}


def _llama_family(spec: calc.ModelSpec) -> tuple[int, int]:
    """V and T of the base model, after checking it is the family the closed form below is."""
    att, ffn = spec.attention, spec.ffn
    assert (ffn.activation == "swiglu" and spec.norm.kind == "rmsnorm" and not spec.tie_embeddings
            and spec.position.kind == "rope" and spec.moe is None and att.mla is None
            and not (att.qkv_bias or att.out_bias or ffn.bias or spec.lm_head_bias)
            and not att.sliding_window and att.qk_norm == "none" and spec.norm.placement == "pre")
    return spec.vocab_size, spec.context_length


def _closed_form(d, L, h, h_kv, d_ff, V, T):  # arrays that broadcast
    """Parameters and training FLOPs per token of a Llama-style model, by hand: per layer
    W_q, W_o d·d; W_k, W_v d·h_kv·d/h; SwiGLU 3·d·d_ff; two RMSNorms d; plus embedding, untied
    head and final norm. Causal attention: QKᵀ and A·V cost 2·h·T(T+1)·(d/h) per layer and
    sequence (the triangle with its diagonal)."""
    d_h = d // h
    layer = 2 * d * d + 2 * d * h_kv * d_h + 3 * d * d_ff
    total = L * (layer + 2 * d) + 2 * V * d + d
    weights = 2 * (L * layer + V * d)  # FLOPs per token through the matrices and the head
    per_sequence = 2 * L * h * T * (T + 1) * d_h
    return total, 3 * (weights + per_sequence / T)


def _gpu_hours(tokens, train, rate):  # arrays that broadcast
    """tokens × train FLOPs per token / (peak × MFU) / 3600, in the order calc._compiled
    evaluates it, so that the baseline does the same arithmetic and agrees to the bit."""
    return (1 / 3600) * tokens * train / rate


def numpy_grid(axes: dict, spec: calc.ModelSpec, mfu: float) -> dict[str, np.ndarray]:
    """The grid workload in plain numpy: open axes broadcast, then full-length columns."""
    V, T = _llama_family(spec)
    shape_axes = ("d_model", "n_layers", "n_heads", "n_kv_heads")
    d, L, h, h_kv = (np.asarray(axes[k]).reshape([-1 if i == j else 1 for j in range(5)])
                     for i, k in enumerate(shape_axes))
    d_ff = np.rint(np.asarray(axes["ffn_ratio"]).reshape(1, 1, 1, 1, -1) * d).astype(np.int64)
    total, train = _closed_form(d, L, h, h_kv, d_ff, V, T)
    peaks = np.array([calc.get_gpu(g).peak_flops("bf16") for g in axes["gpu"]])
    tokens, rate = axes["tokens"][None, :], (peaks * mfu)[:, None]  # rows: GPUs × tokens
    full = (*np.broadcast_shapes(total.shape, train.shape), *rate.shape[:1], *tokens.shape[1:])
    return {"params_total": np.broadcast_to(total[..., None, None], full).ravel(),
            "flops_train": np.broadcast_to(train[..., None, None], full).ravel(),
            "gpu_hours": _gpu_hours(tokens, train[..., None, None], rate).ravel()}


def numpy_zipped(axes: dict, spec: calc.ModelSpec) -> dict[str, np.ndarray]:
    """The zipped workload in plain numpy: one whole-array expression per column."""
    V, _ = _llama_family(spec)
    total, train = _closed_form(axes["d_model"], axes["n_layers"], axes["n_heads"],
                                axes["n_kv_heads"], axes["d_ff"], V, axes["seq_len"])
    peaks = np.zeros(len(axes["gpu"]))
    for gpu in GPUS:  # the catalogue names the workload draws from
        peaks[axes["gpu"] == gpu] = calc.get_gpu(gpu).peak_flops("bf16")
    return {"params_total": total, "flops_train": train,
            "gpu_hours": _gpu_hours(axes["tokens"], train, peaks * axes["mfu"])}


def same_numbers(sweep: calc.Sweep, plain: dict[str, np.ndarray]) -> bool:
    """Whether the sweep and the numpy baseline agree (integers equal, floats within 1e-12)."""
    return (np.array_equal(sweep["params_total"], plain["params_total"])
            and all(np.allclose(sweep[k], plain[k], rtol=1e-12, atol=0)
                    for k in ("flops_train", "gpu_hours")))


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
    peaks = {g: calc.get_gpu(g).peak_flops("bf16") for g in GPUS}
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
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--scale", type=float, default=1.0, help="grid and zip size factor")
    parser.add_argument("--sample", type=int, default=500,
                        help="sweep rows checked against calc.estimate (and timed one by one)")
    args = parser.parse_args()
    spec = calc.load_preset(BASE).spec
    grid_axes_ = grid_axes(args.scale)
    n_zip = max(1000, int(2_000_000 * args.scale))
    zip_axes = zipped_axes(n_zip)
    on_grid = _against(lambda: calc.sweep(BASE, **grid_axes_),
                       lambda: numpy_grid(grid_axes_, spec, calc.counting.DEFAULT_MFU), args.runs)
    on_zip = _against(lambda: calc.sweep(BASE, **zip_axes), lambda: numpy_zipped(zip_axes, spec),
                      args.runs)
    grid, zipped = on_grid["sweep"], on_zip["sweep"]
    per_estimate, per_compiled, agree_zip = one_at_a_time(zipped, args.sample)
    agree_grid = one_at_a_time(grid, min(args.sample, 100))[2]
    rows = [
        ("calc.sweep, grid (shapes × tokens × GPUs)", len(grid), len(grid) / on_grid["sweep_s"]),
        ("plain numpy, the same grid", len(grid), len(grid) / on_grid["plain_s"]),
        ("calc.sweep, zipped (every row distinct)", len(zipped), len(zipped) / on_zip["sweep_s"]),
        ("plain numpy, the same rows", len(zipped), len(zipped) / on_zip["plain_s"]),
        ("calc.estimate, one at a time", args.sample, 1 / per_estimate),
        ("count_params + count_flops + training_cost", args.sample, 1 / per_compiled),
    ]
    print(f"{'path':46s} {'configs':>12s} {'configs/s':>14s}   (best of {args.runs} runs)")
    for name, count, rate in rows:
        print(f"{name:46s} {count:12,d} {rate:14,.0f}")
    for name, result, rate in (("grid", on_grid, rows[0][2]), ("zipped", on_zip, rows[2][2])):
        share = result["share"]
        print(f"{name}: calc.sweep at {share:.2f} of plain numpy (median of {args.runs} pairs; "
              f"target >= {TARGET_SHARE}: {'ok' if share >= TARGET_SHARE else 'below'}; "
              f"{result['cpu_share']:.2f} in CPU time); {rate / 1e6:.1f} M configs/s "
              f"(target >= {TARGET_RATE / 1e6:g} M: {'ok' if rate >= TARGET_RATE else 'below'})")
    print(f"speed-up of the zipped sweep over calc.estimate: {per_estimate * rows[2][2]:,.0f}×; "
          f"over the bare compiled path: {per_compiled * rows[2][2]:,.0f}×")
    print(f"agreement with calc.estimate (params, train FLOPs/token, GPU-hours equal): "
          f"zipped {agree_zip}/{args.sample}, grid {agree_grid}/{min(args.sample, 100)}")
    print(f"agreement with plain numpy (params equal, floats within 1e-12): "
          f"grid {same_numbers(grid, on_grid['plain'])}, "
          f"zipped {same_numbers(zipped, on_zip['plain'])}")


if __name__ == "__main__":
    main()
