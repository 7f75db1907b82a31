"""Layout search: `python -m calc layout MODEL --gpu G --gpus N --global-batch B [--seq-len T]`."""

from __future__ import annotations

from collections.abc import Sequence

from calc.commands._args import (
    Parser,
    add_format,
    add_from,
    add_model,
    add_options,
    options,
    positive_int,
)
from calc.views import render


def _parser() -> Parser:
    from calc.reports.layout import SEARCH_FIXED

    parser = Parser(
        prog="python -m calc layout",
        description="Every valid parallel layout (tp, pp, vpp, dp, cp, ep, micro-batch, "
                    "recomputation, ZeRO stage, sequence parallelism) of a model on N GPUs "
                    "that fits in memory, ranked by predicted step time; the top ten with "
                    "their largest parts, and the faster layouts that do not fit.")
    add_model(parser, optional=True)
    add_from(parser, "model, batch, sequence length, dtype, stack, dropout and offload")
    parser.add_argument("--gpu", required=True, help="GPU catalogue name (python -m calc gpus)")
    parser.add_argument("--system", help="named system (default: the GPU's reference system)")
    parser.add_argument("--gpus", type=positive_int, required=True, help="GPUs of the run")
    add_options(parser, "layout", only=SEARCH_FIXED)
    add_options(parser, "offload", title="offload (DeepSpeed ZeRO-Offload / ZeRO-Infinity)")
    add_format(parser)
    return parser


def run(argv: Sequence[str]) -> int:
    from calc.reports.layout import layout

    parser = _parser()
    args = parser.parse_args(argv)
    if args.model is None and not args.from_file:
        parser.error("the following arguments are required: MODEL (or --from a trainer "
                     "config that names one)")
    report = layout(args.model, gpu=args.gpu, system=args.system, gpus=args.gpus,
                    from_file=args.from_file, **options(args, "layout", "offload"))
    print(render(report, args.format, args.table), end="")
    return 0
