"""params: where the parameters sit, by component prefix (attention, mlp, moe, embedding, ...)."""

from __future__ import annotations

from typing import Any

from calc.counting import GIGA
from calc.reports.estimate import estimate
from calc.views.figures import COLOURS, need_models, parts


def draw(figure_class: Any, names: list[str]) -> Any:
    need_models("params", names)
    reports = [estimate(name) for name in names]
    grouped = [parts(report.params.components) for report in reports]
    order = list(dict.fromkeys(part for counts in grouped for part in counts))
    colour = {part: COLOURS[i % len(COLOURS)] for i, part in enumerate(order)}
    figure = figure_class(figsize=(9, 1.2 + 0.55 * len(names)), layout="constrained")
    ax = figure.subplots()
    for row, (report, counts) in enumerate(zip(reports, grouped, strict=True)):
        left = 0.0
        for part in order:
            share = counts.get(part, 0) / report.params.total
            ax.barh(row, 100 * share, left=left, color=colour[part],
                    label=part if row == 0 else None)
            left += 100 * share
        p = report.params
        active = f", {p.active / GIGA:.3g} B active" if p.active != p.total else ""
        ax.text(101, row, f"{p.total / GIGA:.3g} B{active}", va="center", fontsize="small")
    ax.set_yticks(range(len(reports)), [r.model for r in reports])
    ax.set_xticks(range(0, 101, 20))
    ax.invert_yaxis()
    ax.set(xlim=(0, 128), xlabel="share of all parameters (%)",
           title="Where the parameters sit (exact counts; a tied LM head counts once)")
    # every part in the legend, even one no model here has (its bars have zero width)
    figure.legend(ncols=4, fontsize="small", loc="outside lower center")
    return figure
