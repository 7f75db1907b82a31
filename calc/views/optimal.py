"""The compute-optimal sizing report (calc.optimal) as a table."""

from __future__ import annotations

from calc.counting import TERA
from calc.reports.optimal import OptimalReport, Shape
from calc.tables import Column, Table, View


def _shape(shape: Shape) -> str:
    return (f"{shape.layers:,} × {shape.d_model:,} (d/L = {shape.aspect_ratio:.3g} as "
            f"{shape.aspect_from})")


def view(report: OptimalReport) -> View:
    o = report.optimal
    table = Table(f"Compute-optimal size for C = {o.flops:.4g} FLOPs",
                  [Column("route"), Column("params N", "count"), Column("tokens D", "count"),
                   Column("D / N", "ratio"), Column("fitted loss", "ratio"),
                   Column("shape L × d"), Column("12·L·d²", "count")])
    f = o.fitted
    table.add(f"{o.tokens_per_parameter:g} tokens per parameter", o.params, o.tokens,
              o.tokens_per_parameter, o.loss, _shape(o.shape), o.shape.params)
    table.add("Hoffmann et al. 2022 fit (approach 3)", f.params, f.tokens,
              f.tokens_per_parameter, f.loss, _shape(f.shape), f.shape.params)
    tables = [table]
    if o.budget is not None:
        b = o.budget
        budget = Table("Budget", [Column("quantity"), Column("value", "text")])
        budget.add("GPUs", f"{b.gpus:,} × {b.gpu} ({b.gpu_title})")
        budget.add("days", f"{b.days:g}")
        budget.add(f"dense {b.dtype} peak", f"{b.peak_flops / TERA:g} TFLOP/s")
        budget.add("MFU", f"{b.mfu:g} ({b.mfu_source})")
        budget.add("training FLOPs C", f"{o.flops:.4g}")
        tables.insert(0, budget)
    return View("Compute-optimal sizing", tables, report.conventions)
