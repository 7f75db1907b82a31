"""The step-time report as tables: the step and its rates, then its breakdown by part."""

from __future__ import annotations

from calc.counting import GIB, TERA
from calc.reports.step import StepReport
from calc.tables import Column, Table, View
from calc.timing.offload import PART_LINK
from calc.views._config import config_notes, config_table

# The parallel group whose link each communication part crosses.
PART_GROUP = {"tp_communication": "tp", "cp_communication": "cp", "ep_communication": "ep",
              "pp_communication": "pp", "zero_communication": "dp", "dp_communication": "dp",
              **{part: part for part in PART_LINK}}


def breakdown_table(report: StepReport) -> Table:
    table = Table("Step time by part", [Column("part"), Column("seconds", "ratio"),
                                        Column("share", "pct"), Column("link")])
    for part, seconds in report.breakdown.items():
        if seconds:
            link = report.links.get(PART_GROUP.get(part, ""), "")
            table.add(part.replace("_", " "), seconds, seconds / report.step_time_s, link)
    table.add("step", report.step_time_s, 1.0, "")
    for part, seconds in report.finetune_parts.items():  # inside compute and recompute above
        table.add(f"of which {part}", seconds, seconds / report.step_time_s, "")
    return table


def view(report: StepReport) -> View:
    title = (f"{report.model} — predicted training step on {report.gpus:,} × {report.gpu} "
             f"({report.system}): {report.layout.label}")
    if report.offload is not None:
        moved = [f"{what} → {where}" for what, where in (("optimizer", report.offload.optimizer),
                 ("parameters", report.offload.params)) if where != "none"]
        title += f", offload {', '.join(moved)}"
    step = Table("Step", [Column("quantity"), Column("value", "text")])
    step.add("step time", f"{report.step_time_s:,.3f} s")
    step.add("micro-batches per step m", f"{report.micro_batches:,}")
    step.add("pipeline bubble / (m · t_mb)", f"{100 * report.bubble_fraction:.1f} %")
    step.add("tokens per step", f"{report.tokens_per_step:,}")
    step.add("tokens/s per GPU", f"{report.tokens_per_s_per_gpu:,.0f}")
    step.add("model TFLOP/s per GPU", f"{report.tflops_per_gpu:,.1f}")
    step.add(f"MFU (calc's exact FLOPs, dense {report.layout.dtype} peak "
             f"{report.peak_flops / TERA:g} TFLOP/s)", f"{100 * report.mfu:.1f} %")
    if report.mfu_bf16_peak is not None:
        step.add("MFU against the dense bf16 peak (as papers report fp8 runs)",
                 f"{100 * report.mfu_bf16_peak:.1f} %")
    step.add("HFU (recomputation added)", f"{100 * report.hfu:.1f} %")
    verdict = "fits" if report.fits else "does NOT fit"
    step.add(f"memory per GPU (calc.memory, {report.layout.framework} recipe "
             f"{report.recipe!r})",
             f"{report.memory_per_gpu_bytes / GIB:,.1f} GiB, margin "
             f"{report.memory_margin_bytes / GIB:,.1f} GiB included, of "
             f"{report.gpu_memory_bytes / GIB:,.0f} GiB: {verdict}")
    off = report.offload
    if off is not None:
        where = off.host_memory_source or "not checked: no host memory known"
        gpus = f"{off.gpus_per_node} GPU" + ("s'" if off.gpus_per_node > 1 else "'s")
        step.add(f"host memory per node ({gpus} offloaded states)",
                 f"{off.host_bytes_per_node / GIB:,.1f} GiB of "
                 + (f"{off.host_memory_bytes / GIB:,.0f} GiB ({where})"
                    if off.host_memory_bytes else where))
    if report.finetune is not None:
        ft = report.finetune
        step.add("fine-tuning", f"{ft.method}, r = {ft.rank} on {','.join(ft.targets)}: "
                                f"{ft.trainable:,} trainable parameters")
    if report.dataset_tokens is not None:
        step.add("tokens: dataset × epochs",
                 f"{report.dataset_tokens:.4g} × {report.epochs or 1:g}")
    if report.gpu_hours is not None and report.days is not None and report.tokens:
        if report.goodput < 1 and report.gpu_hours_ideal is not None:
            step.add(f"GPU-hours for {report.tokens:.4g} tokens, ideal (every hour a step)",
                     f"{report.gpu_hours_ideal:,.0f}")
        step.add(f"GPU-hours for {report.tokens:.4g} tokens (predicted MFU"
                 + (f", goodput {report.goodput:g})" if report.goodput < 1 else ")"),
                 f"{report.gpu_hours:,.0f}")
        step.add(f"days on {report.gpus:,} GPUs", f"{report.days:,.1f}")
        if report.cost is not None:
            step.add(f"cost at {report.price:g} per GPU-hour", f"{report.cost:,.0f}")
        if report.energy_kwh is not None:
            step.add(f"energy, kWh (TDP × PUE {report.pue:g})", f"{report.energy_kwh:,.0f}")
        if report.co2e_kg is not None:
            step.add("emissions, t CO2e", f"{report.co2e_kg / 1000:,.1f}")
    tables = [step, breakdown_table(report)]
    notes = [*report.notes, *report.conventions, f"Model: {report.source}."]
    if report.config is not None:
        tables.insert(0, config_table(report.config))
        notes[:0] = config_notes(report.config)
    return View(title, tables, notes)
