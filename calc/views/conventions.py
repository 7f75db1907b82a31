"""The conventions table: every rule's training FLOPs per token, ratios and implied MFU."""

from __future__ import annotations

from calc.reports.conventions import ConventionsTable
from calc.tables import Column, Table, View


def view(table: ConventionsTable) -> View:
    out = Table(
        f"Training FLOPs per token at T = {table.seq_len:,} (forward = ÷ 3); "
        f"spread {table.spread:.3f}×",
        [Column("rule"), Column("FLOPs per token", "int"), Column("≈", "flops"),
         Column("÷ exact causal", "ratio"), Column("÷ exact full", "ratio"),
         Column(f"MFU if exact causal = {100 * table.base_mfu:g} %", "pct"),
         Column("assumes")])
    for row in table.rows:
        out.add(row.label, row.train, row.train, row.vs_causal, row.vs_full, row.mfu,
                row.assumes)
    return View(f"{table.model} — {table.title}: FLOPs per token by convention", [out],
                table.conventions)
