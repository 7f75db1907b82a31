"""Fit the step-time model's global constants on published runs, and judge them on runs they
were not fitted on.

The constants the fit moves are data (presets/timing.toml [fit.parameters]): each with the
bounds the physics allows at all, the prior range its physical source gives (a kernel
benchmark, a datasheet) and that source. The loss is Σ w·log²(predicted / published step time)
over the fitted runs, each publisher's runs sharing one unit of weight (w = 1/runs of its
publisher), so that no single source's table steers the constants; it is minimised by
Levenberg-Marquardt on the log residuals, the Jacobian by forward differences, each step clipped
to the bounds: plain Python, deterministic.

A run with a pipeline whose schedule (micro-batch, virtual stages) its source does not print is
not fitted on: the bubble follows from those two, and an assumed schedule would bend the
constants toward the assumption. Every such run is still predicted and judged.

    python -m calc.calibration     # refit on every publisher, rewrite presets/timing.toml,
                                   # and rerun the leave-one-source-out validation
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from calc.calibration.throughput import RunModel, predicted_step, prepare
from calc.presets import load_throughput_runs
from calc.spec.throughput import PublishedThroughput
from calc.timing.constants import Parameter, TimingConstants, load_constants, parse

SCHEDULE_CRITICAL = ("micro_batch", "vpp")
MAX_ITERATIONS = 40
CONVERGED = 1e-9  # a step that lowers the loss less than this ends the fit
STEP = 1e-4  # forward-difference step, a fraction of each parameter's bounds
DAMPING = 1e-3  # Levenberg-Marquardt's starting λ
GIVE_UP = 2.0**40  # a damping past this moves no constant: the fit has converged


def fitted_constants(generation: str) -> list[str]:
    """The constants of a GPU generation the fit chooses (the rest are priors)."""
    prefix = f"generations.{generation}."
    return [p.path.removeprefix(prefix) for p in load_constants().fit.parameters
            if p.path.startswith(prefix)]


def fitted_on(run: PublishedThroughput) -> bool:
    """A run whose pipeline schedule its source prints (see the module doc)."""
    return not (run.pp > 1 and set(run.assumed) & set(SCHEDULE_CRITICAL))


def with_values(constants: TimingConstants, values: dict[str, float]) -> TimingConstants:
    """`constants` with the dotted paths of `values` set."""
    data = constants.model_dump()
    for path, value in values.items():
        node = data
        *parents, leaf = path.split(".")
        for part in parents:
            node = node[part]
        node[leaf] = value
    return parse(data)


def get(constants: TimingConstants, path: str) -> float:
    node: object = constants
    for part in path.split("."):
        node = node[part] if isinstance(node, dict) else getattr(node, part)
    return float(node)  # type: ignore[arg-type]


def weights(models: Sequence[RunModel]) -> list[float]:
    """Each publisher's runs share one unit of weight."""
    count: dict[str, int] = {}
    for m in models:
        count[m.run.publisher] = count.get(m.run.publisher, 0) + 1
    return [1 / count[m.run.publisher] for m in models]


def residuals(constants: TimingConstants, models: Sequence[RunModel]) -> list[float]:
    """log(predicted / published step time) of each run."""
    return [math.log(predicted_step(m, constants) / m.published.seconds) for m in models]


def loss(constants: TimingConstants, models: Sequence[RunModel]) -> float:
    return sum(w * r * r for w, r in zip(weights(models), residuals(constants, models),
                                         strict=True))


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """x with a·x = b, by Gaussian elimination with partial pivoting (a is small, positive
    definite: the damped normal equations)."""
    n = len(b)
    m = [[*row, value] for row, value in zip(a, b, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, n):
            factor = m[r][col] / m[col][col]
            for c in range(col, n + 1):
                m[r][c] -= factor * m[col][c]
    x = [0.0] * n
    for r in reversed(range(n)):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


@dataclass(frozen=True)
class Fit:
    constants: TimingConstants
    loss: float
    iterations: int


def fit(constants: TimingConstants, models: Sequence[RunModel],
        parameters: Sequence[Parameter] | None = None) -> Fit:
    """Levenberg-Marquardt over `parameters` (default the constants' own [fit.parameters]) on
    the weighted log residuals of `models`, each value kept within its bounds."""
    parameters = list(constants.fit.parameters if parameters is None else parameters)
    w = weights(models)
    root = [math.sqrt(x) for x in w]

    def at(x: Sequence[float]) -> TimingConstants:
        return with_values(constants, {p.path: v for p, v in zip(parameters, x, strict=True)})

    def scaled(c: TimingConstants) -> list[float]:
        return [s * r for s, r in zip(root, residuals(c, models), strict=True)]

    def clip(x: Sequence[float]) -> list[float]:
        return [min(max(v, p.bounds[0]), p.bounds[1]) for v, p in zip(x, parameters,
                                                                        strict=True)]

    x = clip([get(constants, p.path) for p in parameters])
    r = scaled(at(x))
    cost, damping, iterations = sum(v * v for v in r), DAMPING, 0
    while iterations < MAX_ITERATIONS:
        iterations += 1
        columns = []
        for i, p in enumerate(parameters):
            h = STEP * (p.bounds[1] - p.bounds[0])
            shifted = list(x)
            shifted[i] = x[i] + h if x[i] + h <= p.bounds[1] else x[i] - h
            step = shifted[i] - x[i]
            columns.append([(b - a) / step for a, b in zip(r, scaled(at(shifted)),
                                                           strict=True)])
        # a constant no fitted run depends on (its GPU generation held out) stays as it is
        moved = [i for i, column in enumerate(columns) if any(column)]
        jtj = [[sum(a * b for a, b in zip(columns[i], columns[j], strict=True)) for j in moved]
               for i in moved]
        gradient = [sum(a * b for a, b in zip(columns[i], r, strict=True)) for i in moved]
        improved = False
        while moved and damping < GIVE_UP:
            damped = [[v * (1 + damping) if i == j else v for j, v in enumerate(row)]
                      for i, row in enumerate(jtj)]
            delta = dict(zip(moved, _solve(damped, [-g for g in gradient]), strict=True))
            candidate = clip([v + delta.get(i, 0.0) for i, v in enumerate(x)])
            trial = scaled(at(candidate))
            trial_cost = sum(v * v for v in trial)
            if trial_cost < cost:
                improved = cost - trial_cost >= CONVERGED
                x, r, cost, damping = candidate, trial, trial_cost, damping / 3
                break
            damping *= 4
        if not improved:
            break
    return Fit(at(x), cost, iterations)


def fit_models(keep: Callable[[PublishedThroughput], bool] = lambda run: True
               ) -> list[RunModel]:
    """Every published run the fit may use (fitted_on), that `keep` keeps."""
    return [prepare(run) for run in load_throughput_runs().values()
            if fitted_on(run) and keep(run)]


def rewrite(text: str, constants: TimingConstants, method: str) -> str:
    """presets/timing.toml with the fitted values and the fit's method replaced in place."""
    for parameter in constants.fit.parameters:
        *section, key = parameter.path.split(".")
        header = re.escape("[" + ".".join(section) + "]")
        pattern = rf"({header}\n(?:[^\[].*\n)*?{key} = )[^\n]*"
        text, count = re.subn(pattern, rf"\g<1>{get(constants, parameter.path):.6g}", text)
        assert count == 1, parameter.path
    text, count = re.subn(r'(\[fit\]\n(?:[^\[].*\n)*?method = )"[^"\n]*"', rf'\1"{method}"',
                          text)
    assert count == 1, "[fit] method"
    return text
