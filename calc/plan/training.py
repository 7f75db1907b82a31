"""Training a model on a token budget, as numbers: GPU-hours and days at an MFU (given, or the
one the step-time model predicts for a layout), their cost and energy, and the published run
beside them (a ratio and an implied MFU only when the estimate is that run)."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field

from calc import counting
from calc.errors import CalcError
from calc.evaluate import effective_peak, training_cost
from calc.plan.cost import cost
from calc.plan.options import RunConfig
from calc.presets import Preset, PublishedRun, get_gpu
from calc.spec import Workload
from calc.spec.costing import Costing
from calc.spec.gemm_precision import gemm_peaks
from calc.spec.layout import Layout
from calc.spec.model import Frozen

MFUSource = str  # "default", "flag", or a measurement's description
SEARCH_SETTINGS = ("global_batch", "framework", "dropout")  # what a layout search is told


class PublishedComparison(Frozen):
    gpu_hours: float | None
    flops: float | None
    mfu: float | None
    tokens: float
    gpu: str | None
    gpus: int | None
    scope: str
    source: str
    same_run: bool = Field(
        True, description="the estimate is of the published run: its tokens, GPU, training "
                          "context and causal attention; ratio and implied MFU only then")
    differs: list[str] = Field(default_factory=list,
                               description="what the estimate changes from the published run")
    ratio: float | None = Field(description="calc's GPU-hours / the published GPU-hours")
    implied_mfu: float | None = Field(
        description="the MFU at which calc's exact FLOPs take the published GPU-hours")
    implied_mfu_6nd: float | None = Field(
        None, description="the MFU at which 6·N·D takes the published GPU-hours")


class PredictedTraining(Frozen):
    """GPU-hours at the MFU the step-time model predicts for a layout (calc.step)."""

    layout: Layout = Field(description="the layout priced: given by flags, or the searched best")
    searched: bool = Field(description="the layout search's best rather than a given layout")
    step_time_s: float
    tokens_per_s_per_gpu: float
    mfu: float = Field(description="predicted MFU (calc's exact FLOPs)")
    gpu_hours: float = Field(description="tokens / (predicted tokens/s per GPU) / 3600")
    days: float
    fits: bool = Field(description="the layout fits in memory (calc.memory)")


class TrainingReport(Frozen):
    tokens: float
    flops: float = Field(description="training FLOPs: tokens × train FLOPs per token")
    flops_6nd: float = Field(description="6·N·D, N = active parameters")
    gpu: str | None
    gpu_title: str | None = None
    dtype: str
    peak_flops: float | None = Field(description="dense peak FLOP/s of one GPU at dtype "
                                                  "(with fp8/fp4 GEMMs: the effective peak)")
    precision: str = Field("bf16", description="GEMM precision recipe (calc.spec.gemm_precision)")
    low_precision_share: float | None = Field(
        None, description="share of the training FLOPs in the FP8/FP4 GEMMs")
    low_precision_peak: float | None = Field(None, description="their dense peak, FLOP/s")
    mfu: float
    mfu_source: MFUSource
    gpus: int
    gpu_hours: float | None
    gpu_hours_6nd: float | None
    days: float | None = Field(description="wall-clock days on `gpus` GPUs")
    price: float | None = Field(None, description="price of one GPU-hour (given; no defaults)")
    cost: float | None = Field(None, description="GPU-hours × price, in the price's currency")
    pue: float | None = Field(None, description="power usage effectiveness the energy assumes")
    pue_source: str | None = None
    energy_kwh: float | None = Field(None, description="GPU-hours × TDP × PUE, kWh")
    grid_intensity: float | None = Field(None, description="grid carbon intensity, g CO2e/kWh")
    co2e_kg: float | None = Field(None, description="energy × grid intensity, kg CO2e")
    published: PublishedComparison | None = None
    predicted: PredictedTraining | None = Field(
        None, description="the same tokens at the MFU calc step predicts for a layout")


def implied_mfu(flops: float, gpu_hours: float, peak_flops: float) -> float:
    """The MFU at which `flops` take `gpu_hours` on GPUs of dense peak `peak_flops` FLOP/s:
    GPU-hours = FLOPs / (peak × MFU) / 3600 (calc.formulas.training) solved for MFU."""
    return flops / (gpu_hours * counting.SECONDS_PER_HOUR * peak_flops)


def published(run: PublishedRun | None, gpu: str | None, tokens: float, flops: float,
              flops_6nd: float, gpu_hours: float | None, peak: float | None,
              seq_len: int, context: int, attention: str) -> PublishedComparison | None:
    """The published run beside the estimate; a ratio and an implied MFU only when the
    estimate is that run: its tokens and GPU, at the model's training context (the published
    run's), attention counted causally."""
    if run is None:
        return None
    differs = [what for what, same in (
        ("tokens", tokens == run.tokens), ("GPU", gpu is not None and gpu == run.gpu),
        ("sequence length", seq_len == context), ("attention", attention == "causal"))
        if not same]
    same = not differs
    ratio = gpu_hours / run.gpu_hours if same and gpu_hours and run.gpu_hours else None
    priced = same and run.gpu_hours and peak
    return PublishedComparison.unchecked(
        gpu_hours=run.gpu_hours, flops=run.flops, mfu=run.mfu, tokens=run.tokens, gpu=run.gpu,
        gpus=run.gpus, scope=run.scope, source=run.source, same_run=same, differs=differs,
        ratio=ratio,
        implied_mfu=implied_mfu(flops, run.gpu_hours, peak) if priced else None,
        implied_mfu_6nd=implied_mfu(flops_6nd, run.gpu_hours, peak) if priced else None)


