"""Inference: `python -m calc infer MODEL --gpu G [--context T] [--batch B] [--dtype int4] ...`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from calc.commands._args import (
    Parser,
    _values,
    add_format,
    add_formula,
    add_model,
    number,
    positive_int,
    show_formulas,
)
from calc.spec import DTYPES, STORAGE_DTYPES
from calc.views import render

SERVING = "serving:"  # the argparse dest of a serving flag


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
    parser.add_argument("--gpus", type=positive_int,
                        help="GPUs the weights and cache are split over (default 1; serving at "
                             "a --request-rate without --gpus searches the count)")
    parser.add_argument("--context", type=positive_int,
                        help="tokens of context per sequence (default: the model's context)")
    parser.add_argument("--batch", type=positive_int,
                        help="sequences decoded together (default 1; serving: a static batch)")
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
    _add_serving(parser)
    add_formula(parser)
    add_format(parser)
    return parser


def _add_serving(parser: Parser) -> None:
    """calc.spec.inference.Serving's fields as flags (--input-len, --request-rate, --tp ...)."""
    from calc.spec.inference import Serving

    group = parser.add_argument_group(
        "serving (docs/serving.md)", "requests of --input-len and --output-len tokens: "
        "throughput, TTFT, TPOT, the layout and its cost")
    for name, info in Serving.model_fields.items():
        values = _values(info.annotation)
        if "type" in values and "choices" not in values:
            values["metavar"] = name.upper()
        group.add_argument(f"--{name.replace('_', '-')}", dest=SERVING + name, default=None,
                           help=info.description, **values)
    group.add_argument("--price", type=number("price"),
                       help="price of a GPU-hour: the cost of a million generated tokens")


def report(args: Any) -> Any:
    """The report `args` (parsed by `parser()`) asks for; args.model may be a Preset."""
    from calc.reports.infer import infer

    given = {"gpus": args.gpus, "batch": args.batch,
             **{key.removeprefix(SERVING): value for key, value in vars(args).items()
                if key.startswith(SERVING)}}
    return infer(args.model, gpu=args.gpu, system=args.system, context=args.context,
                 dtype=args.dtype, kv_dtype=args.kv_dtype, compute_dtype=args.compute_dtype,
                 mfu=args.mfu, mbu=args.mbu, price=getattr(args, "price", None),
                 **{key: value for key, value in given.items() if value is not None})


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if show_formulas("infer", args):  # before the report's modules: --formula needs none
        return 0
    print(render(report(args), args.format, args.table), end="")
    return 0
