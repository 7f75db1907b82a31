"""The verification report as tables: parameters and FLOPs, calc against torch, per component."""

from __future__ import annotations

from calc.reports.verify import Check, VerifyReport
from calc.tables import Column, Table, View


def _table(title: str, checks: list[Check]) -> Table:
    table = Table(title, [Column("component"), Column("calc", "int"), Column("torch", "int"),
                          Column("match")])
    for check in checks:
        table.add(check.quantity, check.calc, check.torch, "yes" if check.match else "NO")
    return table


def view(report: VerifyReport) -> View:
    where = (f"{report.batch} × {report.seq_len:,} tokens on {report.device}, "
             f"{report.seconds:.2f} s")
    tables = [
        _table("Parameters", report.params),
        _table(f"Forward FLOPs ({where}; full attention convention)", report.flops),
    ]
    operators = Table("Forward FLOPs by operator (FlopCounterMode)",
                      [Column("operator"), Column("FLOPs", "int")])
    for op, flops in sorted(report.operators.items()):
        operators.add(op, flops)
    tables.append(operators)
    if report.hf is not None:
        if report.hf.compared:
            hf = report.hf
            tables.append(_table(f"Against transformers ({hf.model_type}, {hf.device} device, "
                                 f"eager attention)", hf.checks))
        if report.hf.reason:
            report = report.model_copy(update={"conventions": [
                *report.conventions, f"transformers: not compared — {report.hf.reason}"]})
    verdict = "everything matches" if report.ok else "MISMATCH"
    if report.ok and report.hf is not None and not report.hf.compared:
        verdict = "torch matches; transformers NOT compared (see the notes)"
    elif report.ok and report.hf is not None and report.hf.reason:
        verdict = "torch matches; transformers' parameters match, its FLOPs NOT compared"
    return View(f"verify {report.model}: {verdict}", tables, report.conventions)
