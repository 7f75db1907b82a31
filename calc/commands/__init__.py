"""One module per CLI command; calc.cli.COMMANDS maps each name to its `run`."""

from __future__ import annotations

import argparse


def show_formulas(command: str, args: argparse.Namespace) -> bool:
    """Print `command`'s formulas (calc.cli.add_formula's --formula) for args.model if any, in
    args.format; True when it did, and the command has nothing more to do."""
    if not args.formula:
        return False
    from calc.formulas.display import command_document  # sympy: only when asked

    print(command_document(command, getattr(args, "model", None), args.format), end="")
    return True
