"""Compute-optimal sizing: `python -m calc optimal (--flops C | --gpu G --gpus K --days D)`."""

from __future__ import annotations

from collections.abc import Sequence

from calc.commands._args import (
    Parser,
    add_format,
    add_formula,
    number,
    positive_int,
    show_formulas,
)
from calc.counting import DEFAULT_MFU, TOKENS_PER_PARAMETER
from calc.spec import DTYPES
from calc.views import render


def _parser() -> Parser:
    parser = Parser(
        prog="python -m calc optimal",
        description=f"Parameters N and tokens D for a training budget: at "
                    f"{TOKENS_PER_PARAMETER:g} tokens per parameter and from Hoffmann et al. "
                    f"2022's fitted loss, with a suggested shape. The budget is --flops, or "
                    f"--gpu × --gpus × --days × --mfu.")
    parser.add_argument("--flops", type=number("flops"), help="training FLOPs C, e.g. 5.76e23")
    parser.add_argument("--gpu", help="GPU catalogue name (python -m calc gpus)")
    parser.add_argument("--gpus", type=positive_int, default=1, help="GPUs K (default 1)")
    parser.add_argument("--days", type=number("days"), help="wall-clock days of training")
    parser.add_argument("--mfu", type=number("mfu"),
                        help=f"model FLOPs utilisation in (0, 1] (default {DEFAULT_MFU:g})")
    parser.add_argument("--dtype", default="bf16", choices=DTYPES,
                        help="dtype whose dense peak is used (default bf16)")
    parser.add_argument("--tokens-per-param", type=number("tokens_per_parameter"),
                        help=f"tokens per parameter of the rule of thumb (default "
                             f"{TOKENS_PER_PARAMETER:g})")
    add_formula(parser)
    add_format(parser)
    return parser


def run(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    if show_formulas("optimal", args):  # before the report's modules: --formula needs none
        return 0
    from calc.reports.optimal import optimal

    report = optimal(args.flops, gpu=args.gpu, gpus=args.gpus, days=args.days, mfu=args.mfu,
                     dtype=args.dtype, tokens_per_parameter=args.tokens_per_param)
    print(render(report, args.format, args.table), end="")
    return 0
