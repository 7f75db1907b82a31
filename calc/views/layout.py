"""The layout search as tables: the fastest layouts that fit, then faster ones that do not."""

from __future__ import annotations

from calc.counting import GIB
from calc.reports.layout import LayoutReport, RankedLayout
from calc.tables import Column, Table, View
from calc.views._config import config_notes, config_table


def _table(title: str, rows: list[RankedLayout], offload: bool, budget: bool,
           cost: bool) -> Table:
    table = Table(title, [Column("#", "int"), Column("tp"), Column("pp"), Column("vpp"),
                          Column("dp"), Column("cp"), Column("ep"), Column("mb"),
                          Column("recompute"), Column("ZeRO"), Column("SP"),
                          *([Column("offload")] if offload else []),
                          Column("step s", "ratio"), Column("MFU", "pct"),
                          Column("memory GiB", "ratio"),
                          *([Column("GPU-hours", "int"), Column("days", "ratio")]
                            if budget else []),
                          *([Column("cost", "int")] if cost else []),
                          Column("why")])
    for rank, row in enumerate(rows, 1):
        o = row.layout
        vpp = f"{o.vpp} (e+l)" if o.split_embedding_loss else str(o.vpp)
        table.add(rank, str(o.tp), str(o.pp), vpp, str(o.dp), str(o.cp), str(o.ep),
                  str(o.micro_batch), o.recompute, str(o.zero),
                  "yes" if o.sequence_parallel else "",
                  *([row.offload if row.offload != "none" else ""] if offload else []),
                  row.step_time_s, row.mfu, row.memory_per_gpu_bytes / GIB,
                  *([round(row.gpu_hours) if row.gpu_hours is not None else None, row.days]
                    if budget else []),
                  *([round(row.cost) if row.cost is not None else None] if cost else []),
                  row.why)
    return table


def view(report: LayoutReport) -> View:
    title = (f"{report.model} — fastest layouts on {report.gpus:,} × {report.gpu} "
             f"({report.system}), global batch {report.global_batch:,} × s "
             f"{report.seq_len:,}, {report.framework} (recipe {report.recipe!r})")
    offload = any(row.offload != "none" for row in [*report.best, *report.rejected])
    budget, cost = report.tokens is not None, report.price is not None
    margin = (f"{report.margin_gib:g} GiB margin" if report.margin_gib is not None
              else "margin per layout")
    tables = [_table(f"Top {len(report.best)} of {report.fitting:,} layouts that fit "
                     f"({report.gpu_memory_bytes / GIB:,.0f} GiB per GPU, {margin})"
                     + (f"; {report.tokens:.4g} tokens" if budget else ""),
                     report.best, offload, budget, cost)]
    if report.rejected:
        tables.append(_table("Faster layouts that do not fit in memory", report.rejected,
                             offload, False, False))
    notes = [*report.conventions, f"Model: {report.source}."]
    if report.config is not None:
        tables.insert(0, config_table(report.config))
        notes[:0] = config_notes(report.config)
    return View(title, tables, notes)
