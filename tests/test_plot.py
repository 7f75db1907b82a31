"""Plots render (when matplotlib, the `plot` extra, is installed) and refuse bad input."""

from __future__ import annotations

import pytest

import calc
from calc.errors import CalcError

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("kind, models", [
    ("context", ["gpt2", "mistral-7b"]),
    ("params", ["gpt2", "mixtral-8x7b", "deepseek-v3"]),
    ("mfu", ["llama2-7b"]),
])
def test_each_kind_renders(tmp_path, kind, models):
    pytest.importorskip("matplotlib")
    path = tmp_path / f"{kind}.png"
    figure = calc.plot(kind, models, path)
    assert path.read_bytes().startswith(PNG) and path.stat().st_size > 10_000
    assert len(figure.axes) >= 1


def test_mfu_plot_marks_the_published_run():
    pytest.importorskip("matplotlib")
    figure = calc.plot("mfu", "llama2-7b", gpus=["a100", "h100"])
    labels = [line.get_label() for line in figure.axes[0].get_lines()]
    assert labels[:2] == ["a100", "h100"] and any("184,320" in label for label in labels)
    texts = [t.get_text() for t in figure.axes[0].texts]
    assert any("implied MFU 41.4 %" in text for text in texts)  # README: 0.414


def test_cli_plot(tmp_path, cli):
    pytest.importorskip("matplotlib")
    out = tmp_path / "p.png"
    result = cli("plot", "params", "llama2-7b", "-o", str(out))
    assert result.code == 0 and out.read_bytes().startswith(PNG)


@pytest.mark.parametrize("argv, message", [
    (("plot", "pie", "gpt2", "-o", "x.png"), "invalid choice"),
    (("plot", "mfu", "gpt2", "-o", "x.png", "--gpu", "v100"), "has a dense bf16 peak"),
    (("plot", "context", "gpt2"), "-o/--output"),
])
def test_cli_plot_bad_input(cli, argv, message):
    pytest.importorskip("matplotlib")
    result = cli(*argv)
    assert result.code == 2 and message in result.err


def test_unknown_kind():
    with pytest.raises(CalcError, match="plot kind"):
        calc.plot("pie", "gpt2")


def test_serve_plot_draws_a_curve_per_layout_and_the_target(tmp_path, cli):
    pytest.importorskip("matplotlib")
    out = tmp_path / "serve.png"
    result = cli("plot", "serve", "llama3.1-70b", "--gpu", "h100", "--gpus", "8",
                 "--tpot-ms", "50", "-o", str(out))
    assert result.code == 0 and out.read_bytes().startswith(PNG)
    figure = calc.plot("serve", "llama3.1-70b", gpu="h100", gpus=8, tpot_ms=50)
    lines = figure.axes[0].get_lines()
    labels = [line.get_label() for line in lines]
    assert labels == ["4 × tp2", "2 × tp4", "1 × tp8", "TPOT target 50 ms"]
    for line in lines[:3]:  # throughput per GPU and TPOT both grow with concurrency
        x, y = line.get_xdata(), line.get_ydata()
        assert list(x) == sorted(x) and list(y) == sorted(y) and len(x) >= 5


def test_layout_plot_draws_the_search_the_limit_and_the_choice(tmp_path, cli):
    """Issue 19: every searched layout as step time against memory per GPU, the GPU's memory,
    the limit less the chosen layout's margin, the chosen layout marked (calc.layout's best)."""
    pytest.importorskip("matplotlib")
    options = dict(gpu="h100", gpus=16, global_batch=64)
    figure = calc.plot("layout", "llama2-7b", **options)
    ax = figure.axes[0]
    best = calc.layout("llama2-7b", gpu="h100", gpus=16, global_batch=64).best[0]
    star = next(line for line in ax.get_lines() if line.get_label().startswith("chosen"))
    assert star.get_xdata()[0] == pytest.approx(best.memory_per_gpu_bytes / 2**30)
    assert star.get_ydata()[0] == pytest.approx(best.step_time_s)
    limits = sorted(line.get_xdata()[0] for line in ax.get_lines()[:2])
    assert limits == pytest.approx([80 - best.memory_margin_bytes / 2**30, 80])
    labels = [collection.get_label() for collection in ax.collections]
    assert any(label.startswith("fits") for label in labels)
    out = tmp_path / "layout.png"
    result = cli("plot", "layout", "llama2-7b", "--gpu", "h100", "--gpus", "16",
                 "--global-batch", "64", "--tp", "1,2", "-o", str(out))
    assert result.code == 0, result.err
    assert out.read_bytes().startswith(PNG)
    with pytest.raises(CalcError, match="give one MODEL, one --gpu and --gpus"):
        calc.plot("layout", "llama2-7b", gpu="h100", global_batch=64)
