"""The serving reproduction as tables: the held-out errors by metric and publisher, every
published figure beside its prediction, the rows that cannot be predicted, the constants."""

from __future__ import annotations

from calc.reports.serving_runs import TARGET_MEDIAN, TARGET_P90, ServingReproduceReport, ServingRow
from calc.tables import Column, Table, View

UNITS = {"throughput": "tok/s", "tpot": "ms", "ttft": "ms"}


def _shown(row: ServingRow, value: float | None) -> float | None:
    """Tokens/s as they are, latencies in milliseconds."""
    if value is None or row.metric == "throughput":
        return value
    return value * 1e3


def _ratio(value: float | None, published: float) -> float | None:
    return value / published if value is not None else None


def view(report: ServingReproduceReport) -> View:
    errors = Table("Leave-one-publisher-out error, |predicted/published − 1|",
                   [Column("metric"), Column("publisher"), Column("figures", "int"),
                    Column("median", "pct"), Column("p90", "pct"),
                    Column("median, all fitted", "pct")])
    for e in report.errors:
        errors.add(e.metric, e.scope, e.figures, e.median, e.p90, e.median_in_sample)
    rows = Table("Published serving figures beside calc's prediction",
                 [Column("row"), Column("GPUs"), Column("engine"), Column("layout"),
                  Column("I/O"), Column("load"), Column("figure"), Column("unit"),
                  Column("published", "ratio"), Column("held out", "ratio"),
                  Column("held out / published", "ratio"), Column("fitted")])
    for r in report.rows:
        lengths = f"{r.input_len}/{r.output_len}" if r.input_len else ""
        rows.add(r.name, f"{r.gpus} × {r.gpu} {r.dtype}", r.engine, r.layout, lengths, r.load,
                 r.figure, UNITS[r.metric], _shown(r, r.published), _shown(r, r.held_out),
                 _ratio(r.held_out, r.published), r.fitted)
    skipped = Table("Rows calc cannot predict", [Column("row"), Column("why")])
    for s in report.unpredicted:
        skipped.add(s.name, s.reason)
    constants = Table("Fitted constants (presets/serving.toml)",
                      [Column("constant"), Column("value", "ratio"), Column("prior"),
                       Column("within")])
    for name, value in report.constants.items():
        low, high = report.priors[name]
        constants.add(name, value, f"{low:g}–{high:g}",
                      "yes" if low <= value <= high else "NO: outside its prior")
    title = (f"calc reproduce --serving: {len({r.name for r in report.rows})} published "
             f"serving rows")
    notes = [
        f"Fit: {report.method}.",
        f"Targets (issue 21): median ≤ {TARGET_MEDIAN:.0%}, p90 ≤ {TARGET_P90:.0%} on "
        f"held-out throughput. 'held out' predicts each row with the constants fitted without "
        f"its publisher; 'median, all fitted' with every publisher in the fit.",
        "A rate run that kept up with its offered rate measured the rate, not the engine, and "
        "TTFT under load is mostly queueing: both are shown, not fitted nor counted.",
    ]
    return View(title, [errors, rows, skipped, constants], notes)
