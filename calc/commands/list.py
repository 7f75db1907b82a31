"""`python -m calc list`: every preset with its size (calc.reports.catalog)."""

from __future__ import annotations

from collections.abc import Sequence

from calc.commands._args import Parser, add_format
from calc.views import render


def run(argv: Sequence[str]) -> int:
    from calc.reports.catalog import preset_catalogue

    parser = Parser(prog="python -m calc list", description="The model presets, with sizes.")
    add_format(parser)
    args = parser.parse_args(argv)
    print(render(preset_catalogue(), args.format, args.table), end="")
    return 0
