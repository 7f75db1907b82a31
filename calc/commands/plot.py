"""`python -m calc plot KIND MODEL… -o FILE`: context, params, mfu or layout plots (needs
matplotlib); `plot layout MODEL --gpu G --gpus N --global-batch B` takes calc layout's
options."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from calc.commands._args import Parser, add_options, number, options, positive_int
from calc.files import output_path


def run(argv: Sequence[str]) -> int:
    from calc.plan.search import SEARCHED
    from calc.reports.layout import SEARCH_FIXED
    from calc.spec import DTYPES
    from calc.views.plot import DEFAULT_GPUS, KINDS, SUFFIXES, plot

    parser = Parser(prog="python -m calc plot",
                    description="context: FLOPs per token against context length, with the "
                                "attention share; params: where the parameters sit; mfu: "
                                "GPU-hours against MFU for several GPUs; layout: every "
                                "searched layout's step time against its memory per GPU, "
                                "the limit and the margin, the chosen one marked.")
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("models", metavar="MODEL", nargs="+",
                        help="preset names (python -m calc list) or spec files")
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help=f"the image to write ({', '.join(SUFFIXES)}; none: .png)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing image")
    parser.add_argument("--tokens", type=number("tokens"),
                        help="mfu: training tokens (default: the published run's, else 20 "
                             "per parameter)")
    parser.add_argument("--gpu", default=",".join(DEFAULT_GPUS),
                        help=f"mfu: GPUs, comma-separated (default {','.join(DEFAULT_GPUS)})")
    parser.add_argument("--attention", default="causal", choices=("causal", "full"))
    parser.add_argument("--dtype", default="bf16", choices=DTYPES)
    parser.add_argument("--gpus", type=positive_int,
                        help="layout: how many GPUs the run has (with one --gpu)")
    add_options(parser, "layout", only=SEARCH_FIXED, skip=("dtype",),
                title="layout: what the search is told")
    add_options(parser, "layout", only=SEARCHED, sets=SEARCHED,
                title="layout: searched (pin one value or give a comma-separated set)")
    add_options(parser, "states", title="layout: model states and margin")
    args = parser.parse_args(argv)
    path = output_path(args.output, "-o", force=args.force, suffixes=SUFFIXES)
    plot(args.kind, args.models, path, tokens=args.tokens,
         gpus=[g.strip() for g in args.gpu.split(",") if g.strip()],
         attention=args.attention, dtype=args.dtype, force=args.force,
         gpu_count=args.gpus, **options(args, "layout", "states"))
    print(f"wrote {path}")
    return 0
