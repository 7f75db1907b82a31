"""Shared helpers: run the CLI in-process and capture what a user would see."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from calc.cli import main


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
