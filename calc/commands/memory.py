"""Training memory per GPU: `python -m calc memory MODEL [--gpu G] [--zero 3 --dp 64] ...`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import get_args

from calc.commands._args import (
    Parser,
    activations,
    add_activations,
    add_finetune,
    add_format,
    add_formula,
    add_from,
    add_model,
    add_offload,
    add_precision,
    finetune,
    offload,
    positive_int,
    show_formulas,
)
from calc.spec.memory import OPTIMIZERS, RECIPES, TrainingDtype
from calc.views import render


def _parser() -> Parser:
    parser = Parser(
        prog="python -m calc memory",
        description="Training memory of the most loaded GPU: weights, gradients, optimizer "
                    "states (by precision recipe and ZeRO stage), activations (Korthikanti et al. "
                    "2022), against the GPU's memory, with the largest micro-batch that fits.")
    add_model(parser, optional=True)
    add_from(parser, "model, layout, recipe, fine-tuning and offload")
    parser.add_argument("--gpu", help="GPU catalogue name whose memory is the budget")
    parser.add_argument("--seq-len", type=positive_int,
                        help="sequence length s (default: the model's training context)")
    parser.add_argument("--dtype", default="bf16", choices=get_args(TrainingDtype),
                        help="activation (and mixed-precision weight) dtype (default bf16)")
    parser.add_argument("--recipe", choices=list(RECIPES),
                        help="model-state precision recipe (default: mixed; fp32 with "
                             "--dtype fp32)")
    parser.add_argument("--optimizer", default="adamw", choices=list(OPTIMIZERS),
                        help="optimizer whose states are kept (default adamw)")
    parser.add_argument("--zero", type=int, default=0, choices=(0, 1, 2, 3),
                        help="ZeRO stage over the data-parallel ranks (default 0)")
    parser.add_argument("--gpus", type=positive_int,
                        help="GPUs of the run: dp defaults to gpus / (tp × pp × cp)")
    parser.add_argument("--dp", type=positive_int, help="data-parallel degree (default 1)")
    parser.add_argument("--tp", type=positive_int, default=1, help="tensor-parallel degree")
    parser.add_argument("--pp", type=positive_int, default=1, help="pipeline-parallel degree")
    parser.add_argument("--cp", type=positive_int, default=1,
                        help="context-parallel degree: each GPU holds s/cp of a sequence")
    parser.add_argument("--ep", type=positive_int, default=1,
                        help="expert-parallel degree: routed experts split ep ways")
    parser.add_argument("--vpp", type=positive_int, default=1,
                        help="virtual pipeline stages per GPU (interleaved 1F1B)")
    parser.add_argument("--split-embedding-loss", action="store_true",
                        help="count the embedding and the loss as one layer each in the "
                             "pipeline split (first and last stage hold a layer fewer)")
    parser.add_argument("--sequence-parallel", action="store_true",
                        help="split norms and dropouts along the sequence over the tp ranks")
    add_activations(parser)
    add_offload(parser, system=True)
    add_finetune(parser)
    add_precision(parser)
    add_formula(parser)
    add_format(parser)
    return parser


def _options(args: argparse.Namespace, dp: int | None) -> dict[str, object]:
    """calc.memory's keyword arguments from the flags."""
    return dict(gpu=args.gpu, seq_len=args.seq_len, dtype=args.dtype, recipe=args.recipe,
                optimizer=args.optimizer, zero=args.zero, dp=dp, tp=args.tp, pp=args.pp,
                cp=args.cp, ep=args.ep, vpp=args.vpp,
                split_embedding_loss=args.split_embedding_loss,
                sequence_parallel=args.sequence_parallel,
                precision=args.precision, system=args.system, **offload(args),
                **activations(args), **finetune(args))


def run(argv: Sequence[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if show_formulas("memory", args):  # before the report's modules: --formula needs none
        return 0
    from calc.reports.memory import memory
    from calc.spec.layout import make_layout

    if args.model is None and not args.from_file:
        parser.error("the following arguments are required: MODEL (or --from a trainer "
                     "config that names one)")
    dp = args.dp
    if dp is None and (args.gpus is not None or not args.from_file):
        # the same rule as step's: the GPUs left after tp, pp and cp
        dp = make_layout(args.gpus, tp=args.tp, pp=args.pp, cp=args.cp,
                         global_batch=args.gpus or 1).dp
    elif dp is not None and args.gpus is not None:
        make_layout(args.gpus, tp=args.tp, pp=args.pp, cp=args.cp, dp=dp, global_batch=dp)
    options = _options(args, dp)
    if args.from_file:  # the file's settings, overridden only by the flags given
        defaults = _options(parser.parse_args([]), None)
        options = {k: v for k, v in options.items() if v != defaults[k] or k == "gpu"}
    report = memory(args.model, from_file=args.from_file, **options)
    print(render(report, args.format, args.table), end="")
    return 0
