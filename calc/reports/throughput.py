"""Every published throughput measurement beside calc's prediction of it:
`calc.reproduce_throughput()`, `python -m calc reproduce --throughput`.

Each run's step time from its own figures (calc.calibration.throughput) against the step-time model
with the global constants (presets/timing.toml), the error on fitted and held-out runs reported
apart; then the layout search on the run's model, GPUs and batch against the authors' layout.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pydantic import Field

from calc.calibration.fit import fitted_on, get
from calc.calibration.throughput import RunModel, predicted_step, prepare
from calc.calibration.validate import P90, load_validation, percentile
from calc.document import Document
from calc.errors import CalcError
from calc.plan.search import SEARCHED, against_authors
from calc.presets import load_throughput_runs
from calc.spec.layout import Layout
from calc.spec.model import Frozen
from calc.timing.constants import load_constants

TARGET_MEDIAN, TARGET_P90 = 0.08, 0.20  # issue 18's targets, leave one source out


class ThroughputRow(Frozen):
    name: str
    publisher: str = Field(description="the independent source; held out as one")
    model: str
    gpu: str
    gpus: int
    layout: Layout
    figure: str = Field(description="the figure the source prints")
    published_step_s: float
    how: str = Field(description="how the published step time follows from the figure")
    predicted_step_s: float = Field(description="with the shipped constants, fitted on every "
                                                "publisher")
    ratio: float = Field(description="predicted / published step time")
    held_out_step_s: float = Field(description="with constants fitted without this run's "
                                               "publisher (leave one source out)")
    held_out_ratio: float = Field(description="held-out predicted / published step time")
    fitted: bool = Field(description="the fit may use the run (its pipeline schedule printed)")
    assumed: list[str] = Field(description="layout fields calc's data assumed, not printed")
    source: str
    searched_step_s: float | None = Field(description="the layout search's best, predicted")
    searched_layout: Layout | None
    search_verdict: str


class SourceSummary(Frozen):
    rows: int
    median: float = Field(description="median |held-out predicted/published − 1|")
    p90: float
    worst: float
    worst_run: str


class LeaveOneSourceOut(Frozen):
    rows: int
    sources: int
    median: float = Field(description="median over every run of |held-out predicted / "
                                      "published step time − 1|")
    p90: float = Field(description="90th percentile of the same")
    per_source: dict[str, SourceSummary]
    target_median: float = TARGET_MEDIAN
    target_p90: float = TARGET_P90


class Validation(Frozen):
    leave_one_source_out: LeaveOneSourceOut
    in_sample_median: float = Field(description="the same error with the shipped constants, "
                                                "fitted on every run: not a test of "
                                                "generalisation")
    in_sample_p90: float


class FittedConstant(Frozen):
    value: float
    bounds: tuple[float, float]
    prior: tuple[float, float]
    outside_prior: bool
    source: str


class ThroughputReport(Document):
    rows: list[ThroughputRow]
    validation: Validation
    fitted_constants: dict[str, FittedConstant]
    fit_method: str
    conventions: list[str]


def _figure(model: RunModel) -> str:
    run = model.run
    for value, label in ((run.step_time_s, "s/step"), (run.tokens_per_s_per_gpu, "tokens/s/GPU"),
                         (run.tokens_per_s, "tokens/s"),
                         (run.samples_per_s_per_gpu, "sequences/s/GPU"),
                         (run.tflops_per_gpu, "TFLOP/s/GPU")):
        if value is not None:
            return f"{value:,.4g} {label}"
    return f"MFU {run.mfu:.1%}"


def reproduce_throughput(search: bool = True,
                         publishers: Sequence[str] = ()) -> ThroughputReport:
    """Every run of presets/published/step/ (or `publishers`' runs) beside the step-time
    model, in sample (the shipped constants) and held out (constants fitted without its
    publisher), and, with `search`, the layout search's best layout for it (a few seconds a
    run). The validation summary is every publisher's, whichever rows are shown."""
    constants = load_constants()
    held_out = load_validation()
    runs = list(load_throughput_runs().values())
    known = sorted({run.publisher for run in runs})
    unknown = sorted(set(publishers) - set(known))
    if unknown:
        raise CalcError(f"publisher {', '.join(map(repr, unknown))}: expected one of "
                        f"{', '.join(known)}")
    rows = []
    for run in runs:
        if publishers and run.publisher not in publishers:
            continue
        model = prepare(run)
        predicted = predicted_step(model, constants)
        searched, best, verdict = against_authors(model, predicted) if search else (None, None, "")
        published = model.published.seconds
        rows.append(ThroughputRow(
            name=run.name, publisher=run.publisher, model=run.model, gpu=run.gpu,
            gpus=run.gpus, layout=model.layout, figure=_figure(model),
            published_step_s=published, how=model.published.how, predicted_step_s=predicted,
            ratio=predicted / published, held_out_step_s=held_out.predicted[run.name],
            held_out_ratio=held_out.predicted[run.name] / published,
            fitted=fitted_on(run), assumed=list(run.assumed), source=run.source,
            searched_step_s=searched, searched_layout=best, search_verdict=verdict))
    in_sample = [abs(row.ratio - 1) for row in rows]
    per_source = {name: SourceSummary(rows=e.rows, median=e.median, p90=e.p90, worst=e.worst,
                                      worst_run=e.worst_run)
                  for name, e in held_out.per_source.items()}
    validation = Validation(
        leave_one_source_out=LeaveOneSourceOut(rows=held_out.rows, sources=held_out.sources,
                                               median=held_out.median, p90=held_out.p90,
                                               per_source=per_source),
        in_sample_median=statistics.median(in_sample), in_sample_p90=percentile(in_sample, P90))
    return ThroughputReport(
        rows=rows, validation=validation,
        fitted_constants={p.path: FittedConstant(
            value=get(constants, p.path), bounds=p.bounds, prior=p.prior,
            outside_prior=p.outside_prior(get(constants, p.path)), source=p.source)
            for p in constants.fit.parameters},
        fit_method=constants.fit.method,
        conventions=[
            "Published step time: printed, or tokens per step ÷ tokens/s, or the source's own "
            "FLOPs per step ÷ (its TFLOP/s × GPUs) or ÷ (its MFU × dense peak × GPUs); the "
            "formula of each row is in `how` (calc.source_flops).",
            f"Predicted: `calc step` with the run's stated layout and the global constants of "
            f"presets/timing.toml, no per-run or per-source factor. Held out: the same model "
            f"with its constants fitted on every other publisher's runs (leave one source out; "
            f"python -m calc.calibration), the test of how it generalises; targets median "
            f"|predicted/published − 1| ≤ {TARGET_MEDIAN:.0%}, 90th percentile ≤ "
            f"{TARGET_P90:.0%}. The shipped constants: {constants.fit.method}; runs with an "
            f"unprinted pipeline schedule are predicted, never fitted on.",
            "Layouts of runs on stacks other than Megatron-LM, DeepSpeed, torchtitan or LLM "
            "Foundry (Meta's, JAX) are priced with Megatron-LM's constants. Dropout: on for the "
            "eager-attention runs (Megatron-LM's default 0.1), off for flash-attention runs.",
            f"Search: the fastest layout that fits calc.memory for the run's model, GPUs, "
            f"global batch, sequence, dtype and stack, priced by the same model. {SEARCHED}",
        ])
