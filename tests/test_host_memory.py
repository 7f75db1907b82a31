"""Runs too big for the machine are refused up front with one line (issue 12: `bench
llama3.1-405b` was killed after 96 s with exit 137; `verify llama2-7b --device cpu` under a
limit ended in an "internal error ... DefaultCPUAllocator", exit 1)."""

from __future__ import annotations

import pytest

import calc.host
from calc.errors import CalcError
from calc.host import available_memory, memory_errors, require_memory

torch = pytest.importorskip("torch")

GIB = 2**30


@pytest.fixture
def small_machine(monkeypatch):
    """A machine with 8 GiB free, where building a model is a test failure."""
    monkeypatch.setattr(calc.host, "available_memory", lambda: 8 * GIB)

    def never(*args, **kwargs):
        raise AssertionError("built a model the machine cannot hold")

    monkeypatch.setattr("calc.verify.model.build", never)
    monkeypatch.setattr("calc.verify.bench.training_step", never)


def test_bench_of_a_model_bigger_than_ram_is_refused(cli, small_machine):
    result = cli("bench", "llama3.1-405b")
    assert result.code == 2 and result.err.count("\n") == 1
    assert "needs at least" in result.err and "8.0 GiB free" in result.err
    assert "verify llama3.1-405b" in result.err  # the meta-device alternative


def test_verify_on_cpu_of_a_model_bigger_than_ram_is_refused(cli, small_machine):
    result = cli("verify", "llama2-7b", "--device", "cpu")
    # 6,738,415,616 parameters × 8 bytes = 50.2 GiB
    assert result.code == 2 and "needs at least 50.2 GiB" in result.err
    assert "--device meta" in result.err and result.err.count("\n") == 1


def test_a_small_model_still_runs(cli, monkeypatch):
    monkeypatch.setattr(calc.host, "available_memory", lambda: 8 * GIB)
    assert cli("verify", "chapter-char-gpt", "--device", "cpu", "--seq-len", "8").code == 0


def test_running_out_anyway_is_one_line():
    with pytest.raises(CalcError, match="ran out of memory; try less"):
        with memory_errors("the thing", "try less"):
            raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: not "
                               "enough memory: you tried to allocate 1000 bytes.")
    with pytest.raises(CalcError):
        with memory_errors("the thing", "try less"):
            raise MemoryError
    with pytest.raises(RuntimeError, match="a bug"):  # other errors pass through
        with memory_errors("the thing", "try less"):
            raise RuntimeError("a bug")


def test_this_machine_reports_some_memory():
    left = available_memory()
    assert left is None or left > 0
    require_memory(1, "one byte", "")  # never refused
    with pytest.raises(CalcError, match=r"needs at least 2\.0 GiB but this machine has 1\.0 GiB"):
        require_memory(2 * GIB, "x", "y", available=GIB)
