"""context: forward FLOPs per token against context length T, with the attention share."""

from __future__ import annotations

from typing import Any

from calc.counting import GIGA
from calc.presets import load_model
from calc.views.figures import need_models


def draw(figure_class: Any, names: list[str], attention: str = "causal") -> Any:
    need_models("context", names)
    import numpy as np

    from calc.reports.sweep import sweep

    figure = figure_class(figsize=(8, 6.5), layout="constrained")
    flops_ax, share_ax = figure.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    for name in names:
        spec = load_model(name).spec
        top = spec.position_table or max(1 << 17, spec.context_length)
        lengths = np.unique(np.geomspace(128, top, 60).round().astype(np.int64))
        result = sweep(name, seq_len=lengths, attention=attention)
        line, = flops_ax.plot(lengths, result["flops_forward"] / GIGA, label=name)
        share_ax.plot(lengths, 100 * result["attention_share"], color=line.get_color())
        mark = sweep(name, seq_len=spec.context_length, attention=attention)  # trained at
        flops_ax.plot(spec.context_length, mark["flops_forward"][0] / GIGA, "o",
                      color=line.get_color())
        share_ax.plot(spec.context_length, 100 * mark["attention_share"][0], "o",
                      color=line.get_color())
    flops_ax.set(xscale="log", yscale="log", ylabel="forward GFLOP per token",
                 title=f"FLOPs per token against context ({attention} attention; "
                       f"• = training context)")
    share_ax.set(xscale="log", xlabel="context length T (tokens)",
                 ylabel="attention share of forward (%)", ylim=(0, 100))
    for ax in (flops_ax, share_ax):
        ax.grid(True, which="both", alpha=0.3)
    flops_ax.legend(fontsize="small")
    return figure
