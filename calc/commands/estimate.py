"""The main report: `python -m calc [estimate] MODEL [--tokens N] [--gpu NAME] ...`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from calc.commands import verbs
from calc.commands._args import (
    Parser,
    add_format,
    add_formula,
    add_model,
    add_workload,
    assignment,
    workload,
)
from calc.views import render


def _report_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="python -m calc",
        description="Parameters, FLOPs per token and training cost of a Transformer LM. "
                    f"Other commands: {', '.join(v for v in verbs() if v != 'estimate')}.")
    add_model(parser)
    add_workload(parser)
    parser.add_argument("--set", dest="changes", action="append", type=assignment,
                        default=[], metavar="KEY=VALUE",
                        help="change a spec field, e.g. vocab_size=65 or attention.n_heads=16")
    add_formula(parser)
    add_format(parser)
    return parser


def run(argv: Sequence[str]) -> int:
    from calc.presets import Preset, load_model
    from calc.reports.estimate import estimate

    args = _report_parser().parse_args(argv)
    preset: Preset = load_model(args.model)
    if args.changes:  # a changed spec: the published facts no longer describe it
        changes = dict(args.changes)
        described = ", ".join(f"{k}={v}" for k, v in changes.items())
        preset = Preset(name=preset.name, title=f"{preset.title} with {described}",
                        source=preset.source, spec=preset.spec.updated(**changes))
    if args.formula:
        from calc.reports.formulas import model_formulas  # sympy: only when asked

        print(render(model_formulas(preset), args.format), end="")
        return 0
    report = estimate(preset, **workload(args))
    print(render(report, args.format), end="")
    return 0
