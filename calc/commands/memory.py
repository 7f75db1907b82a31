"""Training memory per GPU: `python -m calc memory MODEL [--gpu G] [--zero 3 --dp 64] ...`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import get_args

from calc.commands._args import (
    Parser,
    add_format,
    add_formula,
    add_model,
    positive_int,
    show_formulas,
)
from calc.spec.memory import OPTIMIZERS, RECIPES, Recompute, TrainingDtype
from calc.views import render


def _parser() -> Parser:
    parser = Parser(
        prog="python -m calc memory",
        description="Training memory of the most loaded GPU: weights, gradients, optimizer "
                    "states (by precision recipe and ZeRO stage), activations (Korthikanti et al. "
                    "2022), against the GPU's memory, with the largest micro-batch that fits.")
    add_model(parser)
    parser.add_argument("--gpu", help="GPU catalogue name whose memory is the budget")
    parser.add_argument("--seq-len", type=positive_int,
                        help="sequence length s (default: the model's training context)")
    parser.add_argument("--micro-batch", type=positive_int, default=1,
                        help="sequences per micro-batch b (default 1)")
    parser.add_argument("--dtype", default="bf16", choices=get_args(TrainingDtype),
                        help="activation (and mixed-precision weight) dtype (default bf16)")
    parser.add_argument("--recipe", choices=list(RECIPES),
                        help="model-state precision recipe (default: mixed; fp32 with "
                             "--dtype fp32)")
    parser.add_argument("--optimizer", default="adamw", choices=list(OPTIMIZERS),
                        help="optimizer whose states are kept (default adamw)")
    parser.add_argument("--zero", type=int, default=0, choices=(0, 1, 2, 3),
                        help="ZeRO stage over the data-parallel ranks (default 0)")
    parser.add_argument("--dp", type=positive_int, default=1, help="data-parallel degree")
    parser.add_argument("--tp", type=positive_int, default=1, help="tensor-parallel degree")
    parser.add_argument("--pp", type=positive_int, default=1, help="pipeline-parallel degree")
    parser.add_argument("--recompute", default="none", choices=get_args(Recompute),
                        help="activation recomputation (default none)")
    parser.add_argument("--sequence-parallel", action="store_true",
                        help="split norms and dropouts along the sequence over the tp ranks")
    parser.add_argument("--flash-attention", action="store_true",
                        help="an attention kernel that stores no s×s scores")
    parser.add_argument("--no-dropout", dest="dropout", action="store_false",
                        help="no dropout masks (most current LLMs train without dropout)")
    add_formula(parser)
    add_format(parser)
    return parser


def run(argv: Sequence[str]) -> int:
    from calc.reports.memory import memory

    args = _parser().parse_args(argv)
    if show_formulas("memory", args):
        return 0
    report = memory(args.model, gpu=args.gpu, seq_len=args.seq_len,
                    micro_batch=args.micro_batch, dtype=args.dtype, recipe=args.recipe,
                    optimizer=args.optimizer, zero=args.zero, dp=args.dp, tp=args.tp,
                    pp=args.pp, recompute=args.recompute,
                    sequence_parallel=args.sequence_parallel,
                    flash_attention=args.flash_attention, dropout=args.dropout)
    print(render(report, args.format), end="")
    return 0
