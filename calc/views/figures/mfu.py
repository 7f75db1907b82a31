"""mfu: GPU-hours against MFU for several GPUs, with the published GPU-hours when known."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from calc.counting import TOKENS_PER_PARAMETER
from calc.errors import CalcError
from calc.presets import load_model
from calc.reports.estimate import estimate
from calc.views.figures import need_models

DEFAULT_GPUS = ("v100", "a100", "h100", "b200", "mi300x")


def draw(figure_class: Any, names: list[str], tokens: float | None = None,
         gpus: Sequence[str] = DEFAULT_GPUS, dtype: str = "bf16",
         attention: str = "causal") -> Any:
    need_models("mfu", names)
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
