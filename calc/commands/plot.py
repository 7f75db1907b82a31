"""`python -m calc plot KIND [MODEL…] -o FILE`: the figures of calc.views.figures (matplotlib)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calc.commands._args import Parser, add_options, assignment, number, options, positive_int
from calc.errors import CalcError
from calc.files import output_path


def layout_option(text: str) -> dict[str, object]:
    """--layout tp=8,pp=4,micro_batch=2: one layout's options (calc.step's)."""
    try:
        return dict(assignment(part) for part in text.split(",") if part.strip())
    except argparse.ArgumentTypeError as error:
        raise argparse.ArgumentTypeError(f"{error} in {text!r}") from None


def _parser() -> Parser:
    from calc.plan.search import SEARCHED
    from calc.views.figures.mfu import DEFAULT_GPUS
    from calc.views.plot import KINDS, SUFFIXES, describe

    parser = Parser(prog="python -m calc plot",
                    description="; ".join(describe(kind) for kind in KINDS) + ".")
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("models", metavar="MODEL", nargs="*",
                        help="preset names (python -m calc list) or spec files")
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help=f"the image to write ({', '.join(SUFFIXES)}; none: .png)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing image")
    mfu = parser.add_argument_group("mfu")
    mfu.add_argument("--tokens", type=number("tokens"),
                     help="training tokens (default: the published run's, else 20 per "
                          "parameter)")
    mfu.add_argument("--gpu", help=f"mfu: GPUs, comma-separated (default "
                                   f"{','.join(DEFAULT_GPUS)}); step: the GPU")
    mfu.add_argument("--attention", default="causal", choices=("causal", "full"))
    step = parser.add_argument_group("step and layout")
    step.add_argument("--gpus", type=positive_int, help="GPUs of the run")
    step.add_argument("--layout", dest="layouts", action="append", type=layout_option,
                      metavar="KEY=VALUE,…",
                      help="one bar's layout, e.g. tp=8,pp=4,micro_batch=2 (repeat for more "
                           "bars); the flags below are shared by every bar")
    add_options(step, "layout", sets=SEARCHED)
    add_options(parser, "states", title="layout: model states and margin")
    serve = parser.add_argument_group("serve (with --gpu, --gpus, default h100 and 8)")
    serve.add_argument("--input-len", type=positive_int,
                       help="prompt tokens a request (default 1000)")
    serve.add_argument("--output-len", type=positive_int,
                       help="generated tokens a request (default 200)")
    serve.add_argument("--engine", choices=("vllm", "trt-llm", "sglang"),
                       help="the engine whose settings apply (default vllm)")
    serve.add_argument("--latency", choices=("tpot", "ttft"),
                       help="the latency on the x axis (default tpot)")
    serve.add_argument("--tpot-ms", type=number("latency_ms"), help="a TPOT target line")
    serve.add_argument("--ttft-ms", type=number("latency_ms"), help="a TTFT target line")
    return parser


def kind_options(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """The options `kind`'s figure takes, from the flags."""
    if kind == "mfu":
        return {"tokens": args.tokens, "attention": args.attention,
                "dtype": options(args, "layout").get("dtype", "bf16"),
                **({"gpus": [g.strip() for g in args.gpu.split(",") if g.strip()]}
                   if args.gpu else {})}
    if kind == "context":
        return {"attention": args.attention}
    if kind == "step":
        return {"gpu": args.gpu, "gpus": args.gpus, "layouts": args.layouts or [{}],
                **{option: _one(option, value)
                   for option, value in options(args, "layout", "states").items()}}
    if kind == "serve":
        given = {"gpu": args.gpu, "gpus": args.gpus, "input_len": args.input_len,
                 "output_len": args.output_len, "engine": args.engine,
                 "latency": args.latency, "tpot_ms": args.tpot_ms, "ttft_ms": args.ttft_ms,
                 "dtype": options(args, "layout").get("dtype")}
        return {key: value for key, value in given.items() if value is not None}
    if kind == "layout":
        return {"gpu": args.gpu, "gpus": args.gpus, **options(args, "layout", "states")}
    return {}


def _one(option: str, value: Any) -> Any:
    """A searched option's value for one step: a set of one is its value, of more refused."""
    if not isinstance(value, tuple):
        return value
    if len(value) > 1:
        raise CalcError(f"--{option.replace('_', '-')}: plot step takes one value, not a set "
                        f"(sets are searched by plot layout)")
    return value[0]


def run(argv: Sequence[str]) -> int:
    from calc.views.plot import SUFFIXES, plot

    args = _parser().parse_args(argv)
    path = output_path(args.output, "-o", force=args.force, suffixes=SUFFIXES)
    plot(args.kind, args.models, path, force=args.force, **kind_options(args.kind, args))
    print(f"wrote {path}")
    return 0