class PerToken(Protocol):
    """The FLOPs per token a training run is priced from (the main report's FlopsReport)."""

    seq_len: int
    attention: str
    train: int | float
    six_n: int


def training_block(preset: Preset, workload: Workload, flops: PerToken,
                   mfu_source: MFUSource, precision: str = "bf16", low_precision: float = 0,
                   asked: Costing | None = None) -> TrainingReport:
    """`workload.tokens` trained at `flops` per token: FLOPs, GPU-hours and days at the
    workload's MFU (at the effective peak with fp8/fp4 GEMMs: `low_precision` of the FLOPs at
    `precision`), the cost `asked`, and the preset's published run beside them."""
    assert workload.tokens is not None
    gpu = get_gpu(workload.gpu) if workload.gpu else None
    peak = gpu.peak_flops(workload.dtype) if gpu else None
    low_peak = None
    if gpu is not None and precision != "bf16":  # calc.formulas.precision
        low_peak, base = gemm_peaks(gpu, precision, workload.dtype)
        peak = effective_peak(flops.train, low_precision, base, low_peak)
    exact = training_cost(flops.train, workload.tokens, peak, workload.mfu, workload.gpus)
    rule = training_cost(flops.six_n, workload.tokens, peak, workload.mfu, workload.gpus)
    money = cost(asked, gpu, exact.gpu_hours) if asked and gpu and exact.gpu_hours else None
    return TrainingReport.unchecked(
        **(vars(money) if money else {}), precision=precision, low_precision_peak=low_peak,
        low_precision_share=low_precision / flops.train if low_peak else None,
        tokens=workload.tokens, flops=exact.flops, flops_6nd=rule.flops,
        gpu=gpu.name if gpu else None, gpu_title=gpu.title if gpu else None,
        dtype=workload.dtype, peak_flops=peak, mfu=workload.mfu, mfu_source=mfu_source,
        gpus=workload.gpus, gpu_hours=exact.gpu_hours, gpu_hours_6nd=rule.gpu_hours,
        days=exact.days,
        published=published(preset.training, gpu.name if gpu else None, workload.tokens,
                          exact.flops, rule.flops, exact.gpu_hours, peak, flops.seq_len,
                          preset.spec.context_length, flops.attention),
    )


def predicted_training(preset: Preset, *, tokens: float, gpu: str, gpus: int, seq_len: int,
                       dtype: str, system: str | None, parallel: dict[str, Any],
                       search_layout: bool) -> PredictedTraining:
    """`tokens` at the step time calc.plan.step predicts: for the given layout fields
    (`parallel`), or for the layout search's best on `gpus` GPUs (global batch: parallel's
    `global_batch`, default one sequence per GPU)."""
    from calc.plan.search import search_layouts  # the timing model: only when asked
    from calc.plan.step import step_numbers
    from calc.spec.layout import make_layout

    fields = dict(parallel)
    fields.setdefault("dtype", dtype)
    fields["seq_len"] = seq_len
    if search_layout:
        batch = int(fields.pop("global_batch", gpus))
        fixed = {k: fields[k] for k in ("dtype", *SEARCH_SETTINGS[1:]) if k in fields}
        _, found = search_layouts(preset.spec, gpu=gpu, gpus=gpus, global_batch=batch,
                                  seq_len=seq_len, system=system, price_rejected=False,
                                  **fixed)
        if not found.ranked:
            raise CalcError(f"no layout of {preset.name} on {gpus:,} × {gpu} with global batch "
                            f"{batch} fits in memory (calc layout shows the closest)")
        fields = found.ranked[0].layout.model_dump()
    step = step_numbers(preset.spec, make_layout(gpus, **fields), gpu, system, RunConfig())
    per_gpu = step.tokens_per_s_per_gpu
    gpu_hours = tokens / per_gpu / counting.SECONDS_PER_HOUR
    return PredictedTraining(layout=step.layout, searched=search_layout,
                             step_time_s=step.time.step, tokens_per_s_per_gpu=per_gpu,
                             mfu=step.mfu, gpu_hours=gpu_hours,
                             days=gpu_hours / gpus / counting.HOURS_PER_DAY, fits=step.fits)
