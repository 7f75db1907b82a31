"""Plots (the optional `plot` extra: pip install -e ".[plot]"); matplotlib is imported here only.

    calc.plot("context", ["llama2-7b", "mistral-7b"], "context.png")
    python -m calc plot context llama2-7b mistral-7b -o context.png

Kinds:
- context: forward FLOPs per token against context length T, with the attention share.
- params: where the parameters sit, by component prefix (attention, mlp, moe, embedding, ...).
- mfu: GPU-hours against MFU for several GPUs, with the published GPU-hours when known.
- layout: every layout the search priced as step time against memory per GPU, those that fit
  apart from those that do not, the GPU's memory (the limit) and the limit less the chosen
  layout's margin, the chosen (fastest fitting) layout marked.

Each returns a matplotlib Figure (shown inline by Jupyter) and saves it when given a path.
The numbers come from calc.sweep, calc.estimate and calc.layout, the same as every table.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calc.counting import GIGA, TOKENS_PER_PARAMETER
from calc.errors import CalcError, install
from calc.files import output_path, write_atomic
from calc.presets import load_model
from calc.reports.estimate import estimate

KINDS = ("context", "params", "mfu", "layout")
SUFFIXES = (".png", ".svg", ".pdf")  # the formats a path's suffix picks; none means .png
DEFAULT_GPUS = ("v100", "a100", "h100", "b200", "mi300x")
COLOURS = ("#4C72B0", "#DD8452", "#C44E52", "#8172B3", "#55A868", "#937860", "#8C8C8C",
           "#DA8BC3", "#CCB974", "#64B5CD")


def parts(components: dict[str, int]) -> dict[str, int]:
    """Parameters by part: the component keys (calc.formulas.params, "attention/q") grouped by
    their prefix ("attention"), so a new component lands in its part without a list to edit."""
    grouped: dict[str, int] = {}
    for key, count in components.items():
        part = key.partition("/")[0]
        grouped[part] = grouped.get(part, 0) + count
    return grouped


def _matplotlib() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise CalcError(f"plots need matplotlib: {install('plot')}") from None
    return Figure


def plot(kind: str, models: str | Sequence[str], path: str | Path | None = None, *,
         tokens: float | None = None, gpus: Sequence[str] = DEFAULT_GPUS,
         attention: str = "causal", dtype: str = "bf16", force: bool = False,
         gpu_count: int | None = None, **layout_options: Any) -> Any:
    """A Figure of `kind` (KINDS) for `models`; saved when `path` is given, in the format its
    suffix names (SUFFIXES; none: .png), never over an existing file unless `force`. `layout`
    searches one model on `gpu_count` GPUs of the first of `gpus`, with calc.layout's options
    (`global_batch`, `framework`, pins and sets: `tp=8`, `pp=[4, 8]`)."""
    if kind not in KINDS:
        raise CalcError(f"plot kind {kind!r}: expected one of {', '.join(KINDS)}")
    if path is not None:  # checked before the work
        path = output_path(path, "plot path", force=force, suffixes=SUFFIXES, flag="force=True")
    names = [models] if isinstance(models, str) else list(models)
    if not names:
        raise CalcError("plot: give at least one model")
    if kind != "layout" and (gpu_count is not None or layout_options):
        unknown = ", ".join(["gpu_count"] * (gpu_count is not None) + sorted(layout_options))
        raise CalcError(f"plot {kind}: {unknown} are options of plot layout only")
    figure_class = _matplotlib()
    if kind == "context":
        figure = _context(figure_class, names, attention)
    elif kind == "params":
        figure = _params(figure_class, names)
    elif kind == "layout":
        figure = _layout(figure_class, names, list(gpus), gpu_count, dtype, layout_options)
    else:
        figure = _mfu(figure_class, names, tokens, list(gpus), dtype, attention)
    if path is not None:
        fmt = Path(path).suffix[1:].lower()
        write_atomic(path, lambda temporary: figure.savefig(temporary, dpi=120, format=fmt))
    return figure


def _context(figure_class: Any, names: list[str], attention: str) -> Any:
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


def _params(figure_class: Any, names: list[str]) -> Any:
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


def _mfu(figure_class: Any, names: list[str], tokens: float | None, gpus: list[str],
         dtype: str, attention: str) -> Any:
    import numpy as np

    from calc.presets import get_gpu
    from calc.reports.sweep import sweep

    usable = [g for g in gpus if dtype in get_gpu(g).peak_tflops]  # V100 has no bf16 peak
    if not usable:
        raise CalcError(f"plot mfu: none of {', '.join(gpus)} has a dense {dtype} peak")
    figure = figure_class(figsize=(6.5 * len(names), 5), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, len(names), squeeze=False)[0])
    mfus = np.linspace(0.1, 0.7, 61)
    for ax, name in zip(axes, names, strict=True):
        preset = load_model(name)
        run = preset.training
        count = tokens or (run.tokens if run else estimate(preset).params.chinchilla_tokens)
        result = sweep(preset, tokens=count, gpu=usable, mfu=mfus, attention=attention,
                       dtype=dtype)
        for gpu in usable:  # in the order asked for
            rows = result["gpu"] == get_gpu(gpu).name
            ax.plot(result["mfu"][rows] * 100, result["gpu_hours"][rows], label=gpu)
        if run and run.gpu_hours and run.tokens == count:
            ax.axhline(run.gpu_hours, color="black", linestyle="--", linewidth=1,
                       label=f"published: {run.gpu_hours:,.0f} h on {run.gpu}")
            implied = estimate(preset, tokens=count, gpu=run.gpu, dtype=dtype,
                               attention=attention).training.published
            if implied is not None and implied.implied_mfu is not None:
                ax.plot(100 * implied.implied_mfu, run.gpu_hours, "ko")
                ax.annotate(f" implied MFU {100 * implied.implied_mfu:.1f} %",
                            (100 * implied.implied_mfu, run.gpu_hours), va="bottom",
                            fontsize="small")
        where = "published run" if run and run.tokens == count else (
            "given" if tokens else f"{TOKENS_PER_PARAMETER} per parameter")
        ax.set(yscale="log", xlabel="MFU (%)", ylabel=f"GPU-hours ({dtype} dense peak)",
               title=f"{name}: {count:.3g} tokens ({where})")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    return figure


def _layout(figure_class: Any, names: list[str], gpus: list[str], count: int | None,
            dtype: str, options: dict[str, Any]) -> Any:
    from calc.counting import GIB
    from calc.reports.layout import searched

    if len(names) != 1 or len(gpus) != 1 or count is None:
        raise CalcError("plot layout: give one MODEL, one --gpu and --gpus (how many)")
    report, found = searched(names[0], gpu=gpus[0], gpus=count, dtype=dtype, **options)
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
