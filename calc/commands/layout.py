"""Layout search: `python -m calc layout MODEL --gpu G --gpus N --global-batch B [--seq-len T]`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import get_args

from calc.commands._args import (
    Parser,
    add_format,
    add_from,
    add_model,
    add_offload,
    offload,
    positive_int,
)
from calc.spec.layout import Framework, LayoutDtype
from calc.views import render


def _parser() -> Parser:
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
    parser.add_argument("--global-batch", type=positive_int,
                        help="sequences per step (required without --from)")
    parser.add_argument("--seq-len", type=positive_int,
                        help="sequence length (default: the model's training context)")
    parser.add_argument("--dtype", choices=get_args(LayoutDtype),
                        help="dtype of the matrix products (default bf16)")
    parser.add_argument("--framework", choices=get_args(Framework),
                        help="software stack whose constants apply (default megatron)")
    parser.add_argument("--dropout", action=argparse.BooleanOptionalAction, default=None,
                        help="dropout after attention and the MLP (default: off, as current "
                             "LLMs train)")
    add_offload(parser, timing=True)
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
                    from_file=args.from_file,
                    global_batch=args.global_batch, seq_len=args.seq_len, dtype=args.dtype,
                    framework=args.framework, dropout=args.dropout,
                    **{k: v for k, v in offload(args).items() if v is not None})
    print(render(report, args.format, args.table), end="")
    return 0
