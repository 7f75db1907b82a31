"""The CLI's verbs: `python -m calc VERB ...` runs calc.commands.VERB.run(argv).

The verbs are the modules of this package, so a new command is a new module with a
`run(argv) -> int` (and, by the layout's rule, calc/reports/VERB.py and calc/views/VERB.py
beside it); modules whose names start with "_" are helpers. When the first argument is not a
verb, it is a MODEL for the main report, `estimate`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence

MAIN = "estimate"


def verbs() -> list[str]:
    """Every command name, sorted (the module names; nothing is imported)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def run(argv: Sequence[str]) -> int:
    """Run the command `argv` names (the main report when argv[0] is not a verb)."""
    argv = [*argv]  # not list(): importing calc.commands.list binds `list` in this namespace
    verb = argv[0] if argv and argv[0] in verbs() else None
    module = importlib.import_module(f"{__name__}.{verb or MAIN}")
    return module.run(argv[1:] if verb else argv)
