"""The reproduction report (calc.reproduce()) as tables: the runs as published, then calc's
FLOPs, GPU-hours and implied MFU beside them; sources, scopes and exclusions under them."""

from __future__ import annotations

from calc.reports.reproduce import ReproduceReport
from calc.tables import Column, Table, View


def _published_table(report: ReproduceReport) -> Table:
    table = Table("Published training runs",
                  [Column("model"), Column("tokens", "count"), Column("GPU"),
                   Column("GPUs", "int"), Column("dtype"), Column("GPU-hours", "hours"),
                   Column("FLOPs", "sci"), Column("MFU", "pct"), Column("confidence")])
    for run in report.runs:
        table.add(run.model, run.tokens, run.gpu or "not published", run.gpus, run.dtype,
                  run.published_gpu_hours, run.published_flops, run.published_mfu,
                  run.confidence)
    return table


def _calc_table(report: ReproduceReport) -> Table:
    mfu = f"{100 * report.default_mfu:g} %"
    table = Table("calc against the published runs (causal attention at the pre-training "
                  "context T; ratio = calc / published)",
                  [Column("model"), Column("T", "int"), Column("6ND FLOPs", "sci"),
                   Column("exact FLOPs", "sci"), Column("exact / pub.", "ratio"),
                   Column(f"GPU-h @ MFU {mfu}", "hours"), Column("est. / pub.", "ratio"),
                   Column("GPU-h @ pub. MFU", "hours"), Column("est. / pub.", "ratio"),
                   Column("implied MFU exact", "pct"), Column("implied MFU 6ND", "pct")])
    for run in report.runs:
        table.add(run.model, run.seq_len, run.flops_6nd, run.flops, run.flops_ratio,
                  run.gpu_hours, run.ratio, run.gpu_hours_at_published_mfu,
                  run.ratio_at_published_mfu, run.implied_mfu, run.implied_mfu_6nd)
    return table


def _notes(report: ReproduceReport) -> list[str]:
    notes = list(report.conventions)
    for run in report.runs:
        parts = [f"{run.model} ({run.title}; {run.accelerator or 'accelerator not published'})"
                 f": {run.source}"]
        if run.gpu_hours_scope:
            parts.append(f"GPU-hours: {run.gpu_hours_scope}")
        if run.published_mfu_convention:
            parts.append(f"MFU: {run.published_mfu_convention}")
        notes.append(". ".join(parts) + f". [{run.confidence or 'confidence not tagged'}]")
    notes += [f"Not reproduced — {item.run}: {item.reason} ({item.source})."
              for item in report.excluded]
    return notes


def view(report: ReproduceReport) -> View:
    return View(f"calc reproduce: {len(report.runs)} published training runs",
                [_published_table(report), _calc_table(report)], _notes(report))
