"""The training-memory report (calc.memory) as tables."""

from __future__ import annotations

from calc.reports.memory import MemoryReport
from calc.tables import Column, Table, View, add_bytes, bytes_table, verdict

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
                  "model states alone do not fit" if m.max_micro_batch == 0 else "")
    recipe = Table(f"Bytes per parameter (recipe {o.recipe!r}, optimizer {o.optimizer!r}), "
                   f"before sharding",
                   [Column("piece"), Column("bytes", "int"), Column("split over dp from ZeRO")])
    for key, value in per.items():
        if value:
            recipe.add(key.replace("_", " "), value, f"stage {_ZERO_STAGE[key]}")
    recipe.add("total", sum(per.values()), "")
    return View(title, [table, recipe], [*report.conventions, f"Model: {report.source}."])
