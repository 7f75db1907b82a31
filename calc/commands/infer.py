"""Inference: `python -m calc infer MODEL --gpu G [--context T] [--batch B] [--dtype int4] ...`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from calc.commands._args import (
    Parser,
    add_format,
    add_formula,
    add_model,
    number,
    positive_int,
    show_formulas,
)
from calc.spec import DTYPES, STORAGE_DTYPES
from calc.views import render


def parser() -> Parser:
    parser = Parser(
        prog="python -m calc infer",
        description="Serving a model: weights and KV cache against the GPUs' memory, the largest "
                    "batch and context that fit, prefill and decode time on a roofline, tokens/s "
                    "and the batch where decoding turns compute-bound.")
    add_model(parser)
    parser.add_argument("--gpu", required=True, help="GPU catalogue name (python -m calc gpus)")
    parser.add_argument("--system",
                        help="named system whose links carry the tensor-parallel all-reduces "
                             "(default: the GPU's reference system)")
    parser.add_argument("--gpus", type=positive_int, default=1,
                        help="GPUs the weights and cache are split over (default 1)")
    parser.add_argument("--context", type=positive_int,
                        help="tokens of context per sequence (default: the model's context)")
    parser.add_argument("--batch", type=positive_int, default=1,
                        help="sequences decoded together (default 1)")
    parser.add_argument("--dtype", choices=STORAGE_DTYPES,
                        help="weight storage dtype (default: a quantized config.json's, else "
                             "bf16)")
    parser.add_argument("--kv-dtype", choices=STORAGE_DTYPES,
                        help="KV-cache dtype (default: the weights' if 16/32-bit, else bf16)")
    parser.add_argument("--compute-dtype", choices=DTYPES,
                        help="dtype whose dense peak runs the matmuls (default: the weights'; "
                             "int4: bf16)")
    parser.add_argument("--mfu", type=number("mfu"), default=1.0,
                        help="fraction of the dense peak reached (default 1: the roofline)")
    parser.add_argument("--mbu", type=number("mbu"), default=1.0,
                        help="fraction of the memory bandwidth reached (default 1)")
    add_formula(parser)
    add_format(parser)
    return parser


def report(args: Any) -> Any:
    """The report `args` (parsed by `parser()`) asks for; args.model may be a Preset."""
    from calc.reports.infer import infer

    return infer(args.model, gpu=args.gpu, system=args.system, gpus=args.gpus,
                 context=args.context, batch=args.batch, dtype=args.dtype,
                 kv_dtype=args.kv_dtype,
                 compute_dtype=args.compute_dtype, mfu=args.mfu, mbu=args.mbu)


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if show_formulas("infer", args):  # before the report's modules: --formula needs none
        return 0
    print(render(report(args), args.format, args.table), end="")
    return 0
