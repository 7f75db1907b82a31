"""Training memory per GPU: `python -m calc memory MODEL [--gpu G] [--zero 3 --dp 64] ...`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from calc.commands._args import (
    ACTIVATIONS,
    Parser,
    activations,
    add_activations,
    add_format,
    add_formula,
    add_from,
    add_model,
    add_options,
    options,
    positive_int,
    require_model,
    show_formulas,
)
from calc.views import render


def parser() -> Parser:
    parser = Parser(
        prog="python -m calc memory",
        description="Training memory of the most loaded GPU: weights, gradients, optimizer "
                    "states (by precision recipe and ZeRO stage), activations (Korthikanti et al. "
                    "2022), against the GPU's memory, with the largest micro-batch that fits.")
    add_model(parser, optional=True)
    add_from(parser, "model, layout, recipe, fine-tuning and offload")
    parser.add_argument("--gpu", help="GPU catalogue name whose memory is the budget")
    parser.add_argument("--system", help="systems-catalogue name whose node host memory "
                                         "bounds an offload (default: the GPU's system)")
    parser.add_argument("--gpus", type=positive_int,
                        help="GPUs of the run: dp defaults to gpus / (tp × pp × cp)")
    add_options(parser, "layout", skip=(*ACTIVATIONS, "global_batch"))
    add_activations(parser)
    add_options(parser, "states", title="model states and margin")
    add_options(parser, "offload", title="offload (DeepSpeed ZeRO-Offload / ZeRO-Infinity)",
                skip=("nvme_read_gb_s", "nvme_write_gb_s"))
    add_options(parser, "finetune", title="fine-tuning")
    add_formula(parser)
    add_format(parser)
    return parser


def report(args: Any) -> Any:
    """The report `args` (parsed by `parser()`) asks for; args.model may be a Preset."""
    from calc.reports.memory import memory
    from calc.spec.layout import make_layout

    require_model(args)
    given = {**options(args, "layout", "states", "offload", "finetune"), **activations(args)}
    degrees = {k: given.get(k, 1) for k in ("tp", "pp", "cp")}
    if args.gpus is not None:  # the same rule as step's: dp is the GPUs left after tp, pp, cp
        given["dp"] = make_layout(args.gpus, **degrees, dp=given.get("dp"),
                                  global_batch=given.get("dp") or args.gpus).dp
    return memory(args.model, gpu=args.gpu, system=args.system, from_file=args.from_file,
                  **given)


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if show_formulas("memory", args):  # before the report's modules: --formula needs none
        return 0
    print(render(report(args), args.format, args.table), end="")
    return 0
