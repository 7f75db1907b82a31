"""Fit the step-time model's global constants on the published runs marked `fit = true`.

The loss is Σ log²(predicted / published step time) over the fitted runs, minimised one
constant at a time (golden-section search in its bounds, sweeps over all of them until one
no longer helps): plain
Python, deterministic, a few seconds. A `fit = true` run with a pipeline whose schedule (micro-
batch, virtual stages) its source does not print is not fitted on: the bubble follows from those
two, and an assumed schedule would bend the constants toward the assumption (Llama 3's Table 4
with one virtual stage assumed would need H100 products at 94 % of peak). Every other run is held
out, and calc.calibration.throughput reports the two errors apart.

    python -m calc.calibration.fit          # refit and rewrite presets/timing.toml's fitted values
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from calc.calibration.throughput import RunModel, predicted_step, prepare
from calc.presets import _data_dir, load_throughput_runs
from calc.spec.throughput import PublishedThroughput
from calc.timing.constants import FILE, TimingConstants, load_constants, parse

# The constants the fit moves, with their bounds; everything else in presets/timing.toml is a
# prior with its own source (Hopper's 16-bit fraction too: no fitted run is a 16-bit Hopper run
# whose schedule is printed).
PARAMETERS: dict[str, tuple[float, float]] = {
    "generations.ampere.peak_fraction": (0.4, 1.0),
    "generations.hopper.fp8_fraction": (0.2, 1.0),
    "generations.hopper.flash_fraction": (0.1, 1.0),
    "generations.blackwell.fp8_fraction": (0.2, 1.0),
    "generations.blackwell.flash_fraction": (0.1, 1.0),
    "gemm.half_dim": (0.0, 1024.0),
}
SCHEDULE_CRITICAL = ("micro_batch", "vpp")
MAX_SWEEPS = 30
CONVERGED = 1e-7  # a sweep that lowers the loss less than this ends the fit
GOLDEN = (math.sqrt(5) - 1) / 2
TOLERANCE = 1e-3  # of each bound's width


def fitted_constants(generation: str) -> list[str]:
    """The constants of a GPU generation the fit chooses (the rest are priors)."""
    prefix = f"generations.{generation}."
    return [path.removeprefix(prefix) for path in PARAMETERS if path.startswith(prefix)]


def fitted_on(run: PublishedThroughput) -> bool:
    """A `fit = true` run whose pipeline schedule its source prints (see the module doc)."""
    return run.fit and not (run.pp > 1 and set(run.assumed) & set(SCHEDULE_CRITICAL))


def _with(constants: TimingConstants, path: str, value: float) -> TimingConstants:
    data = constants.model_dump()
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


def loss(constants: TimingConstants, models: Sequence[RunModel]) -> float:
    return sum(math.log(predicted_step(m, constants) / m.published.seconds) ** 2
               for m in models)


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


def fit(constants: TimingConstants, models: Sequence[RunModel]) -> TimingConstants:
    """Coordinate descent over PARAMETERS; each step keeps a value only if it lowers the loss."""
    best = loss(constants, models)
    for _ in range(MAX_SWEEPS):
        start = best
        for path, (low, high) in PARAMETERS.items():
            value = _golden(lambda v, p=path, c=constants: loss(_with(c, p, v), models),
                            low, high)
            candidate = _with(constants, path, round(value, 4))
            trial = loss(candidate, models)
            if trial < best:
                constants, best = candidate, trial
        if start - best < CONVERGED:
            break
    return constants


def fit_models() -> list[RunModel]:
    return [prepare(run) for run in load_throughput_runs().values() if fitted_on(run)]


def _rewrite(text: str, constants: TimingConstants, rows: Sequence[str], method: str) -> str:
    """presets/timing.toml with the fitted values and the fit record replaced in place."""
    for path in PARAMETERS:
        *section, key = path.split(".")
        header = re.escape("[" + ".".join(section) + "]")
        pattern = rf"({header}\n(?:[^\[].*\n)*?{key} = )[^\n]*"
        text, count = re.subn(pattern, rf"\g<1>{get(constants, path):g}", text)
        assert count == 1, path
    listed = ",\n".join(f'  "{row}"' for row in rows)
    record = f'[fit]\nrows = [\n{listed},\n]\nmethod = "{method}"\n'
    return text[:text.index("\n[fit]\n") + 1] + record


def main(argv: Sequence[str] | None = None) -> int:
    models = fit_models()
    constants = fit(load_constants(), models)
    method = (f"least squares of log(predicted/published step time) over {len(models)} runs, "
              f"coordinate descent over {len(PARAMETERS)} constants "
              f"(calc.calibration.fit.PARAMETERS)")
    path = Path(_data_dir()) / FILE
    rows = [m.run.name for m in models]
    path.write_text(_rewrite(path.read_text(encoding="utf-8"), constants, rows, method),
                    encoding="utf-8")
    for name in PARAMETERS:
        print(f"{name} = {get(constants, name):g}")
    print(f"loss {loss(constants, models):.4f} over {len(models)} runs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
