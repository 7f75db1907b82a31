"""The catalogues: `python -m calc list` (presets with sizes) and `python -m calc gpus`."""

from __future__ import annotations

from collections.abc import Sequence

from calc.cli import Parser, add_format
from calc.render import render


def run_list(argv: Sequence[str]) -> int:
    from calc.catalog import preset_catalogue

    parser = Parser(prog="python -m calc list", description="The model presets, with sizes.")
    add_format(parser)
    args = parser.parse_args(argv)
    print(render(preset_catalogue(), args.format), end="")
    return 0


def run_gpus(argv: Sequence[str]) -> int:
    from calc.catalog import gpu_catalogue

    parser = Parser(prog="python -m calc gpus",
                     description="The GPU catalogue: dense peaks per dtype, with sources.")
    add_format(parser)
    args = parser.parse_args(argv)
    print(render(gpu_catalogue(), args.format), end="")
    return 0
