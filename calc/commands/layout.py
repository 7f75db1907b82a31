"""Layout search: `python -m calc layout MODEL --gpu G --gpus N --global-batch B [--tp 8]
[--pp 4,8] [--recompute none,selective] [--top N] [--tokens T --price P]`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from calc.commands._args import (
    Parser,
    add_format,
    add_from,
    add_model,
    add_options,
    number,
    options,
    positive_int,
    require_model,
)
from calc.views import render


def parser() -> Parser:
    from calc.plan.search import SEARCHED
    from calc.reports.layout import SEARCH_FIXED, TOP, UNSEARCHED_STATES

    parser = Parser(
        prog="python -m calc layout",
        description="Every valid parallel layout (tp, pp, vpp, dp, cp, ep, micro-batch, "
                    "recomputation, ZeRO stage, sequence parallelism) of a model on N GPUs "
                    "that its framework runs and that fits in memory with the margin, ranked "
                    "by predicted step time; the top ones with their largest parts, and the "
                    "faster layouts that do not fit. Each searched field can be pinned or "
                    "given as a set.")
    add_model(parser, optional=True)
    add_from(parser, "model, batch, sequence length, dtype, stack, dropout and offload")
    parser.add_argument("--gpu", required=True, help="GPU catalogue name (python -m calc gpus)")
    parser.add_argument("--system", help="named system (default: the GPU's reference system)")
    parser.add_argument("--gpus", type=positive_int, required=True, help="GPUs of the run")
    parser.add_argument("--top", type=positive_int, default=TOP,
                        help=f"layouts to show (default {TOP})")
    add_options(parser, "layout", only=SEARCH_FIXED)
    add_options(parser, "layout", only=SEARCHED, sets=SEARCHED,
                title="searched (pin one value or give a comma-separated set)")
    add_options(parser, "states", skip=UNSEARCHED_STATES,
                title="model states and margin (default: the framework's)")
    add_options(parser, "offload", title="offload (DeepSpeed ZeRO-Offload / ZeRO-Infinity)")
    parser.add_argument("--tokens", type=number("tokens"),
                        help="training tokens: GPU-hours, days (and cost) of each layout")
    add_options(parser, "costing", title="cost and energy of --tokens")
    add_format(parser)
    return parser


def report(args: Any) -> Any:
    """The report `args` (parsed by `parser()`) asks for; args.model may be a Preset."""
    from calc.reports.layout import layout

    return layout(args.model, **_asked(args))


def plotted(args: Any) -> tuple[Any, Any]:
    """The report and its figure (calc plot layout's) from one search: the page's view."""
    from calc.reports.layout import searched
    from calc.views.figures.layout import drawn
    from calc.views.plot import figure_class

    made = figure_class()  # before the search: without matplotlib, say so at once
    found = searched(args.model, **_asked(args))
    return found[0], drawn(made, *found)


def _asked(args: Any) -> dict[str, Any]:
    require_model(args)
    return {"gpu": args.gpu, "system": args.system, "gpus": args.gpus,
            "from_file": args.from_file, "tokens": args.tokens, "top": args.top,
            **options(args, "layout", "states", "offload", "costing")}


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    print(render(report(args), args.format, args.table), end="")
    return 0
