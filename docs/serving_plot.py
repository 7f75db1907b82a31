"""docs/img/serving.png: every published serving throughput (presets/published/serving/) against
calc's held-out prediction of it (constants fitted without the row's publisher), one colour per
publisher. Needs matplotlib.

    python docs/serving_plot.py [OUT.png]
"""

from __future__ import annotations

import sys
from pathlib import Path

from matplotlib.figure import Figure

import calc

OUT = Path(__file__).parent / "img" / "serving.png"


def main(out: Path = OUT) -> None:
    report = calc.reproduce_serving()
    figure = Figure(figsize=(11, 5), layout="constrained")
    axes = figure.subplots(1, 2)
    names = sorted({r.publisher for r in report.rows})
    colour = {name: f"C{i}" for i, name in enumerate(names)}  # the same in both panels
    for ax, metric, unit in ((axes[0], "throughput", "tokens/s as printed"),
                             (axes[1], "tpot", "seconds")):
        rows = [r for r in report.rows if r.metric == metric and r.fitted and r.held_out]
        for publisher in sorted({r.publisher for r in rows}):
            mine = [r for r in rows if r.publisher == publisher]
            ax.plot([r.published for r in mine], [r.held_out for r in mine], "o",
                    markersize=3, label=publisher, alpha=0.8, color=colour[publisher])
        low = min(min(r.published, r.held_out) for r in rows)  # type: ignore[type-var]
        high = max(max(r.published, r.held_out) for r in rows)  # type: ignore[type-var]
        for factor, style in ((1, "-"), (1.35, ":"), (1 / 1.35, ":")):
            ax.plot([low, high], [low * factor, high * factor], "k" + style, linewidth=0.8)
        ax.set(xscale="log", yscale="log", xlabel=f"published {metric} ({unit})",
               ylabel=f"predicted, publisher held out ({unit})",
               title=f"{metric}: {len(rows)} figures (dotted: ±35 %)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    figure.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
