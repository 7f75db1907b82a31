"""`python -m calc plot KIND MODEL… -o FILE`: context, params, mfu or serve plots (needs
matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from calc.commands._args import Parser, number, positive_int
from calc.files import output_path


def run(argv: Sequence[str]) -> int:
    from calc.spec import DTYPES
    from calc.views.plot import DEFAULT_GPUS, KINDS, SUFFIXES, plot

    parser = Parser(prog="python -m calc plot",
                    description="context: FLOPs per token against context length, with the "
                                "attention share; params: where the parameters sit; mfu: "
                                "GPU-hours against MFU for several GPUs; serve: output tokens/s "
                                "per GPU against TPOT or TTFT as concurrency grows.")
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
    serve = parser.add_argument_group("serve", "throughput per GPU against latency")
    serve.add_argument("--gpus", type=positive_int, default=8, help="serve: GPUs (default 8)")
    serve.add_argument("--input-len", type=positive_int, default=1000,
                       help="serve: prompt tokens a request (default 1000)")
    serve.add_argument("--output-len", type=positive_int, default=200,
                       help="serve: generated tokens a request (default 200)")
    serve.add_argument("--engine", choices=("vllm", "trt-llm", "sglang"),
                       help="serve: the engine whose settings apply (default vllm)")
    serve.add_argument("--latency", choices=("tpot", "ttft"), default="tpot",
                       help="serve: the latency on the x axis (default tpot)")
    serve.add_argument("--tpot-ms", type=number("latency_ms"), help="serve: TPOT target line")
    serve.add_argument("--ttft-ms", type=number("latency_ms"), help="serve: TTFT target line")
    args = parser.parse_args(argv)
    path = output_path(args.output, "-o", force=args.force, suffixes=SUFFIXES)
    plot(args.kind, args.models, path, tokens=args.tokens,
         gpus=[g.strip() for g in args.gpu.split(",") if g.strip()],
         attention=args.attention, dtype=args.dtype, force=args.force,
         **_serving(args) if args.kind == "serve" else {})
    print(f"wrote {path}")
    return 0


def _serving(args) -> dict[str, object]:
    given = {"gpus_count": args.gpus, "input_len": args.input_len,
             "output_len": args.output_len, "latency": args.latency, "engine": args.engine,
             "tpot_ms": args.tpot_ms, "ttft_ms": args.ttft_ms}
    return {key: value for key, value in given.items() if value is not None}
