"""The training-memory report (calc.memory) as tables."""

from __future__ import annotations

from calc.reports.memory import FIXES, MemoryReport
from calc.tables import GIB, Column, Table, View, add_bytes, bytes_table, verdict

_ZERO_STAGE = {"weights": 3, "gradients": 2, "gradient_copy": 1, "master": 1,
               "optimizer_states": 1}


def view(report: MemoryReport) -> View:
    m, o = report.memory, report.memory.options
    title = (f"{report.model} — training memory of the most loaded GPU (s = {o.seq_len:,}, "
             f"micro-batch {o.micro_batch}, ZeRO {o.zero}, dp {o.dp}, tp {o.tp}, pp {o.pp})")
    table = bytes_table("Memory per GPU")
    per = m.bytes_per_param
    add_bytes(table, "weights", m.weights_bytes, f"{per['weights']} B/param")
    add_bytes(table, "gradients", m.gradients_bytes,
           f"{per['gradients']} B/param" + (f" + fp32 copy {per['gradient_copy']}"
                                             if per["gradient_copy"] else ""))
    add_bytes(table, "optimizer states + fp32 master", m.optimizer_bytes,
           f"{per['optimizer_states']} + {per['master']} B/param")
    add_bytes(table, "activations", m.activations_bytes, f"recompute {o.recompute}")
    for key, value in m.activations.items():
        add_bytes(table, f"  activations: {key}", value)
    add_bytes(table, "  one dense layer, one micro-batch", m.activations_per_layer_bytes,
           "Korthikanti et al. 2022 §4")
    add_bytes(table, "total", m.total_bytes, verdict(m.fits))
    if m.gpu is not None:
        add_bytes(table, f"GPU memory ({m.gpu})", m.gpu_bytes, m.gpu_title or "")
        add_bytes(table, "headroom (GPU − total)", m.headroom_bytes)
        table.add("largest micro-batch that fits", m.max_micro_batch, None, None,
                  _short(report) if m.max_micro_batch == 0 else "")
    recipe = Table(f"Bytes per parameter (recipe {o.recipe!r}, optimizer {o.optimizer!r}), "
                   f"before sharding",
                   [Column("piece"), Column("bytes", "int"), Column("split over dp from ZeRO")])
    for key, value in per.items():
        if value:
            recipe.add(key.replace("_", " "), value, f"stage {_ZERO_STAGE[key]}")
    recipe.add("total", sum(per.values()), "")
    tables = [table, recipe]
    if m.short is not None:
        tables.append(_fixes(report))
    return View(title, tables, [*report.conventions, f"Model: {report.source}."])


def _short(report: MemoryReport) -> str:
    """What does not fit, in one cell."""
    m = report.memory
    if m.short == "model states":
        return f"the model states alone ({m.states_bytes / GIB:,.1f} GiB) do not fit"
    layers = m.activations_bytes / m.options.micro_batch
    return (f"the model states fit ({m.states_bytes / GIB:,.1f} GiB); one micro-batch of "
            f"activations ({layers / GIB:,.1f} GiB) does not")


def _flags(changes: dict[str, int | str]) -> str:
    return " ".join(f"--{key.replace('_', '-')} {value}" for key, value in changes.items())


def _fixes(report: MemoryReport) -> Table:
    """What would make it fit: the smallest change of each kind that does."""
    m = report.memory
    table = Table("What would make it fit: the smallest change of each kind, alone",
                  [Column("change"), Column("total per GPU", "bytes"),
                   Column("largest micro-batch", "int")])
    for fix in m.fixes:
        table.add(_flags(fix.changes), fix.total_bytes, fix.max_micro_batch)
    if not m.fixes:
        table.add(f"none alone ({', '.join(FIXES)}); combine them or use more GPUs",
                  None, None)
    return table
