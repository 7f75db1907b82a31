"""layout: every layout the search priced, step time against memory per GPU, those that fit apart
from those that do not, the GPU's memory and the limit less the chosen layout's margin, the
chosen (fastest fitting) layout marked."""

from __future__ import annotations

from typing import Any

from calc.counting import GIB
from calc.errors import CalcError
from calc.plan.search import Search
from calc.reports.layout import LayoutReport, searched
from calc.views.figures import COLOURS, need_models


def draw(figure_class: Any, names: list[str], gpu: str | None = None, gpus: int | None = None,
         **options: Any) -> Any:
    """One model's search on `gpus` × `gpu` with calc.layout's `options` (global_batch,
    framework, pins and sets: tp=8, pp=(4, 8))."""
    need_models("layout", names)
    if len(names) != 1 or gpu is None or "," in gpu or gpus is None:
        raise CalcError("plot layout: give one MODEL, one --gpu and --gpus (how many)")
    return drawn(figure_class, *searched(names[0], gpu=gpu, gpus=gpus, **options))


def drawn(figure_class: Any, report: LayoutReport, found: Search) -> Any:
    """The figure of a search already run (calc.reports.layout.searched's report and search)."""
    figure = figure_class(figsize=(8, 5.5), layout="constrained")
    ax = figure.subplots()
    for group, colour, label in ((found.rejected, "#BBBBBB", "does not fit"),
                                 (found.ranked, COLOURS[0], "fits, with the margin")):
        ax.scatter([c.memory_bytes / GIB for c in group], [c.time.step for c in group], s=6,
                   color=colour, alpha=0.6, label=f"{label} ({len(group):,})")
    best = found.ranked[0]
    limit = report.gpu_memory_bytes / GIB
    ax.axvline(limit, color="black", linewidth=1,
               label=f"{report.gpu} memory: {limit:,.0f} GiB")
    ax.axvline(limit - best.margin_bytes / GIB, color="black", linestyle="--", linewidth=1,
               label=f"less the chosen layout's margin ({best.margin_bytes / GIB:.1f} GiB)")
    ax.plot(best.memory_bytes / GIB, best.time.step, "*", color=COLOURS[2], markersize=14,
            label=f"chosen: {_short(best.layout)}, {best.time.step:.3g} s")
    times = [c.time.step for c in found.ranked]
    ax.set(xlabel="memory per GPU (GiB, calc.memory: allocated + margin)",
           ylabel="predicted step time (s)", yscale="log",
           ylim=(min(times) * 0.9, max(times) * 3), xlim=(0, limit * 2.5),
           title=f"{report.model} on {report.gpus:,} × {report.gpu}, global batch "
                 f"{report.global_batch:,}: {report.framework} (recipe {report.recipe!r})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="upper right")
    return figure


def _short(layout: Any) -> str:
    vpp = f"×{layout.vpp}" if layout.vpp > 1 else ""
    return (f"tp {layout.tp} · pp {layout.pp}{vpp} · dp {layout.dp}"
            + (f" · cp {layout.cp}" if layout.cp > 1 else "")
            + (f" · ep {layout.ep}" if layout.ep > 1 else "")
            + f", ZeRO {layout.zero}, recompute {layout.recompute}")
