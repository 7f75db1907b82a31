"""`python -m calc docs [--check]`: regenerate the tables in README.md and docs/*.md."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from calc.cli import Parser


def run(argv: Sequence[str]) -> int:
    from calc.docs import FILES, refresh

    parser = Parser(prog="python -m calc docs",
                    description=f"Rewrite every <!-- output: COMMAND --> block in "
                                f"{' and '.join(FILES)} with what COMMAND prints now.")
    parser.add_argument("--check", action="store_true",
                        help="rewrite nothing; exit 1 when a block is stale")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="the folder holding README.md and docs/ (default: here)")
    args = parser.parse_args(argv)
    seen, stale = refresh(args.root, check=args.check)
    for block in stale:
        verb = "is stale" if args.check else "rewritten"
        print(f"{block.path}: `{block.command}` {verb}")
    print(f"{seen} generated blocks, {len(stale)} {'stale' if args.check else 'rewritten'}")
    return 1 if args.check and stale else 0
