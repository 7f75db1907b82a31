"""`python -m calc conventions MODEL [--seq-len T]`: FLOPs per token under every rule."""

from __future__ import annotations

from collections.abc import Sequence

from calc.commands._args import Parser, add_format, number, positive_int
from calc.counting import DEFAULT_MFU
from calc.views import render


def run(argv: Sequence[str]) -> int:
    from calc.reports.conventions import conventions_table

    parser = Parser(prog="python -m calc conventions",
                    description="One model's training FLOPs per token under every published "
                                "rule (6N, Kaplan, PaLM, Megatron, Chinchilla) and calc's exact "
                                "count (causal and full attention), with the spread and the "
                                "MFU each rule would report for the same run.")
    parser.add_argument("model", metavar="MODEL",
                        help="a preset name (python -m calc list) or a spec file")
    parser.add_argument("--seq-len", type=positive_int,
                        help="context T (default: the model's training context)")
    parser.add_argument("--mfu", type=number("mfu"),
                        help=f"the run's MFU by calc's exact causal count (default "
                             f"{DEFAULT_MFU:g})")
    add_format(parser)
    args = parser.parse_args(argv)
    table = conventions_table(args.model, seq_len=args.seq_len, mfu=args.mfu)
    print(render(table, args.format, args.table), end="")
    return 0
