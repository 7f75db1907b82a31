"""`python -m calc plot KIND MODEL… -o FILE`: context, params or mfu plots (needs matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from calc.commands._args import Parser, positive_number


def run(argv: Sequence[str]) -> int:
    from calc.spec import DTYPES
    from calc.views.plot import DEFAULT_GPUS, KINDS, plot

    parser = Parser(prog="python -m calc plot",
                    description="context: FLOPs per token against context length, with the "
                                "attention share; params: where the parameters sit; mfu: "
                                "GPU-hours against MFU for several GPUs.")
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("models", metavar="MODEL", nargs="+",
                        help="preset names (python -m calc list) or spec files")
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help="the image to write (.png, .svg or .pdf)")
    parser.add_argument("--tokens", type=positive_number,
                        help="mfu: training tokens (default: the published run's, else 20 "
                             "per parameter)")
    parser.add_argument("--gpu", default=",".join(DEFAULT_GPUS),
                        help=f"mfu: GPUs, comma-separated (default {','.join(DEFAULT_GPUS)})")
    parser.add_argument("--attention", default="causal", choices=("causal", "full"))
    parser.add_argument("--dtype", default="bf16", choices=DTYPES)
    args = parser.parse_args(argv)
    plot(args.kind, args.models, args.output, tokens=args.tokens,
         gpus=[g.strip() for g in args.gpu.split(",") if g.strip()],
         attention=args.attention, dtype=args.dtype)
    print(f"wrote {args.output}")
    return 0
