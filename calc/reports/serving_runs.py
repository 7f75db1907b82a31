"""Every published serving benchmark beside calc's serving model: `calc.reproduce_serving()`,
`python -m calc reproduce --serving`.

Each row's figures (calc.calibration.serving decides, from its settings, which are compared)
against the model with presets/serving.toml's fitted constants, and against the constants fitted
without the row's publisher (leave-one-publisher-out, the validation); errors summarised by
metric over the held-out predictions.
"""

from __future__ import annotations

import statistics

from pydantic import Field

from calc.calibration.serving import Metric, RowModel, predicted, prepare_all
from calc.document import Document
from calc.serving.constants import ServingConstants, load_serving_constants
from calc.spec.model import Frozen

TARGET_MEDIAN, TARGET_P90 = 0.15, 0.35  # issue 21's targets, on the held-out throughput
P90 = 0.9


class ServingRow(Frozen):
    name: str
    publisher: str
    model: str
    gpu: str
    gpus: int
    engine: str
    dtype: str
    layout: str = Field(description="tp·pp·ep of a replica, × replicas")
    load: str = Field(description="the row's load: static batch, concurrency, rate, offline")
    input_len: int | None
    output_len: int | None
    metric: Metric
    figure: str = Field(description="the printed field compared")
    published: float = Field(description="tokens/s as printed, or seconds")
    predicted: float | None = Field(description="with the constants fitted on every publisher")
    held_out: float | None = Field(description="with the constants fitted without this row's "
                                               "publisher (leave-one-publisher-out)")
    fitted: bool = Field(description="counted in the fit and the errors (a rate run that kept "
                                     "up, or a TTFT under load, is shown only)")


class MetricError(Frozen):
    metric: Metric
    scope: str = Field(description="all publishers, or one")
    figures: int
    median: float = Field(description="median |held_out/published − 1|")
    p90: float
    median_in_sample: float = Field(description="the same with every publisher fitted")


class Unpredicted(Frozen):
    name: str
    reason: str


class ServingReproduceReport(Document):
    rows: list[ServingRow]
    errors: list[MetricError]
    unpredicted: list[Unpredicted]
    constants: dict[str, float] = Field(description="presets/serving.toml's fitted constants")
    priors: dict[str, tuple[float, float]] = Field(
        description="each constant's prior range, from the measurement it stands for")
    method: str


def _layout(m: RowModel) -> str:
    r = m.run
    text = f"tp{r.tp}" + (f"·pp{r.pp}" if r.pp > 1 else "") + (f"·ep{r.ep}" if r.ep > 1 else "")
    return f"{r.dp} × {text}" if r.dp > 1 else text


def _folds(constants: ServingConstants) -> dict[str, ServingConstants]:
    loso = constants.fit.get("loso", {})
    assert isinstance(loso, dict)
    return {publisher: constants.with_values(values) for publisher, values in loso.items()}


def _error(ratio: list[float]) -> tuple[float, float]:
    errors = sorted(abs(r - 1) for r in ratio)
    return statistics.median(errors), errors[min(len(errors) - 1, int(P90 * len(errors)))]


def _summaries(rows: list[ServingRow]) -> list[MetricError]:
    out = []
    for metric in ("throughput", "tpot", "ttft"):
        chosen = [r for r in rows if r.metric == metric and r.fitted and r.held_out
                  and r.predicted]
        scopes = [("all", chosen)] + [(p, [r for r in chosen if r.publisher == p])
                                      for p in sorted({r.publisher for r in chosen})]
        for scope, subset in scopes:
            if not subset:
                continue
            median, p90 = _error([r.held_out / r.published for r in subset])  # type: ignore
            inside, _ = _error([r.predicted / r.published for r in subset])  # type: ignore
            out.append(MetricError(metric=metric, scope=scope, figures=len(subset),
                                   median=median, p90=p90, median_in_sample=inside))
    return out


def reproduce_serving() -> ServingReproduceReport:
    constants = load_serving_constants()
    folds = _folds(constants)
    models, skipped = prepare_all(constants)
    rows = []
    for m in models:
        values = predicted(m, constants)
        fold = folds.get(m.run.publisher)
        held = predicted(m, fold) if fold is not None else {}
        r = m.run
        for figure in m.figures:
            rows.append(ServingRow(
                name=r.name, publisher=r.publisher, model=r.model, gpu=r.gpu, gpus=r.gpus,
                engine=r.engine, dtype=r.dtype, layout=_layout(m), load=r.load,
                input_len=r.input_len, output_len=r.output_len, metric=figure.metric,
                figure=figure.label, published=figure.published,
                predicted=values.get(figure.metric), held_out=held.get(figure.metric),
                fitted=figure.fitted))
    return ServingReproduceReport(
        rows=rows, errors=_summaries(rows),
        unpredicted=[Unpredicted(name=s.run.name, reason=s.reason) for s in skipped],
        constants=constants.fitted,
        priors={name: (low, high) for name, (low, high, _) in constants.priors.items()},
        method=str(constants.fit.get("method", "")))
