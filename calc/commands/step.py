"""Training step time: `python -m calc step MODEL --gpu G --gpus N [--tp 8 --pp 4 ...]`."""

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
    parser = Parser(
        prog="python -m calc step",
        description="Predicted time of one training step of a parallel layout: compute as "
                    "operators, each exposed communication on the link it crosses, the "
                    "pipeline bubble and the optimizer; tokens/s, TFLOP/s, MFU and HFU per "
                    "GPU, GPU-hours for --tokens, and whether it fits in memory.")
    add_model(parser, optional=True)
    add_from(parser, "model, layout, batch, offload and stack")
    parser.add_argument("--gpu", required=True,
                        help="GPU catalogue name (python -m calc gpus), or a TOML file of one "
                             "GPU in the catalogue's schema")
    parser.add_argument("--system", help="named system holding this GPU (default: the GPU's "
                                         "reference system, or a box derived from its "
                                         "datasheet links: see --gpus-per-node)")
    parser.add_argument("--gpus", type=positive_int,
                        help="GPUs of the run (default tp × pp × dp × cp)")
    add_options(parser, "layout")
    parser.add_argument("--tokens", type=number("tokens"),
                        help="training tokens, for GPU-hours and days (e.g. 2e12 or 2T)")
    add_options(parser, "states", title="model states and margin (whether it fits)")
    add_options(parser, "offload", title="offload (DeepSpeed ZeRO-Offload / ZeRO-Infinity)")
    add_options(parser, "finetune", title="fine-tuning (LoRA / QLoRA on a frozen base)")
    parser.add_argument("--dataset-tokens", type=number("tokens"),
                        help="tokens of one epoch over the dataset: GPU-hours for "
                             "--dataset-tokens × --epochs (instead of --tokens)")
    parser.add_argument("--epochs", type=number("epochs"),
                        help="passes over the dataset (default 1)")
    add_options(parser, "costing", title="GPU-hours, cost and energy of --tokens")
    add_format(parser)
    return parser


def report(args: Any) -> Any:
    """The report `args` (parsed by `parser()`) asks for; args.model may be a Preset."""
    from calc.reports.step import step

    require_model(args)
    return step(args.model, gpu=args.gpu, system=args.system, gpus=args.gpus,
                tokens=args.tokens, from_file=args.from_file,
                dataset_tokens=args.dataset_tokens, epochs=args.epochs,
                **options(args, "layout", "states", "offload", "finetune", "costing"))


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    print(render(report(args), args.format, args.table), end="")
    return 0
