"""Training step time: `python -m calc step MODEL --gpu G --gpus N [--tp 8 --pp 4 ...]`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import get_args

from calc.cli import Parser, add_format, add_model, positive_int, positive_number
from calc.render import render
from calc.spec.layout import Framework, LayoutDtype
from calc.spec.memory import Recompute


def add_layout(parser: argparse.ArgumentParser) -> None:
    """The layout flags (calc.spec.layout.Layout's fields) that step, layout and memory share;
    `layout_fields(args)` reads them back."""
    for flag, name in (("--tp", "tensor"), ("--pp", "pipeline"), ("--cp", "context"),
                       ("--ep", "expert")):
        parser.add_argument(flag, type=positive_int, help=f"{name}-parallel degree (default 1)")
    parser.add_argument("--dp", type=positive_int,
                        help="data-parallel degree (default: gpus / (tp × pp × cp))")
    parser.add_argument("--vpp", type=positive_int,
                        help="virtual pipeline stages per GPU (interleaved 1F1B; default 1)")
    parser.add_argument("--micro-batch", type=positive_int, help="sequences per micro-batch")
    parser.add_argument("--global-batch", type=positive_int,
                        help="sequences per step (default dp × micro-batch without a pipeline)")
    parser.add_argument("--seq-len", type=positive_int,
                        help="sequence length (default: the model's training context)")
    parser.add_argument("--recompute", choices=get_args(Recompute),
                        help="activation recomputation (default none)")
    parser.add_argument("--zero", type=int, choices=(0, 1, 2, 3),
                        help="ZeRO stage over the data-parallel ranks (default 0)")
    parser.add_argument("--sequence-parallel", action="store_true", default=None,
                        help="split norms and dropouts along the sequence over the tp ranks")
    parser.add_argument("--flash-attention", action="store_true", default=None,
                        help="an attention kernel that stores no s×s scores")
    parser.add_argument("--no-dropout", dest="dropout", action="store_false", default=None,
                        help="no dropout (most current LLMs train without it)")


def layout_fields(args: argparse.Namespace) -> dict[str, object]:
    """The Layout fields add_layout's flags set (unset flags keep the Layout's defaults)."""
    names = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "global_batch", "seq_len",
             "recompute", "zero", "sequence_parallel", "flash_attention", "dropout", "dtype",
             "framework")
    return {name: getattr(args, name) for name in names
            if getattr(args, name, None) is not None}


def _parser() -> Parser:
    parser = Parser(
        prog="python -m calc step",
        description="Predicted time of one training step of a parallel layout: compute as "
                    "operators, each exposed communication on the link it crosses, the "
                    "pipeline bubble and the optimizer; tokens/s, TFLOP/s, MFU and HFU per "
                    "GPU, GPU-hours for --tokens, and whether it fits in memory.")
    add_model(parser)
    parser.add_argument("--gpu", required=True, help="GPU catalogue name (python -m calc gpus)")
    parser.add_argument("--system", help="named system (default: the GPU's reference system)")
    parser.add_argument("--gpus", type=positive_int,
                        help="GPUs of the run (default tp × pp × dp × cp)")
    add_layout(parser)
    parser.add_argument("--dtype", choices=get_args(LayoutDtype),
                        help="dtype of the matrix products (default bf16)")
    parser.add_argument("--framework", choices=get_args(Framework),
                        help="software stack whose constants apply (default megatron)")
    parser.add_argument("--tokens", type=positive_number,
                        help="training tokens, for GPU-hours and days (e.g. 2e12 or 2T)")
    add_format(parser)
    return parser


def run(argv: Sequence[str]) -> int:
    from calc.timing.report import step

    args = _parser().parse_args(argv)
    report = step(args.model, gpu=args.gpu, system=args.system, gpus=args.gpus,
                  tokens=args.tokens, **layout_fields(args))
    print(render(report, args.format), end="")
    return 0
