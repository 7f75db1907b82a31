"""`python -m calc compare A B C … [--tokens N --gpu G ...]`: models side by side."""

from __future__ import annotations

from collections.abc import Sequence

from calc.commands._args import (
    Parser,
    activations,
    add_activations,
    add_format,
    add_workload,
    positive_int,
    workload,
)
from calc.views import render


def run(argv: Sequence[str]) -> int:
    from calc.presets import list_presets
    from calc.reports.compare import ROW_GROUPS, compare

    groups = ", ".join(group.key for group in ROW_GROUPS)
    parser = Parser(prog="python -m calc compare",
                    description="Models side by side: parameters, FLOPs per token, training "
                                "cost; one column per model, the numbers of each model's "
                                "own report (python -m calc MODEL).")
    parser.add_argument("models", metavar="MODEL", nargs="*",
                        help="preset names (python -m calc list) or spec files")
    parser.add_argument("--all", action="store_true", help="every preset, smallest first")
    parser.add_argument("--groups", type=lambda text: [g.strip() for g in text.split(",")],
                        help=f"row groups to show, comma-separated (default all: {groups})")
    parser.add_argument("--rows", action="store_true",
                        help="one row per model instead of one column (a catalogue)")
    add_workload(parser)
    parser.add_argument("--search-layout", action="store_true",
                        help="also price the tokens at the MFU calc step predicts for each "
                             "model's fastest layout that fits (calc layout)")
    parser.add_argument("--global-batch", type=positive_int,
                        help="with --search-layout: sequences per step (default: one per GPU)")
    parser.add_argument("--system", help="named system for the predicted step time")
    add_activations(parser)
    add_format(parser)
    args = parser.parse_args(argv)
    if args.all == bool(args.models):
        parser.error("MODEL: give models to compare, or --all (not both)")
    models = args.models or _by_size(list_presets())
    comparison = compare(models, groups=args.groups, layout="rows" if args.rows else "columns",
                         system=args.system, global_batch=args.global_batch,
                         search_layout=args.search_layout, memory=activations(args),
                         **workload(args))
    print(render(comparison, args.format, args.table), end="")
    return 0


def _by_size(names: list[str]) -> list[str]:
    from calc.reports.catalog import preset_catalogue

    order = [row.name for row in preset_catalogue().presets]  # sorted by parameters
    return [name for name in order if name in names]
