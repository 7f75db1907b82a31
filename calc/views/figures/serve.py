"""serve: output tokens/s per GPU against TPOT (or TTFT) as concurrency grows, one curve per
tensor-parallel layout of the GPUs, the latency target drawn (calc.infer's serving block)."""

from __future__ import annotations

from typing import Any

from calc.errors import CalcError
from calc.views.figures import need_models

CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)  # a replica's clients
TENSOR_PARALLEL = (1, 2, 4, 8, 16)


def draw(figure_class: Any, names: list[str], gpu: str | None = None, gpus: int | None = None,
         input_len: int = 1000, output_len: int = 200, latency: str = "tpot",
         dtype: str = "bf16", **options: Any) -> Any:
    need_models("serve", names)
    from calc.reports.infer import infer

    gpu, gpus = gpu or "h100", gpus or 8
    if latency not in ("tpot", "ttft"):
        raise CalcError(f"latency={latency!r} is not allowed; expected tpot or ttft")
    figure = figure_class(figsize=(8, 5.5), layout="constrained")
    ax = figure.subplots()
    drawn = 0
    for name in names:
        for tp in (t for t in TENSOR_PARALLEL if gpus % t == 0):
            points = []
            for clients in CONCURRENCY:
                try:
                    s = infer(name, gpu=gpu, gpus=gpus, tp=tp, dtype=dtype,
                              input_len=input_len, output_len=output_len,
                              concurrency=clients * gpus // tp, **options).serving
                except CalcError:  # a layout the engines refuse, or that does not fit
                    break
                assert s is not None
                points.append((getattr(s, f"{latency}_s") * 1e3, s.output_tokens_per_s_per_gpu))
            if not points:
                continue
            drawn += 1
            x, y = zip(*points, strict=True)
            label = f"{gpus // tp} × tp{tp}"
            ax.plot(x, y, "o-", label=f"{name} {label}" if len(names) > 1 else label,
                    markersize=3)
    if not drawn:
        raise CalcError(f"plot serve: no tensor-parallel layout of {gpus} × {gpu} serves "
                        f"{', '.join(names)}")
    target = options.get(f"{latency}_ms")
    if target:
        ax.axvline(target, color="black", linestyle="--", linewidth=1,
                   label=f"{latency.upper()} target {target:g} ms")
    ax.set(xscale="log", xlabel=f"{latency.upper()} (ms, mean)",
           ylabel="output tokens/s per GPU",
           title=f"{', '.join(names)} on {gpus} × {gpu}: {input_len} in, {output_len} out; "
                 f"concurrency {CONCURRENCY[0]}–{CONCURRENCY[-1]} a replica")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return figure
