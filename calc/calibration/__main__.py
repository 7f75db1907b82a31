"""`python -m calc.calibration`: refit the step-time model's constants on every publisher's
runs, rewrite presets/timing.toml's fitted values, and rerun the leave-one-source-out validation
(presets/validation/step.toml). A minute or two: each publisher held out is a fit of its own."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from calc.calibration.fit import fit, fit_models, get, rewrite
from calc.calibration.validate import leave_one_source_out, write_validation
from calc.presets import _data_dir
from calc.timing.constants import FILE, load_constants


def main(argv: Sequence[str] | None = None) -> int:
    constants = load_constants()
    models = fit_models()
    result = fit(constants, models)
    publishers = len({m.run.publisher for m in models})
    method = (f"Levenberg-Marquardt on log(predicted/published step time), each publisher's "
              f"runs weighted 1/its runs, over {len(models)} runs from {publishers} "
              f"publishers, {len(constants.fit.parameters)} constants "
              f"(presets/timing.toml [fit.parameters])")
    path = Path(_data_dir()) / FILE
    path.write_text(rewrite(path.read_text(encoding="utf-8"), result.constants, method),
                    encoding="utf-8")
    for parameter in constants.fit.parameters:
        print(f"{parameter.path} = {get(result.constants, parameter.path):.6g}")
    print(f"loss {result.loss:.4f} over {len(models)} runs after {result.iterations} "
          f"iterations", file=sys.stderr)
    load_constants.cache_clear()
    validation = leave_one_source_out(load_constants())
    write_validation(validation)
    print(f"leave-one-source-out: median {validation.median:.1%}, p90 {validation.p90:.1%} "
          f"over {validation.rows} runs from {validation.sources} publishers", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
