"""Published serving benchmarks (presets/published/serving/) beside the serving model: each
row's stated settings as a replica and a load, its printed figures as the quantities the model
predicts, and the fit of presets/serving.toml's [fitted] constants with its leave-one-publisher-
out validation.

What a row is compared on, decided from its settings before any prediction was looked at:
- throughput: generated tokens/s of the system (or per GPU, or per node, as printed), total
  tokens/s where only that is printed, a prefill node's prompt tokens/s, or a static batch's
  end-to-end latency read as its throughput (B·O / e2e, an identity). A run at an offered rate
  that kept up (its requests/s within 5 % of the rate) measured the rate, not the engine: its
  throughput is shown but neither fitted nor counted in the errors;
- tpot: TPOT as printed, else the inter-token latency (the mean, else the median); a median
  inter-token latency is compared with the model's median gap between tokens (a decode
  iteration unless most gaps hold a prefill), the others with its mean TPOT;
- ttft: time to first token (the mean, else the median). Fitted only for a static batch (a
  prefill pass, no queue): under load it is mostly queueing, which the model treats coarsely.
A row without the lengths its requests had (a dataset's mean not recorded in the row) cannot be
predicted and is listed as such.

The fit minimises Σ w_p · |log(predicted / published)| over the fitted figures, w_p = 1/√(figures
of the row's publisher), so the 242 TensorRT-LLM rows do not drown the other publishers. The
absolute (not squared) log error is the median's estimator, the statistic the targets name,
and keeps one group of rows the physics misses (a model the engines of the day ran far below
its kernels' roofline) from dragging every constant; coordinate descent over the constants,
each within its prior range (the range the measurement it stands for allows), starting from
the prior's geometric centre. Every fit starts there, each fold's included: a fold never
starts from values fitted on the publisher it holds out, and a constant no figure of the fold
depends on (an engine's overhead when its only publisher is held out) stays at its centre.
Leave-one-publisher-out: fit on every publisher but one, predict that one, each in turn.

    python -m calc.calibration.serving      # refit; rewrite presets/serving.toml's [fitted],
                                            # [fit] and the folds' constants
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from calc.counting import MILLISECOND
from calc.errors import CalcError
from calc.presets import (
    _data_dir,
    get_gpu,
    get_system,
    load_preset,
    load_serving_runs,
    system_for_gpu,
)
from calc.serving.constants import FILE, ServingConstants, load_serving_constants
from calc.serving.layouts import Replica
from calc.serving.schedule import Load, Served
from calc.serving.setup import DoesNotFit, Setup, serve, setup
from calc.spec.serving import PublishedServing

Metric = Literal["throughput", "tpot", "ttft"]
METRICS: tuple[Metric, ...] = ("throughput", "tpot", "ttft")
KEPT_UP = 0.95  # a rate run whose requests/s reach this share of the offered rate kept up

MAX_SWEEPS = 12
CONVERGED = 1e-5
GOLDEN = (math.sqrt(5) - 1) / 2
TOLERANCE = 2e-3  # of each bound's width


@dataclass(frozen=True)
class Figure:
    metric: Metric
    published: float  # tokens/s, or seconds
    label: str  # the printed field it comes from
    fitted: bool  # used by the fit and counted in the errors


@dataclass(frozen=True)
class RowModel:
    run: PublishedServing
    setup: Setup
    load: Load
    replicas: int
    figures: tuple[Figure, ...]


@dataclass(frozen=True)
class Skipped:
    run: PublishedServing
    reason: str


def _latency(latency) -> tuple[float, str] | None:
    if latency is None:
        return None
    for statistic in ("mean", "median"):
        value = getattr(latency, statistic)
        if value is not None:
            return value * MILLISECOND, statistic
    return None


def _load(run: PublishedServing) -> Load:
    replicas = run.dp
    requests = math.ceil(run.num_requests / replicas) if run.num_requests else None
    common = dict(input_len=run.input_len, output_len=run.output_len or 1,
                  synchronized=run.dataset is None, phase=run.phase, requests=requests)
    if run.phase != "both":
        return Load("offline", batch=run.batch, **common)  # type: ignore[arg-type]
    match run.load:
        case "static_batch":
            return Load("static", batch=run.batch, **common)  # type: ignore[arg-type]
        case "concurrency":
            return Load("closed", concurrency=math.ceil(run.concurrency / replicas),
                        **common)  # type: ignore[arg-type]
        case "request_rate" | "slo":
            return Load("rate", rate=run.request_rate / replicas, **common)  # type: ignore
        case "offline" | "production":
            return Load("offline", batch=run.batch, **common)  # type: ignore[arg-type]
        case other:
            raise ValueError(f"load {other!r} is not a published load")


def _figures(run: PublishedServing) -> tuple[Figure, ...]:
    figures = []
    kept_up = (run.load in ("request_rate", "slo") and run.requests_per_s is not None
               and run.request_rate is not None
               and run.requests_per_s >= KEPT_UP * run.request_rate)
    throughput = [(run.output_tokens_per_s, "output tokens/s"),
                  (run.output_tokens_per_s_per_gpu, "output tokens/s/GPU"),
                  (run.output_tokens_per_s_per_node, "output tokens/s/node"),
                  (run.total_tokens_per_s, "total tokens/s"),
                  (run.input_tokens_per_s_per_node, "input tokens/s/node")]
    for value, label in throughput:
        if value is not None:
            figures.append(Figure("throughput", value, label, not kept_up))
            break
    else:
        e2e = _latency(run.e2e_ms)
        if e2e and run.load == "static_batch" and run.batch and run.output_len:
            figures.append(Figure("throughput", run.batch * run.output_len / e2e[0],
                                  f"batch × output / e2e ({e2e[1]})", True))
    for latency, label in ((run.tpot_ms, "TPOT"), (run.itl_ms, "ITL")):
        found = _latency(latency)
        if found:
            figures.append(Figure("tpot", found[0], f"{label} ({found[1]})", True))
            break
    found = _latency(run.ttft_ms)
    if found:
        figures.append(Figure("ttft", found[0], f"TTFT ({found[1]})",
                              run.load == "static_batch"))
    return tuple(figures)


def prepare(run: PublishedServing, constants: ServingConstants) -> RowModel | Skipped:
    """The row as a replica and a load, or why it cannot be predicted."""
    if run.input_len is None or (run.phase == "both" and run.output_len is None):
        return Skipped(run, f"its requests' lengths are not in the row (dataset: "
                            f"{run.dataset}); the model needs a prompt and an output length")
    spec = load_preset(run.model).spec
    gpu = get_gpu(run.gpu)
    system = get_system(run.system) if run.system else (
        system_for_gpu(run.gpu) if gpu.system else None)
    replica = Replica(tp=run.tp, pp=run.pp, ep=run.ep,
                      redundant_experts=run.redundant_experts)
    chunked = True if "chunked-prefill" in run.features else None
    try:
        built = setup(spec, gpu, system, replica, run.dtype, run.compute_dtype, run.kv_dtype,
                      run.engine, constants, chunked=chunked,
                      max_sequences=run.batch if run.load == "offline" else None,
                      overlap_ep="two-batch-overlap" in run.features)
    except CalcError as error:
        return Skipped(run, str(error))
    return RowModel(run, built, _load(run), run.dp, _figures(run))


def predicted(model: RowModel, constants: ServingConstants) -> dict[Metric, float]:
    """The row's figures as the model predicts them, in the units and scope printed."""
    try:
        served = serve(model.setup, model.load, constants)
    except DoesNotFit:
        return {}
    out: dict[Metric, float] = {}
    for figure in model.figures:
        out[figure.metric] = _value(model, served, figure)
    return out


