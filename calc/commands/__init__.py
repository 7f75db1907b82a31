"""The CLI's verbs: `python -m calc VERB ...` runs calc.commands.VERB.run(argv).

The verbs are the modules of this package, so a new command is a new module with a
`run(argv) -> int` (and, by the layout's rule, calc/reports/VERB.py and calc/views/VERB.py
beside it); modules whose names start with "_" are helpers. When the first argument is not a
verb, it is a MODEL for the main report, `estimate`; with no argument, the usage and examples.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence

MAIN = "estimate"

# What `python -m calc` alone prints (and --help's epilog): each line runs as it is
# (tests/test_cli.py runs every one).
EXAMPLES = (
    ("python -m calc llama2-7b --tokens 2e12 --gpu a100", "parameters, FLOPs, GPU-hours"),
    ("python -m calc compare llama2-7b mistral-7b --tokens 1e12 --gpu h100",
     "models side by side"),
    ("python -m calc memory llama2-70b --gpu h100 --zero 3 --dp 64 --recompute full",
     "training memory per GPU"),
    ("python -m calc infer llama3.1-405b --gpu h100 --gpus 16", "serving: KV cache, tokens/s"),
    ("python -m calc optimal --flops 1e24", "compute-optimal size"),
    ("python -m calc list", "the presets (a config.json or spec file works too)"),
    ("python -m calc gpus", "the GPU catalogue"),
)


def usage() -> str:
    """The usage line, the examples and the verbs."""
    lines = "\n".join(f"  {what}:\n    {command}" for command, what in EXAMPLES)
    return (f"usage: python -m calc MODEL [options]   or   python -m calc VERB [options]\n\n"
            f"examples:\n{lines}\n\n"
            f"verbs: {', '.join(v for v in verbs() if v != MAIN)}\n"
            f"python -m calc --help (or VERB --help) for the options; --version for the "
            f"version.\n")


def verbs() -> list[str]:
    """Every command name, sorted (the module names; nothing is imported). The folder's .py
    files, read directly: pkgutil, which would say the same of this folder of plain modules,
    costs more to import than the listing does (bench/startup.py)."""
    return sorted({name.removesuffix(".py") for folder in __path__ for name in os.listdir(folder)
                   if name.endswith(".py") and not name.startswith("_")})


def run(argv: Sequence[str]) -> int:
    """Run the command `argv` names (the main report when argv[0] is not a verb)."""
    argv = [*argv]  # not list(): importing calc.commands.list binds `list` in this namespace
    if not argv:
        print(usage(), end="")
        return 0
    if argv[0] in ("--version", "-V"):
        from calc import __version__

        print(f"calc {__version__}")
        return 0
    verb = argv[0] if argv and argv[0] in verbs() else None
    module = importlib.import_module(f"{__name__}.{verb or MAIN}")
    return module.run(argv[1:] if verb else argv)
