"""`python -m calc reproduce [--throughput | --serving] [--format ...]`: every published
training run calc knows beside calc's FLOPs, GPU-hours and the MFU the published hours imply;
with --throughput, every published throughput measurement beside calc's step-time model; with
--serving, every published serving benchmark beside calc's serving model."""

from __future__ import annotations

from collections.abc import Sequence

from calc.commands._args import Parser, add_format
from calc.views import render


def run(argv: Sequence[str]) -> int:
    parser = Parser(prog="python -m calc reproduce",
                    description="Published training runs (tokens, GPUs, GPU-hours, FLOPs, MFU) "
                                "beside calc's estimates of them, with sources; --throughput: "
                                "published step times and throughput beside calc's step-time "
                                "model, and the layout search against the authors' layouts.")
    which = parser.add_mutually_exclusive_group()  # one table of published measurements
    which.add_argument("--throughput", action="store_true",
                        help="published throughput runs beside the step-time model")
    which.add_argument("--serving", action="store_true",
                        help="published serving benchmarks beside the serving model "
                             "(leave-one-publisher-out)")
    which.add_argument("--finetune", action="store_true",
                        help="published fine-tuning runs (peak memory, tokens/s) beside calc's "
                             "memory and step-time models")
    parser.add_argument("--no-search", dest="search", action="store_false",
                        help="with --throughput: skip the layout search for each run")
    parser.add_argument("--publisher", action="append", default=[],
                        help="with --throughput: only this publisher's runs (repeatable; the "
                             "held-out errors stay every publisher's)")
    add_format(parser)
    args = parser.parse_args(argv)
    if args.serving:
        from calc.reports.serving_runs import reproduce_serving

        report = reproduce_serving()
    elif args.finetune:
        from calc.reports.finetune_runs import reproduce_finetune

        report = reproduce_finetune()
    elif args.throughput:
        from calc.reports.throughput import reproduce_throughput

        report = reproduce_throughput(search=args.search, publishers=args.publisher)
    else:
        from calc.reports.reproduce import reproduce

        report = reproduce()
    print(render(report, args.format, args.table), end="")
    return 0
