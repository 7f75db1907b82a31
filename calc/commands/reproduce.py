"""`python -m calc reproduce [--format ...]`: every published training run calc knows beside
calc's FLOPs, GPU-hours and the MFU the published hours imply."""

from __future__ import annotations

from collections.abc import Sequence

from calc.commands._args import Parser, add_format
from calc.views import render


def run(argv: Sequence[str]) -> int:
    from calc.reports.reproduce import reproduce

    parser = Parser(prog="python -m calc reproduce",
                    description="Published training runs (tokens, GPUs, GPU-hours, FLOPs, MFU) "
                                "beside calc's estimates of them, with sources.")
    add_format(parser)
    args = parser.parse_args(argv)
    print(render(reproduce(), args.format), end="")
    return 0
