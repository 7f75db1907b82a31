"""The throughput reproduction as tables: errors, every run beside its prediction, how each
published step time was derived, the layout search against the authors', the constants."""

from __future__ import annotations

from calc.reports.throughput import ThroughputReport
from calc.spec.layout import Layout
from calc.tables import Column, Table, View


def short(layout: Layout) -> str:
    """tp·pp(×v)·dp(·cp)(·ep), micro-batch, recomputation, ZeRO, SP, dtype in a few characters."""
    o = layout
    pipeline = f"p{o.pp}" + (f"v{o.vpp}" if o.vpp > 1 else "")
    pipeline += "(e+l)" if o.split_embedding_loss else ""  # embedding and loss as layers
    parts = [f"t{o.tp}", pipeline, f"d{o.dp}"]
    parts += [f"c{o.cp}"] if o.cp > 1 else []
    parts += [f"e{o.ep}"] if o.ep > 1 else []
    flags = [f"b{o.micro_batch}", {"none": "", "selective": "sel", "full": "full"}[o.recompute],
             f"z{o.zero}" if o.zero else "", "sp" if o.sequence_parallel else "",
             "flash" if o.flash_attention else "", o.dtype]
    return " ".join(["·".join(parts), *(f for f in flags if f)])


def view(report: ThroughputReport) -> View:
    errors = Table("Error of the predicted step time, |predicted/published − 1|",
                   [Column("runs"), Column("count", "int"), Column("median", "pct"),
                    Column("worst", "pct"), Column("worst run")])
    for e in report.errors:
        errors.add(e.role, e.runs, e.median, e.worst, e.worst_run)
    runs = Table("Published runs beside calc's prediction",
                 [Column("run"), Column("GPUs"), Column("layout"), Column("published"),
                  Column("published s/step", "ratio"), Column("predicted s/step", "ratio"),
                  Column("predicted / published", "ratio"), Column("role")])
    for r in report.rows:
        runs.add(r.name, f"{r.gpus:,} × {r.gpu}", short(r.layout), r.figure,
                 r.published_step_s, r.predicted_step_s, r.ratio, r.role)
    derived = Table("How each published step time follows from the source's figure",
                    [Column("run"), Column("step time from"), Column("assumed by calc"),
                     Column("source")])
    for r in report.rows:
        derived.add(r.name, r.how, ", ".join(r.assumed), r.source)
    tables = [errors, runs, derived]
    if any(r.search_verdict for r in report.rows):
        search = Table("Layout search against the authors' layout (both predicted)",
                       [Column("run"), Column("authors' s/step", "ratio"),
                        Column("searched s/step", "ratio"), Column("searched layout"),
                        Column("verdict")])
        for r in report.rows:
            search.add(r.name, r.predicted_step_s, r.searched_step_s,
                       short(r.searched_layout) if r.searched_layout else "", r.search_verdict)
        tables.append(search)
    constants = Table(f"Fitted constants ({report.fit_method})",
                      [Column("constant"), Column("value", "ratio")])
    for name, value in report.fitted_constants.items():
        constants.add(name, value)
    tables.append(constants)
    title = f"calc reproduce --throughput: {len(report.rows)} published throughput runs"
    return View(title, tables, report.conventions)
