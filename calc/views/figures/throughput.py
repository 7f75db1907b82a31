"""throughput: every published step time against the step-time model's, held out by source."""

from __future__ import annotations

from typing import Any

from calc.errors import CalcError

BANDS = (0.10, 0.25)  # the ±10 % and ±25 % bands drawn around the diagonal


def draw(figure_class: Any, names: list[str]) -> Any:
    """Held-out predicted step time (constants fitted without the run's publisher) against the
    published one, log axes, a colour per publisher, the ±10 % and ±25 % bands."""
    import numpy as np
    from matplotlib import colormaps

    from calc.reports.throughput import reproduce_throughput

    if names:
        raise CalcError("plot throughput: takes no model (it draws every published run)")
    report = reproduce_throughput(search=False)
    rows = report.rows
    loso = report.validation.leave_one_source_out
    publishers = sorted({r.publisher for r in rows}, key=lambda p: -loso.per_source[p].rows)
    colours = colormaps["tab20"].resampled(max(len(publishers), 2))
    figure = figure_class(figsize=(8, 7.5), layout="constrained")
    ax = figure.subplots()
    times = [t for r in rows for t in (r.published_step_s, r.held_out_step_s)]
    low, high = min(times) / 1.5, max(times) * 1.5
    line = np.geomspace(low, high, 50)
    ax.plot(line, line, color="black", linewidth=1)
    for band, alpha in zip(BANDS, (0.30, 0.15), strict=True):
        ax.fill_between(line, line * (1 - band), line * (1 + band), color="grey",
                        alpha=alpha, linewidth=0, label=f"±{band:.0%}")
    for i, publisher in enumerate(publishers):
        mine = [r for r in rows if r.publisher == publisher]
        s = loso.per_source[publisher]
        ax.scatter([r.published_step_s for r in mine], [r.held_out_step_s for r in mine],
                   s=14, color=colours(i),
                   label=f"{publisher} ({s.rows}, median {s.median:.0%})")
    ax.set(xscale="log", yscale="log", xlim=(low, high), ylim=(low, high),
           xlabel="published step time (s)",
           ylabel="predicted step time, its publisher held out (s)",
           title=f"Leave one source out: {loso.rows} runs, {loso.sources} publishers, median "
                 f"{loso.median:.1%}, 90th percentile {loso.p90:.1%}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="x-small", ncols=2, loc="upper left")
    return figure
