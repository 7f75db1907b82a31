"""A sweep as a table: its first rows, the inputs that vary and the main numbers."""

from __future__ import annotations

from calc.reports.sweep import Sweep
from calc.tables import Column, Table, View

SHOWN = 10  # rows a notebook shows; .to_dataframe() has them all
_NUMBERS = {"params_total": ("params", "int"), "params_active": ("active", "count"),
            "flops_forward": ("forward FLOPs/token", "flops"),
            "training_flops": ("training FLOPs", "sci"), "gpu_hours": ("GPU-hours", "hours")}
_TEXT = ("model", "attention", "gpu")


def view(sweep: Sweep) -> View:
    numbers = [name for name in _NUMBERS if name in sweep.columns]
    inputs = [name for name in sweep.columns if name not in numbers  # numbers stay unread
              and not name.startswith(("params_", "flops_", "attention_share", "days"))
              and sweep.varies(name)]
    columns = [Column(name, "text" if name in _TEXT else "sci" if name == "tokens" else
                      "ratio" if name == "mfu" else "int") for name in inputs]
    columns += [Column(*_NUMBERS[name]) for name in numbers]
    shown = min(SHOWN, len(sweep))
    more = f" (the first {shown})" if shown < len(sweep) else ""
    table = Table(f"{len(sweep):,} configurations{more}", columns)
    for row in sweep.head(shown):
        table.add(*(row[name] for name in [*inputs, *numbers]))
    left_out = (f" ({sweep.n_dropped:,} model shapes dropped as invalid: "
                f"{', '.join(sweep.dropped)})" if sweep.n_dropped else "")
    return View(f"calc sweep: {len(sweep):,} configurations × {len(sweep.columns)} columns"
                f"{left_out}", [table], sweep.conventions)
