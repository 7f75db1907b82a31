"""step: one training step's predicted time by part, one stacked bar per layout given."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from calc.errors import CalcError
from calc.reports.step import step
from calc.timing.schedule import PARTS
from calc.views.figures import COLOURS, need_models


def draw(figure_class: Any, names: list[str], gpu: str | None = None, gpus: int | None = None,
         layouts: Sequence[dict[str, Any]] = ({},), **shared: Any) -> Any:
    """A bar for each layout of `layouts` (calc.step's options, over the `shared` ones), of the
    one model named."""
    need_models("step", names)
    if len(names) != 1:
        raise CalcError(f"plot step: one model, not {len(names)} (give several --layout)")
    if gpu is None:
        raise CalcError("plot step: give the GPU (--gpu)")
    reports = [step(names[0], gpu=gpu, gpus=gpus, **{**shared, **layout})
               for layout in layouts]
    parts = [p for p in dict.fromkeys(part for r in reports for part in r.breakdown)
             if any(r.breakdown.get(p, 0) for r in reports)]
    order = [p for p in PARTS if p in parts] + [p for p in parts if p not in PARTS]
    figure = figure_class(figsize=(1.6 + 1.3 * len(reports), 5.5), layout="constrained")
    ax = figure.subplots()
    for column, report in enumerate(reports):
        bottom = 0.0
        for i, part in enumerate(order):
            seconds = report.breakdown.get(part, 0.0)
            ax.bar(column, seconds, bottom=bottom, color=COLOURS[i % len(COLOURS)],
                   label=part.replace("_", " ") if column == 0 else None)
            bottom += seconds
        ax.text(column, bottom, f"{report.step_time_s:.3g} s\nMFU {100 * report.mfu:.0f} %"
                + ("" if report.fits else "\nno fit"), ha="center", va="bottom",
                fontsize="small")
    labels = [report.layout.label.split(", micro-batch")[0] for report in reports]
    ax.set_xticks(range(len(reports)), labels, rotation=20, ha="right", fontsize="small")
    ax.set(ylabel="seconds per step",
           title=f"{reports[0].model} on {reports[0].gpus:,} × {reports[0].gpu}: the step by "
                 f"part (calc step)")
    ax.margins(y=0.18)
    figure.legend(ncols=3, fontsize="small", loc="outside lower center")
    return figure
