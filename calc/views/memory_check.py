"""The memory verification as tables: saved against calc by part, then what was saved."""

from __future__ import annotations

from calc.reports.memory_check import MemoryCheckReport
from calc.tables import Column, Table, View


def view(report: MemoryCheckReport) -> View:
    checks = Table("Saved for the backward (transformers) against calc's activations",
                   [Column("attention"), Column("recompute"), Column("fine-tune"),
                    Column("part"), Column("saved bytes", "int"),
                    Column("calc bytes", "int"), Column("calc / saved", "ratio"),
                    Column("exact", "bool")])
    for c in report.memory_check:
        checks.add(c.attention, c.recompute, c.finetune, c.part, c.saved_bytes, c.calc_bytes,
                   c.calc_bytes / c.saved_bytes if c.saved_bytes else None, c.exact)
    saved = Table("What one layer, the positions and the output part saved (calc's "
                  "one layer: " + ", ".join(f"{a} {b:,} B" for a, b in
                                            report.calc_per_layer_bytes.items()) + ")",
                  [Column("attention"), Column("recompute"), Column("part"), Column("module"),
                   Column("dtype"), Column("shape"), Column("bytes", "int")])
    for row in report.saved:
        saved.add(row.attention, row.recompute, row.part, row.module, row.dtype,
                  "×".join(map(str, row.shape)) or "scalar", row.bytes)
    verdict = "exact" if report.ok else "NOT exact: the differences are listed by tensor"
    title = (f"{report.model} — activation memory verified on {report.device} "
             f"({report.batch} × {report.seq_len} tokens, {report.dtype}): {verdict}")
    return View(title, [checks, saved], report.conventions)
