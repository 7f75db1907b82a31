"""The fine-tuning reproduction as tables: the errors by split and publisher, then every run's
memory and speed beside calc's."""

from __future__ import annotations

from calc.counting import GIB
from calc.reports.finetune_runs import FinetuneReproduction
from calc.tables import Column, Table, View


def _signed(value: float | None) -> str:
    return "" if value is None else f"{100 * value:+.0f} %"


def view(report: FinetuneReproduction) -> View:
    errors = Table("Error |calc / published − 1| (modelled only: rows without a setting calc "
                   "leaves out)",
                   [Column("quantity"), Column("rows"), Column("modelled only", "bool"),
                    Column("n", "int"), Column("median", "pct"), Column("p90", "pct"),
                    Column("worst"), Column("worst row")])
    for s in report.summaries:
        if s.n:
            errors.add(s.quantity, s.rows, s.modelled_only, s.n, s.median, s.p90,
                       _signed(s.worst), s.worst_row)
    rows = Table("Published runs beside calc",
                 [Column("run"), Column("split"), Column("published GiB", "ratio"),
                  Column("calc GiB", "ratio"), Column("memory"),
                  Column("published tok/s/GPU", "ratio"), Column("calc tok/s/GPU", "ratio"),
                  Column("time"), Column("not modelled"), Column("not compared")])
    for r in report.rows:
        rows.add(r.name, r.split,
                 r.published_memory_bytes / GIB if r.published_memory_bytes else None,
                 r.calc_memory_bytes / GIB if r.calc_memory_bytes else None,
                 _signed(r.memory_error), r.published_tokens_per_s_per_gpu,
                 r.calc_tokens_per_s_per_gpu, _signed(r.time_error),
                 ", ".join([*r.unmodelled, *(f"{what} (time)" for what in r.unmodelled_time
                                              if what not in r.unmodelled)]),
                 "; ".join(r.skipped))
    targets = report.targets
    notes = [
        f"Targets on the held-out rows (issue 20): memory median ≤ "
        f"{100 * targets['memory_median']:g} %, p90 ≤ {100 * targets['memory_p90']:g} %; time "
        f"median ≤ {100 * targets['time_median']:g} %. Nothing is fitted: fit rows are "
        f"reported apart for a later fit.",
        *(f"Rule: {rule}." for rule in report.rules),
    ]
    return View(f"calc reproduce --finetune: {len(report.rows)} published fine-tuning runs",
                [errors, rows], notes)