def _value(model: RowModel, served: Served, figure: Figure) -> float:
    run, replicas = model.run, model.replicas
    per_gpu = replicas / run.gpus
    match figure.metric, figure.label:
        case "tpot", "ITL (median)":  # the median gap; a mean (or a request's TPOT) spreads stalls
            return served.itl_median
        case "tpot", _:
            return served.tpot
        case "ttft", _:
            return served.ttft
        case "throughput", "output tokens/s":
            return served.output_tokens_per_s * replicas
        case "throughput", "output tokens/s/GPU":
            return served.output_tokens_per_s * per_gpu
        case "throughput", "output tokens/s/node":
            return served.output_tokens_per_s * per_gpu * (run.gpus_per_node or 1)
        case "throughput", "total tokens/s":
            return served.total_tokens_per_s * replicas
        case "throughput", "input tokens/s/node":
            prompts = served.requests_per_s * run.input_len  # type: ignore[operator]
            return prompts * per_gpu * (run.gpus_per_node or 1)
        case "throughput", _:  # a static batch's B·O / e2e
            return served.requests_per_s * run.output_len * replicas  # type: ignore[operator]
        case other:
            raise ValueError(f"figure {other!r} has no prediction")


def prepare_all(constants: ServingConstants | None = None,
                ) -> tuple[list[RowModel], list[Skipped]]:
    constants = constants or load_serving_constants()
    models, skipped = [], []
    for run in load_serving_runs().values():
        prepared = prepare(run, constants)
        (skipped if isinstance(prepared, Skipped) else models).append(prepared)
    return models, skipped


# ---- the fit ---------------------------------------------------------------------------------
def _weights(models: Sequence[RowModel]) -> dict[str, float]:
    counts: dict[str, int] = {}
    for m in models:
        counts[m.run.publisher] = counts.get(m.run.publisher, 0) + sum(
            f.fitted for f in m.figures)
    return {publisher: 1 / math.sqrt(n) for publisher, n in counts.items() if n}


MISSING = 5.0  # the log error charged for a fitted figure the model cannot predict


