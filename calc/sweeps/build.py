"""A sweep's columns built (calc.sweep): the axes laid out as rows, the rows no spec allows
dropped and counted, the model numbers and the workload's GPU-hours made lazily."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calc.errors import CalcError
from calc.presets import Preset, get_gpu
from calc.sweeps.axes import rows_of
from calc.sweeps.columns import model_numbers, training
from calc.sweeps.result import Lazy
from calc.sweeps.rows import row_symbols


@dataclass(frozen=True)
class Built:
    """What calc.sweeps.result.Columns is made of, and what the notes say about it."""

    n_model: int  # model shapes kept
    n_work: int  # workload rows (1: none)
    grid: bool
    model: Lazy  # the inputs, then the model numbers, one row per model shape
    work: dict[str, np.ndarray]  # the workload axes, one row per workload
    both: Lazy  # training FLOPs (and GPU-hours, days), one row per (shape, workload)
    dtypes: dict[str, str]  # each model number's numpy dtype
    columns: list[str]  # in display order
    dropped: dict[str, int]  # rows each rule rejects (a row may break several)
    n_grid: int  # model shapes before any was dropped
    attention: list[str]  # the attention conventions the rows use


def build(presets: list[Preset], axes: dict[str, np.ndarray], work: dict[str, np.ndarray],
          labels: dict[str, list[str]], dtype: str, grid: bool) -> Built:
    """The columns of `presets` over `axes` (model shapes) and `work` (tokens, GPUs, ...):
    their product when `grid`, else zipped."""
    if grid:
        n_grid, rows = rows_of(axes, grid=True)
    else:  # the workload axes zip with the model axes
        n_grid, _ = rows_of({**axes, **work}, grid=False)
        rows = rows_of(axes, grid=False, n=n_grid)[1]
    s, model, checks = row_symbols(presets, rows, axes)
    valid: Any = True
    for ok in checks.values():
        valid = ok if valid is True else ok & valid
    keep = None if np.all(valid) else np.flatnonzero(valid)
    dropped = {}
    for reason, ok in checks.items() if keep is not None else ():
        bad = int(np.count_nonzero(~np.broadcast_to(ok, (n_grid,))))
        if bad:
            dropped[reason] = bad
    n_a = n_grid if keep is None else len(keep)
    if n_a == 0:
        raise CalcError(f"sweep: no configuration is valid ({'; '.join(dropped)})")

    def pick(values: Any) -> Any:
        return values[keep] if keep is not None and isinstance(values, np.ndarray) else values

    s = {name: pick(v) for name, v in s.items()}
    inputs = {"model": pick(model), "d_model": s["d"], "n_layers": s["L"], "n_heads": s["h"],
              "n_kv_heads": s["h_kv"], "head_dim": s["d_qk"], "d_ff": s["d_ff"],
              "vocab_size": s["V"], "seq_len": s["T"], "attention": 1 - s["i_causal"]}
    makers, dtypes = model_numbers(s, n_a)
    columns = Lazy(inputs, makers)  # a number is computed when its column is first read
    used = [labels["attention"][code] for code in np.unique(axes["attention"])]
    if not work:
        return Built(n_a, 1, True, columns, {}, Lazy({}), dtypes, list(columns), dropped,
                     n_grid, used)
    if grid:
        n_b, w = rows_of(work, grid=True)
    else:
        n_b, w = n_a, {k: pick(v) for k, v in rows_of(work, grid=False, n=n_grid)[1].items()}
    w = {k: np.broadcast_to(v, (n_b,)) for k, v in w.items()}
    if "gpu" in w:
        peaks = np.array([get_gpu(name).peak_flops(dtype) for name in labels["gpu"]])
        w["R"] = peaks[w["gpu"]]
    names = ["training_flops", *(["gpu_hours", "days"] if "R" in w else [])]
    n_work = n_b if grid else 0
    both = Lazy({}, {name: lambda _, name=name: training(name, columns, w, n_work)
                     for name in names})
    return Built(n_a, n_b, grid, columns, {k: w[k] for k in work}, both, dtypes,
                 [*inputs, *work, *makers, *names], dropped, n_grid, used)
