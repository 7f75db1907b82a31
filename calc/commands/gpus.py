"""`python -m calc gpus`: the GPU catalogue with dense peaks and sources (calc.reports.catalog)."""

from __future__ import annotations

from collections.abc import Sequence

from calc.commands._args import Parser, add_format
from calc.views import render


def run(argv: Sequence[str]) -> int:
    from calc.reports.catalog import gpu_catalogue

    parser = Parser(prog="python -m calc gpus",
                     description="The GPU catalogue: dense peaks per dtype, with sources.")
    add_format(parser)
    args = parser.parse_args(argv)
    print(render(gpu_catalogue(), args.format, args.table), end="")
    return 0
