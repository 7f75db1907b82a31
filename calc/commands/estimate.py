"""The main report: `python -m calc [estimate] MODEL [--tokens N] [--gpu NAME] ...`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from calc import __version__
from calc.commands import EXAMPLES, verbs
from calc.commands._args import (
    Parser,
    add_format,
    add_formula,
    add_model,
    add_options,
    add_workload,
    assignment,
    options,
    workload,
)
from calc.views import render


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="python -m calc",
        description="Parameters, FLOPs per token and training cost of a Transformer LM. "
                    f"Other commands: {', '.join(v for v in verbs() if v != 'estimate')}.",
        epilog="\n".join(f"  {command}" for command, _ in EXAMPLES),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"calc {__version__}")
    add_model(parser)
    add_workload(parser)
    layout = parser.add_argument_group("layout (the tokens at the MFU calc step predicts)")
    add_options(layout, "layout", skip=("seq_len", "dtype"))
    layout.add_argument("--system", help="named system for the predicted step time (default: "
                                         "the GPU's reference system)")
    parser.add_argument("--search-layout", action="store_true",
                        help="price the tokens at the MFU calc step predicts for the fastest "
                             "layout that fits (calc layout), beside the default MFU")
    parser.add_argument("--set", dest="changes", action="append", type=assignment,
                        default=[], metavar="KEY=VALUE",
                        help="change a spec field, e.g. vocab_size=65 or attention.n_heads=16")
    add_options(parser, "finetune", title="fine-tuning",
                only=("finetune", "lora_rank", "lora_targets"))
    add_options(parser, "states", only=("precision",))
    add_formula(parser)
    add_format(parser)
    return parser


def report(args: argparse.Namespace) -> Any:
    """The report `args` (parsed by `parser()`) asks for; args.model may be a Preset (calc.web's
    pasted config.json)."""
    from calc.presets import Preset, resolve
    from calc.reports.estimate import estimate

    preset: Preset = resolve(args.model)
    if args.changes:  # a changed spec: the published facts no longer describe it
        changes = dict(args.changes)
        described = ", ".join(f"{k}={v}" for k, v in changes.items())
        preset = Preset(name=preset.name, title=f"{preset.title} with {described}",
                        source=preset.source, spec=preset.spec.updated(**changes),
                        notes=preset.notes)
    if args.formula:
        from calc.reports.formulas import model_formulas  # sympy: only when asked

        return model_formulas(preset)
    return estimate(preset, **workload(args), system=args.system,
                    search_layout=args.search_layout,
                    **options(args, "layout", "finetune", "states"))


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    print(render(report(args), args.format, args.table), end="")
    return 0
