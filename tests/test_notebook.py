"""Notebook forms: tables in Jupyter, LaTeX formulas, dicts, DataFrames, lazy heavy imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import calc


def test_import_calc_stays_light():
    """numpy, pandas, matplotlib and sympy load only when a sweep, frame, plot or formula does."""
    code = ("import sys, calc; calc.estimate('llama2-7b'); "
            "print(sorted(m for m in ('numpy', 'pandas', 'matplotlib', 'sympy', 'torch') "
            "if m in sys.modules)); calc.sweep; print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[:2] == ["[]", "True"]


def test_lazy_names_are_exported():
    for name in ("compare", "Comparison", "conventions_table", "ConventionsTable", "sweep",
                 "Sweep", "model_formulas", "plot"):
        assert name in calc.__all__ and getattr(calc, name) is not None
    with pytest.raises(AttributeError):
        calc.no_such_thing  # noqa: B018


def test_dir_lists_the_lazy_names_without_loading_them():
    """Issue 17: dir(calc) showed none of the lazy API, so Jupyter's tab completion found
    nothing; it lists every lazy name of calc and calc.spec, and imports none of them."""
    code = ("import json, sys, calc, calc.spec; before = set(sys.modules); "
            "names = dir(calc), dir(calc.spec); "
            "print(json.dumps([*names, sorted(set(sys.modules) - before)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    top, spec, loaded = json.loads(out)
    assert set(calc._LAZY) | {"render", "__version__"} <= set(top) and top == sorted(top)
    assert {"estimate", "sweep", "ModelSpec", "memory", "plot"} <= set(top)
    assert set(calc.spec._LAZY) <= set(spec)
    assert loaded == []  # listing loads nothing


@pytest.mark.parametrize("make", [
    lambda: calc.estimate("llama2-7b", tokens=2e12, gpu="a100"),
    lambda: calc.compare(["gpt2", "llama2-7b"], tokens=1e12, gpu="h100"),
    lambda: calc.conventions_table("mixtral-8x7b"),
    lambda: calc.sweep("gpt2", n_layers=[6, 12]),
])
def test_reports_render_in_jupyter(make):
    report = make()
    markdown, html = report._repr_markdown_(), report._repr_html_()
    assert markdown.startswith("## ") and "|" in markdown
    assert "<table>" in html and "<li>" in html  # the conventions under the table
    assert isinstance(report.to_dict(), dict)


def test_formulas_render_as_latex():
    formulas = calc.model_formulas("llama2-7b")
    total = formulas["params total"]
    assert total.value == 6_738_415_616
    assert total._repr_latex_().startswith("$\\text{params total} = ")
    assert "6{,}738{,}415{,}616" in total._repr_latex_()
    assert "d_{qk}" in formulas._repr_latex_() and "\\begin{aligned}" in formulas._repr_latex_()
    data = formulas.to_dict()
    assert data["formulas"]["params total"]["value"] == 6_738_415_616
    assert data["symbols"]["d"].startswith("model")


def test_dataframes():
    pandas = pytest.importorskip("pandas")
    report = calc.estimate("llama2-7b", tokens=2e12, gpu="a100")
    frame = report.to_dataframe()
    assert frame.loc["llama2-7b", "params.total"] == 6_738_415_616
    assert frame.loc["llama2-7b", "training.gpu_hours"] == report.training.gpu_hours
    # issue 12: every column was `object`, with "yes"/"no" strings; now each has its type
    assert frame["params.total"].dtype == "int64"
    assert frame["training.gpu_hours"].dtype == "float64"
    assert frame["spec.tie_embeddings"].dtype == "bool"
    assert str(frame["model"].dtype) == "string"
    both = pandas.concat([report.to_dataframe(), calc.estimate("gpt2").to_dataframe()])
    assert list(both.index) == ["llama2-7b", "gpt2"]
    assert both["params.total"].dtype == "int64"
    comparison = calc.compare(["gpt2", "llama2-7b"], gpu="h100")
    table = comparison.to_dataframe()
    assert table.loc["llama2-7b", "params.total"] == 6_738_415_616
    assert isinstance(table, pandas.DataFrame) and table.index.name == "model"
    assert table["params.total"].dtype == "int64"
    assert table["memory.fits"].dtype == "bool"
    moe = calc.compare(["gpt2", "mixtral-8x7b"]).to_dataframe()  # a dense model has no experts
    assert str(moe["spec.experts_per_token"].dtype) == "string"
    assert list(table["memory.fits"]) == [True, False]
    rows = calc.compare(["gpt2", "llama2-7b"], layout="rows").to_dataframe()
    assert rows.loc["gpt2", "params.total"] == 124_439_808
    rules = calc.conventions_table("llama2-7b").to_dataframe()
    assert rules.loc["exact-causal", "vs_causal"] == 1.0
