"""Shared helpers: run the CLI in-process and capture what a user would see."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

import pytest

import tests.draws  # noqa: F401  (loads the hypothesis profile before any test is collected)
from calc.cli import main

# One torch (OpenMP) thread per pytest-xdist worker: `-n auto` already starts a process per
# core, and each torch's default of a thread per core oversubscribes them, OpenMP's waiting
# threads spinning on the other's core (a 0.8 M-parameter training step of tests/test_bench.py
# took 28 s instead of 0.8 s beside a second busy process on 2 cores). Set before any test module
# imports torch, which reads it once; a single-process run keeps torch's default.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """cli("llama2-7b", "--tokens", "2e12") -> Result(code, out, err)."""

    def run(*argv: str) -> Result:
        code = main(list(argv))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


HEAVY = ("torch", "sympy", "numpy")


def heavy_imports(argv: tuple[str, ...], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """Run `python -m calc *argv` in a fresh interpreter (it must exit 0) and return the modules
    it imported that are one of `heavy` or inside one (default torch, sympy and numpy: the CLI's
    hot path should import none)."""
    code = "\n".join([
        "import json, runpy, sys",
        f"sys.argv = ['calc', *{argv!r}]",
        "try:",
        "    runpy.run_module('calc', run_name='__main__')",
        "except SystemExit as exit_:",
        "    assert exit_.code == 0",
        f"heavy = [m for m in sys.modules if any(m == h or m.startswith(h + '.') "
        f"for h in {heavy!r})]",
        "print(json.dumps(heavy))",
    ])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])