def loss(constants: ServingConstants, models: Sequence[RowModel]) -> float:
    weights = _weights(models)
    total = 0.0
    for m in models:
        values = predicted(m, constants)
        for figure in m.figures:
            if not figure.fitted:
                continue
            value = values.get(figure.metric)
            error = abs(math.log(value / figure.published)) if value and value > 0 \
                else MISSING
            total += weights[m.run.publisher] * error
    return total


def bounds(constants: ServingConstants, name: str) -> tuple[float, float]:
    """The fit's range for `name`: its prior, the range the measurement it stands for allows
    (issue 21: each constant inside the range its physical source allows)."""
    low, high, _ = constants.priors[name]
    return low, high


def centre(constants: ServingConstants, name: str) -> float:
    """Where the fit starts `name`: its prior's geometric centre, √(low·high) (the constants
    span decades, and the middle of a ratio range is its geometric mean)."""
    low, high, _ = constants.priors[name]
    return float(f"{math.sqrt(low * high):.4g}")


def start(constants: ServingConstants) -> ServingConstants:
    """Every fitted constant at its prior's centre: what every fit, each fold's included,
    starts from, so that no fold starts from values fitted on the publisher it holds out, and
    a constant no figure of the fold depends on (an engine whose only publisher is held out)
    stays at its prior's centre: coordinate descent keeps a value only if it lowers the loss."""
    return constants.with_values({name: centre(constants, name) for name in constants.fitted})


def _golden(f, low: float, high: float) -> float:
    a, b = low, high
    c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    while b - a > TOLERANCE * (high - low):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - GOLDEN * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + GOLDEN * (b - a)
            fd = f(d)
    return (a + b) / 2


def fit(constants: ServingConstants, models: Sequence[RowModel],
        names: Sequence[str] | None = None, echo: bool = False) -> ServingConstants:
    """Coordinate descent over `names` (default every fitted constant); a value is kept only if
    it lowers the loss."""
    names = list(names or constants.fitted)
    best = loss(constants, models)
    for sweep in range(MAX_SWEEPS):
        start = best
        for name in names:
            low, high = bounds(constants, name)
            value = _golden(lambda v, n=name, c=constants: loss(c.with_values({n: v}), models),
                            low, high)
            candidate = constants.with_values({name: float(f"{value:.4g}")})
            trial = loss(candidate, models)
            if trial < best:
                constants, best = candidate, trial
        if echo:
            print(f"sweep {sweep + 1}: loss {best:.4f}", file=sys.stderr)
        if start - best < CONVERGED:
            break
    return constants


def publishers(models: Sequence[RowModel]) -> list[str]:
    return sorted({m.run.publisher for m in models if any(f.fitted for f in m.figures)})


def _rewrite(text: str, fitted: dict[str, float], rows: Sequence[str], method: str,
             folds: dict[str, dict[str, float]]) -> str:
    """presets/serving.toml with the fitted values, the fit record and the folds replaced."""
    for name, value in fitted.items():
        key = f'"{name}"' if "." in name else name
        pattern = rf"(?m)^({re.escape(key)} = )[^\n]*$"
        head, tail = text.split("\n[priors]\n", 1)
        head, count = re.subn(pattern, rf"\g<1>{value:g}", head)
        assert count == 1, name
        text = head + "\n[priors]\n" + tail
    listed = ",\n".join(f'  "{row}"' for row in rows)
    record = f'[fit]\nmethod = "{method}"\nrows = [\n{listed},\n]\n'
    for publisher, values in folds.items():
        record += f'\n[fit.loso."{publisher}"]\n' + "".join(
            f'"{name}" = {value:g}\n' for name, value in values.items())
    return text[:text.index("\n[fit]\n") + 1] + record


def main(argv: Sequence[str] | None = None) -> int:
    constants = load_serving_constants()
    models, skipped = prepare_all(constants)
    fitted_rows = [m for m in models if any(f.fitted for f in m.figures)]
    initial = start(constants)
    folds: dict[str, dict[str, float]] = {}
    for publisher in publishers(models):
        print(f"leaving out {publisher}", file=sys.stderr)
        others = [m for m in fitted_rows if m.run.publisher != publisher]
        folds[publisher] = fit(initial, others, echo=True).fitted
    print("all publishers", file=sys.stderr)
    final = fit(initial, fitted_rows, echo=True)
    method = (f"least absolute log(predicted/published) over the fitted figures of "
              f"{len(fitted_rows)} rows, each publisher weighted 1/sqrt(its figures); "
              f"coordinate descent over {len(final.fitted)} constants, each within its prior "
              f"range from the prior's geometric centre (calc.calibration.serving); one fold "
              f"per publisher left out, fitted from the same start")
    path = Path(_data_dir()) / FILE
    path.write_text(_rewrite(path.read_text(encoding="utf-8"), final.fitted,
                             [m.run.name for m in fitted_rows], method, folds),
                    encoding="utf-8")
    for name, value in final.fitted.items():
        print(f"{name} = {value:g}")
    print(f"loss {loss(final, fitted_rows):.4f}; {len(skipped)} rows not predictable",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
