"""The main report: `python -m calc MODEL [--tokens N] [--gpu NAME] ...`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from calc.cli import (
    COMMANDS,
    Parser,
    add_format,
    assignment,
    fraction,
    positive_int,
    positive_number,
)
from calc.render import render
from calc.spec import DTYPES


def _report_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="python -m calc",
        description="Parameters, FLOPs per token and training cost of a Transformer LM. "
                    f"Other commands: {', '.join(COMMANDS)}.")
    parser.add_argument("model", metavar="MODEL",
                        help="a preset name (python -m calc list), a spec file (TOML/JSON) "
                             "or a Hugging Face config.json")
    parser.add_argument("--tokens", type=positive_number,
                        help="training tokens, e.g. 2e12 or 2T")
    parser.add_argument("--gpu", help="GPU catalogue name (python -m calc gpus)")
    parser.add_argument("--gpus", type=positive_int, default=1,
                        help="GPUs the run is spread over (for days)")
    parser.add_argument("--mfu", type=fraction,
                        help="model FLOPs utilisation in (0, 1] (default 0.4)")
    parser.add_argument("--seq-len", type=positive_int,
                        help="context T (default: the model's training context)")
    parser.add_argument("--attention", default="causal", choices=("causal", "full"),
                        help="count attention over the causal triangle or the full square")
    parser.add_argument("--dtype", default="bf16", choices=DTYPES,
                        help="compute dtype whose dense peak is used (default bf16)")
    parser.add_argument("--set", dest="changes", action="append", type=assignment,
                        default=[], metavar="KEY=VALUE",
                        help="change a spec field, e.g. vocab_size=65 or attention.n_heads=16")
    parser.add_argument("--formula", action="store_true",
                        help="print the model's symbolic formulas (text/LaTeX) instead")
    add_format(parser)
    return parser


def run(argv: Sequence[str]) -> int:
    from calc.presets import Preset, load_model
    from calc.report import estimate

    args = _report_parser().parse_args(argv)
    preset: Preset = load_model(args.model)
    if args.changes:  # a changed spec: the published facts no longer describe it
        changes = dict(args.changes)
        described = ", ".join(f"{k}={v}" for k, v in changes.items())
        preset = Preset(name=preset.name, title=f"{preset.title} with {described}",
                        source=preset.source, spec=preset.spec.updated(**changes))
    if args.formula:
        from calc.formulas.display import formula_document

        print(formula_document(preset.spec, args.format), end="")
        return 0
    report = estimate(preset, tokens=args.tokens, gpu=args.gpu, seq_len=args.seq_len,
                      attention=args.attention, dtype=args.dtype, mfu=args.mfu, gpus=args.gpus)
    print(render(report, args.format), end="")
    return 0
