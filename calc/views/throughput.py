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
    v = report.validation
    loso = v.leave_one_source_out
    errors = Table("Error of the predicted step time, |predicted/published − 1|",
                   [Column("prediction"), Column("runs", "int"), Column("median", "pct"),
                    Column("90th percentile", "pct"), Column("target", "text")])
    errors.add("leave one source out (each publisher held out)", loso.rows, loso.median,
               loso.p90, f"median ≤ {loso.target_median:.0%}, p90 ≤ {loso.target_p90:.0%}")
    errors.add("in sample (constants fitted on every publisher)", loso.rows,
               v.in_sample_median, v.in_sample_p90, "")
    sources = Table("Leave one source out, by publisher",
                    [Column("publisher"), Column("runs", "int"), Column("median", "pct"),
                     Column("90th percentile", "pct"), Column("worst", "pct"),
                     Column("worst run")])
    for name, s in sorted(loso.per_source.items(), key=lambda item: -item[1].rows):
        sources.add(name, s.rows, s.median, s.p90, s.worst, s.worst_run)
    runs = Table("Published runs beside calc's prediction",
                 [Column("run"), Column("GPUs"), Column("layout"), Column("published"),
                  Column("published s/step", "ratio"), Column("held out / published", "ratio"),
                  Column("in sample / published", "ratio"), Column("fitted", "text")])
    for r in report.rows:
        runs.add(r.name, f"{r.gpus:,} × {r.gpu}", short(r.layout), r.figure,
                 r.published_step_s, r.held_out_ratio, r.ratio, "yes" if r.fitted else "no")
    derived = Table("How each published step time follows from the source's figure",
                    [Column("run"), Column("step time from"), Column("assumed by calc"),
                     Column("source")])
    for r in report.rows:
        derived.add(r.name, r.how, ", ".join(r.assumed), r.source)
    tables = [errors, sources, runs, derived]
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
                      [Column("constant"), Column("value", "ratio"), Column("prior", "text"),
                       Column("within prior", "text"), Column("prior's source")])
    for name, c in report.fitted_constants.items():
        constants.add(name, c.value, f"{c.prior[0]:g}-{c.prior[1]:g}",
                      "NO: outside its prior" if c.outside_prior else "yes", c.source)
    tables.append(constants)
    title = f"calc reproduce --throughput: {len(report.rows)} published throughput runs"
    return View(title, tables, report.conventions)
