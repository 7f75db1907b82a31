"""Compute-optimal sizing: `calc.optimal(flops=5.76e23)` or
`calc.optimal(gpu="h100", gpus=1024, days=30, mfu=0.4)`.

A budget becomes N parameters and D tokens two ways, each labelled: the 20-tokens-per-parameter
rule and Hoffmann et al. 2022's fitted loss (approach 3). A shape (layers, width) for each N comes
from the aspect ratio d/L of the dense preset nearest in size. Formulas: calc.formulas.scaling.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field, ValidationError

from calc import _compiled
from calc.counting import HOURS_PER_DAY, SECONDS_PER_HOUR, TERA, UNITS, mfu_note
from calc.document import Document
from calc.errors import CalcError, one_line
from calc.evaluate import count_params
from calc.presets import get_gpu, list_presets, load_preset
from calc.spec import ComputeBudget
from calc.spec.model import Frozen


class ScalingFit(Frozen):
    """A fitted loss L(N, D) = E + A/N^α + B/D^β with its source."""

    E: float = Field(description="irreducible loss")
    A: float
    B: float
    alpha: float
    beta: float
    source: str


# Hoffmann et al. 2022 §3.3 (approach 3) and App. D.2, Eq. 10: L̂ = 1.69 + 406.4/N^0.34 +
# 410.7/D^0.28.
CHINCHILLA = ScalingFit(
    E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28,
    source="Hoffmann et al. 2022 (arXiv:2203.15556) §3.3 approach 3, App. D.2 Eq. 10")

WIDTH_STEP = 64  # widths round to a multiple of 64 (whole heads of 64 or 128) once that large


class Shape(Frozen):
    layers: int
    d_model: int
    params: float = Field(description="12·L·d² of this shape (Kaplan et al. 2020 Eq. 2.1)")
    aspect_ratio: float = Field(description="d/L the shape was drawn at")
    aspect_from: str = Field(description="the preset whose d_model/n_layers it is")


class FittedOptimum(Frozen):
    params: float
    tokens: float
    tokens_per_parameter: float
    loss: float = Field(description="the fitted L(N, D) at this N and D")
    shape: Shape
    fit: ScalingFit


class BudgetSource(Frozen):
    gpu: str
    gpu_title: str
    gpus: int
    days: float
    mfu: float
    mfu_source: str = Field(description="'default' or 'flag'")
    dtype: str
    peak_flops: float = Field(description="dense peak FLOP/s of one GPU at dtype")


class OptimalBlock(Frozen):
    flops: float = Field(description="training compute C")
    budget: BudgetSource | None = Field(description="where C comes from; None when given")
    tokens_per_parameter: float
    params: float = Field(description="N at tokens_per_parameter, C = 6·N·D")
    tokens: float = Field(description="D = tokens_per_parameter × N")
    loss: float = Field(description="the fitted L(N, D) at this N and D")
    shape: Shape
    fitted: FittedOptimum = Field(description="N and D minimising the fitted L(N, D)")


class OptimalReport(Document):
    optimal: OptimalBlock
    conventions: list[str]


def _aspect_ratios() -> list[tuple[int, float, str]]:
    """(parameters, d/L, name) of every dense preset."""
    rows = []
    for name in list_presets():
        spec = load_preset(name).spec
        if spec.moe is None:
            rows.append((count_params(spec).total, spec.d_model / spec.n_layers, name))
    return rows


def _shape(params: float) -> Shape:
    """Layers and width for `params` at the aspect ratio of the dense preset nearest in size."""
    _size, ratio, name = min(_aspect_ratios(), key=lambda row: abs(math.log(row[0] / params)))
    layers = max(1, round(_compiled.scaling_layers({"N": params, "r": ratio})["layers"]))
    width = _compiled.scaling_width({"N": params, "L": layers})["width"]
    step = WIDTH_STEP if width >= WIDTH_STEP else 1
    d_model = max(1, step * round(width / step))
    check = _compiled.scaling_shape_params({"L": layers, "d": d_model})["params"]
    return Shape(layers=layers, d_model=d_model, params=check, aspect_ratio=ratio,
                 aspect_from=name)


def _fit_values(fit: ScalingFit) -> dict[str, float]:
    return {"E_irr": fit.E, "A_fit": fit.A, "B_fit": fit.B, "alpha": fit.alpha,
            "beta": fit.beta}


def optimal(flops: float | None = None, *, gpu: str | None = None, gpus: int = 1,
            days: float | None = None, mfu: float | None = None, dtype: str = "bf16",
            tokens_per_parameter: float | None = None) -> OptimalReport:
    """N and D for a training budget: `flops`, or `gpu` × `gpus` × `days` × `mfu` × peak."""
    given: dict[str, Any] = {"flops": flops, "gpu": gpu, "gpus": gpus, "days": days,
                             "dtype": dtype}
    if mfu is not None:
        given["mfu"] = mfu
    if tokens_per_parameter is not None:
        given["tokens_per_parameter"] = tokens_per_parameter
    try:
        budget = ComputeBudget(**given)
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    source = None
    compute = budget.flops
    if compute is None:
        assert budget.gpu is not None and budget.days is not None
        device = get_gpu(budget.gpu)
        peak = device.peak_flops(budget.dtype)
        compute = _compiled.scaling_budget(
            {"K": budget.gpus, "t_days": budget.days, "R": peak, "u": budget.mfu})["flops"]
        source = BudgetSource(gpu=device.name, gpu_title=device.title, gpus=budget.gpus,
                              days=budget.days, mfu=budget.mfu,
                              mfu_source="default" if mfu is None else "flag", dtype=budget.dtype,
                              peak_flops=peak)
    rho = budget.tokens_per_parameter
    rule = _compiled.scaling_rule({"C": compute, "rho": rho})
    if rule["params"] * (1 + 1e-12) < 1:  # the tolerance lets C = 6ρ (one parameter) pass
        raise CalcError(f"flops={compute:g} buys {rule['params']:.3g} parameters at {rho:g} "
                        f"tokens per parameter; give at least 6 × {rho:g} = {6 * rho:g} FLOPs")
    fit = CHINCHILLA
    best = _compiled.scaling_fit({"C": compute, **_fit_values(fit)})

    def loss(params: float, tokens: float) -> float:
        return _compiled.scaling_loss({"N": params, "D": tokens, **_fit_values(fit)})["loss"]

    block = OptimalBlock(
        flops=compute, budget=source, tokens_per_parameter=rho,
        params=rule["params"], tokens=rule["tokens"], loss=loss(rule["params"], rule["tokens"]),
        shape=_shape(rule["params"]),
        fitted=FittedOptimum(params=best["params"], tokens=best["tokens"],
                             tokens_per_parameter=best["tokens_per_parameter"],
                             loss=loss(best["params"], best["tokens"]),
                             shape=_shape(best["params"]), fit=fit),
    )
    return OptimalReport(optimal=block, conventions=conventions(block))


def conventions(block: OptimalBlock) -> list[str]:
    """The sentences printed under the tables."""
    fit = block.fitted.fit
    lines = [
        "Both routes spend C = 6·N·D (Kaplan et al. 2020 §2.1; Hoffmann et al. 2022 §3), "
        "N counting all parameters and D training tokens.",
        f"Rule of thumb: D = {block.tokens_per_parameter:g}·N (Hoffmann et al. 2022 Table 3: "
        f"70B → 1.4T), N = √(C / 6·{block.tokens_per_parameter:g}).",
        f"Fitted law: L(N, D) = {fit.E} + {fit.A}/N^{fit.alpha} + {fit.B}/D^{fit.beta} "
        f"({fit.source}), minimised under C = 6ND: N_opt = G·(C/6)^(β/(α+β)), "
        f"D_opt = (C/6)^(α/(α+β))/G, G = (αA/βB)^(1/(α+β)). Its loss is also shown at the "
        f"rule's N and D.",
        "Shape: L = (N / 12r²)^(1/3) at the aspect ratio r = d/L of the dense preset nearest in "
        "parameters, then d = √(N / 12L) rounded to a multiple of 64; 12·L·d² is the shape's "
        "non-embedding count (Kaplan et al. 2020 Eq. 2.1), embeddings not included.",
        UNITS,
    ]
    if block.budget is not None:
        b = block.budget
        lines.insert(0, f"Budget: C = {b.gpus:,} GPUs × {b.days:g} days × "
                        f"{SECONDS_PER_HOUR * HOURS_PER_DAY:,} s × dense "
                        f"{b.dtype} peak {b.peak_flops / TERA:g} TFLOP/s of one {b.gpu} × MFU "
                        f"{b.mfu:g} ({mfu_note(b.mfu_source)}); the inverse of calc's GPU-days.")
    return lines
