"""Files calc writes: checked before the work, never overwritten unless forced, and written
through a temporary file (issue 12: `bench --save /nonexistent/x.json` ran the benchmark and
then lost it; `plot -o` and `bench --save` overwrote files silently; `plot -o DIR` wrote DIR.png
and reported DIR)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import calc
from calc.errors import CalcError
from calc.files import output_path, write_atomic

PNG = b"\x89PNG\r\n\x1a\n"


def _one_line_error(result, message):
    assert result.code == 2 and result.out == "", result
    assert message in result.err and result.err.count("\n") == 1


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if the expensive part starts: the path must be refused first."""
    def refuse(*args, **kwargs):
        raise AssertionError("the work started before the output path was checked")

    import calc.reports.bench
    import calc.views.plot
    monkeypatch.setattr(calc.reports.bench, "bench", refuse)
    monkeypatch.setattr(calc.views.plot, "figure_class", refuse)  # before any figure is drawn


def test_bench_save_into_a_missing_folder_is_refused_before_measuring(cli, no_work):
    result = cli("bench", "--save", "/nonexistent/x.json")
    _one_line_error(result, "the folder '/nonexistent' does not exist")


def test_bench_save_does_not_overwrite(cli, no_work, tmp_path):
    saved = tmp_path / "b.json"
    saved.write_text("keep me")
    _one_line_error(cli("bench", "--save", str(saved)), "already exists; add --force")
    assert saved.read_text() == "keep me"
    _one_line_error(cli("bench", "--save", str(tmp_path)), "is a folder")


def test_bench_save_with_force_replaces_the_file(cli, monkeypatch, tmp_path):
    import calc.reports.bench

    report = calc.reports.bench.BenchReport.model_validate(_BENCH)
    monkeypatch.setattr(calc.reports.bench, "bench", lambda *args: report)
    monkeypatch.setattr("calc.commands.bench.require_torch", lambda command: None)
    saved = tmp_path / "b.json"
    saved.write_text("old")
    assert cli("bench", "--save", str(saved), "--force", "--format", "json").code == 0
    assert calc.reports.bench.load_bench(str(saved)) == report
    assert [p.name for p in tmp_path.iterdir()] == ["b.json"]  # no temporary left behind


@pytest.mark.parametrize("name, message", [
    ("x.txt", "'.txt' is not a format calc writes here; use .png, .svg, .pdf"),
    ("missing/p.png", "does not exist"),
])
def test_plot_paths_are_checked_first(cli, no_work, tmp_path, name, message):
    _one_line_error(cli("plot", "params", "gpt2", "-o", str(tmp_path / name)), message)


def test_plot_refuses_a_folder_and_an_existing_file(cli, no_work, tmp_path):
    _one_line_error(cli("plot", "params", "gpt2", "-o", str(tmp_path)), "is a folder")
    image = tmp_path / "p.png"
    image.write_bytes(b"old image")
    _one_line_error(cli("plot", "params", "gpt2", "-o", str(image)), "already exists")
    assert image.read_bytes() == b"old image"


def test_plot_reports_the_path_it_wrote_and_forces(cli, tmp_path):
    pytest.importorskip("matplotlib")
    result = cli("plot", "params", "gpt2", "-o", str(tmp_path / "p"))
    written = tmp_path / "p.png"
    assert result.code == 0 and result.out == f"wrote {written}\n"
    assert written.read_bytes().startswith(PNG)
    _one_line_error(cli("plot", "params", "gpt2", "-o", str(written)), "already exists")
    written.write_bytes(b"old")
    assert cli("plot", "params", "gpt2", "-o", str(written), "--force").code == 0
    assert written.read_bytes().startswith(PNG)


def test_library_plot_keeps_an_existing_file(tmp_path):
    image = tmp_path / "p.png"
    image.write_bytes(b"old")
    with pytest.raises(CalcError, match="add force=True"):
        calc.plot("params", "gpt2", image)
    assert image.read_bytes() == b"old"


def test_an_interrupted_write_leaves_the_old_file_whole(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("the old, whole file")

    def half_then_crash(temporary: Path) -> None:
        temporary.write_text("half of the new")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, half_then_crash)
    assert path.read_text() == "the old, whole file"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
    write_atomic(path, "new")
    assert path.read_text() == "new"


def test_write_atomic_keeps_permissions(tmp_path):
    path = tmp_path / "x"
    path.write_text("a")
    path.chmod(0o640)
    write_atomic(path, b"b")
    assert path.read_bytes() == b"b" and (path.stat().st_mode & 0o777) == 0o640


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_output_path_refuses_a_read_only_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    with pytest.raises(CalcError, match="cannot be written"):
        output_path(folder / "x.json", "--save")


def test_docs_outside_a_checkout_is_an_error(cli, tmp_path):
    _one_line_error(cli("docs", "--root", str(tmp_path)), "no <!-- output: blocks")
    (tmp_path / "README.md").write_text("# no blocks here\n")
    _one_line_error(cli("docs", "--check", "--root", str(tmp_path)), "no <!-- output: blocks")


_BENCH = {
    "device": {"kind": "cpu", "name": "test CPU", "cores": 2, "threads": 2, "gpu": None},
    "dtype": "fp32", "peak_flops": None,
    "matmul": {"size": 64, "dtype": "fp32", "repeats": 3, "median_seconds": 1e-4,
               "flops": 524288.0, "flops_per_second": 5.24288e9},
    "step": {"model": "chapter-char-gpt", "params": 1, "batch": 1, "seq_len": 8, "repeats": 5,
             "median_seconds": 0.01, "tokens_per_second": 800.0, "model_flops": 1e6,
             "executed_flops": 1e6, "achieved_flops_per_second": 1e8, "mfu_vs_peak": None,
             "mfu_vs_ceiling": 0.02, "predicted_seconds_at_peak": None,
             "predicted_seconds_at_ceiling": 2e-4},
    "date": "2026-01-01", "torch_version": "2.13.0", "conventions": [],
}
