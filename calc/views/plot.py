"""Plots (the optional `plot` extra: pip install -e ".[plot]"); matplotlib is imported here only.

    calc.plot("context", ["llama2-7b", "mistral-7b"], "context.png")
    python -m calc plot context llama2-7b mistral-7b -o context.png

Kinds:
- context: forward FLOPs per token against context length T, with the attention share.
- params: where the parameters sit, by component prefix (attention, mlp, moe, embedding, ...).
- mfu: GPU-hours against MFU for several GPUs, with the published GPU-hours when known.
- serve: output tokens/s per GPU against TPOT (or TTFT) as concurrency grows, one curve per
  tensor-parallel layout of the GPUs, the latency targets drawn (calc.infer's serving block).

Each returns a matplotlib Figure (shown inline by Jupyter) and saves it when given a path.
The numbers come from calc.sweep and calc.estimate, the same as every table.
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

KINDS = ("context", "params", "mfu", "serve")
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
         **serving: Any) -> Any:
    """A Figure of `kind` (KINDS) for `models`; saved when `path` is given, in the format its
    suffix names (SUFFIXES; none: .png), never over an existing file unless `force`. `serve`
    takes calc.infer's serving options (gpus_count, input_len, output_len, engine, ttft_ms,
    tpot_ms, latency: "tpot" or "ttft") on the first of `gpus`."""
    if kind not in KINDS:
        raise CalcError(f"plot kind {kind!r}: expected one of {', '.join(KINDS)}")
    if path is not None:  # checked before the work
        path = output_path(path, "plot path", force=force, suffixes=SUFFIXES, flag="force=True")
    names = [models] if isinstance(models, str) else list(models)
    if not names:
        raise CalcError("plot: give at least one model")
    figure_class = _matplotlib()
    if kind == "context":
        figure = _context(figure_class, names, attention)
    elif kind == "params":
        figure = _params(figure_class, names)
    elif kind == "serve":
        figure = _serve(figure_class, names, gpus[0], dtype, **serving)
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


CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def _serve(figure_class: Any, names: list[str], gpu: str, dtype: str, *, gpus_count: int = 8,
           input_len: int = 1000, output_len: int = 200, latency: str = "tpot",
           **options: Any) -> Any:
    from calc.reports.infer import infer

    if latency not in ("tpot", "ttft"):
        raise CalcError(f"latency={latency!r} is not allowed; expected tpot or ttft")
    figure = figure_class(figsize=(8, 5.5), layout="constrained")
    ax = figure.subplots()
    drawn = 0
    for name in names:
        for tp in (t for t in (1, 2, 4, 8, 16) if gpus_count % t == 0):
            points = []
            for clients in CONCURRENCY:
                try:
                    s = infer(name, gpu=gpu, gpus=gpus_count, tp=tp, dtype=dtype,
                              input_len=input_len, output_len=output_len,
                              concurrency=clients * gpus_count // tp, **options).serving
                except CalcError:  # a layout the engines refuse, or that does not fit
                    break
                assert s is not None
                points.append((getattr(s, f"{latency}_s") * 1e3,
                               s.output_tokens_per_s_per_gpu, s.batch))
            if not points:
                continue
            drawn += 1
            x, y, _ = zip(*points, strict=True)
            label = f"{name} {gpus_count // tp} × tp{tp}" if len(names) > 1 \
                else f"{gpus_count // tp} × tp{tp}"
            ax.plot(x, y, "o-", label=label, markersize=3)
    if not drawn:
        raise CalcError(f"plot serve: no tensor-parallel layout of {gpus_count} × {gpu} serves "
                        f"{', '.join(names)}")
    target = options.get(f"{latency}_ms")
    if target:
        ax.axvline(target, color="black", linestyle="--", linewidth=1,
                   label=f"{latency.upper()} target {target:g} ms")
    ax.set(xscale="log", xlabel=f"{latency.upper()} (ms, mean)",
           ylabel="output tokens/s per GPU",
           title=f"{', '.join(names)} on {gpus_count} × {gpu}: {input_len} in, {output_len} "
                 f"out; concurrency {CONCURRENCY[0]}–{CONCURRENCY[-1]} a replica")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return figure
