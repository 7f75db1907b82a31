"""The throughput measurement as tables: device, matmul ceiling, training step, MFU."""

from __future__ import annotations

from calc.counting import DEFAULT_MFU
from calc.reports.bench import BenchReport
from calc.tables import Column, Table, View, human


def view(report: BenchReport) -> View:
    d, m, s = report.device, report.matmul, report.step
    device = Table("Device", [Column("quantity"), Column("value")])
    device.add("device", f"{d.kind}: {d.name}")
    if d.cores:
        device.add("cores" if d.kind == "cpu" else "SMs", str(d.cores))
    if d.threads:
        device.add("torch threads", str(d.threads))
    device.add("catalogue GPU", d.gpu or "none")
    if report.peak_flops:
        device.add(f"dense {report.dtype} peak", human(report.peak_flops, "FLOP/s"))
    device.add("measured", f"{report.date}, torch {report.torch_version}")
    ceiling = Table(f"Matmul ceiling ({m.size}×{m.size} @ {m.size}×{m.size}, {m.dtype})",
                    [Column("quantity"), Column("value")])
    ceiling.add("median seconds", f"{m.median_seconds:.4g}")
    ceiling.add("achieved", human(m.flops_per_second, "FLOP/s"))
    if report.peak_flops:
        ceiling.add("of the dense peak", f"{100 * m.flops_per_second / report.peak_flops:.1f} %")
    step = Table(f"Training step ({s.model}, {s.params:,} parameters, batch {s.batch} × "
                 f"{s.seq_len} tokens)", [Column("quantity"), Column("value")])
    step.add("measured seconds per step (median)", f"{s.median_seconds:.4g}")
    step.add("tokens per second", f"{s.tokens_per_second:,.0f}")
    step.add("model FLOPs per step (calc, causal)", f"{s.model_flops:.4g}")
    step.add("executed FLOPs per step (full attention)", f"{s.executed_flops:.4g}")
    step.add("achieved", human(s.achieved_flops_per_second, "FLOP/s"))
    if s.mfu_vs_peak is not None:
        step.add("MFU vs dense peak", f"{100 * s.mfu_vs_peak:.2f} %")
    step.add("MFU vs measured matmul ceiling", f"{100 * s.mfu_vs_ceiling:.2f} %")
    if s.predicted_seconds_at_peak is not None:
        step.add(f"predicted seconds at peak × MFU {DEFAULT_MFU:g}",
                 f"{s.predicted_seconds_at_peak:.4g}")
    step.add("predicted seconds at the ceiling (lower bound)",
             f"{s.predicted_seconds_at_ceiling:.4g}")
    notes = [*report.conventions, *([d.note] if d.note else [])]
    return View(f"bench: {d.kind} {d.name}", [device, ceiling, step], notes)
