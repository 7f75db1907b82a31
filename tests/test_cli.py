"""The CLI as a user meets it: the main command, the JSON contract, list/gpus, bad input."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

import calc
from tests.conftest import heavy_imports

MAIN = ("llama2-7b", "--tokens", "2e12", "--gpu", "a100")


def test_main_command_text(cli):
    result = cli(*MAIN)
    assert result.code == 0 and result.err == ""
    for expected in ("6,738,415,616", "GPU-hours", "184,320", "Notes:", "causal"):
        assert expected in result.out


def test_json_contract(cli):
    """DESIGN.md 'Output contract': these keys, with these values, for the main command."""
    data = cli(*MAIN, "--format", "json").json()
    p, f, t = data["params"], data["flops_per_token"], data["training"]
    assert p["total"] == 6_738_415_616 and p["active"] == p["total"]
    assert p["embedding"] == 131_072_000 and p["non_embedding"] == 6_476_271_616
    assert sum(p["components"].values()) == p["total"]
    assert (f["seq_len"], f["attention"]) == (4096, "causal")
    assert f["backward"] == 2 * f["forward"] and f["train"] == 3 * f["forward"]
    assert (t["tokens"], t["gpu"], t["dtype"], t["mfu"]) == (2e12, "a100", "bf16", 0.4)
    assert t["peak_flops"] == 312e12
    assert t["flops"] == pytest.approx(2e12 * f["train"], rel=1e-12)
    assert t["gpu_hours"] == pytest.approx(t["flops"] / (312e12 * 0.4) / 3600, rel=1e-12)
    assert t["published"]["gpu_hours"] == 184_320


def test_json_equals_library(cli):
    data = cli("mixtral-8x7b", "--tokens", "1e12", "--gpu", "h100", "--gpus", "512",
               "--seq-len", "8192", "--attention", "full", "--mfu", "0.35",
               "--format", "json").json()
    report = calc.estimate("mixtral-8x7b", tokens=1e12, gpu="h100", gpus=512, seq_len=8192,
                           attention="full", mfu=0.35)
    assert data == report.to_dict()
    assert data["training"]["mfu_source"] == "flag"
    assert data["training"]["days"] == pytest.approx(data["training"]["gpu_hours"] / 512 / 24)


def test_no_training_block_without_tokens(cli):
    data = cli("gpt2", "--format", "json").json()
    assert data["training"] is None


def test_set_changes_the_spec_and_drops_published_facts(cli):
    data = cli("chapter-char-gpt", "--set", "vocab_size=100", "--format", "json").json()
    assert data["params"]["total"] == 826_112 + 256 * 100
    assert data["params"]["published"] is None


@pytest.mark.parametrize("fmt, marker", [
    ("markdown", "| total"), ("latex", r"\begin{tabular}"), ("html", "<table>"),
    ("text", "Parameters"),
])
def test_formats(cli, fmt, marker):
    result = cli(*MAIN, "--format", fmt)
    assert result.code == 0 and marker in result.out


def test_csv_is_one_tidy_table(cli):
    """Issue 12: CSV was several tables in one stream; now one table, a line per value."""
    rows = list(csv.DictReader(io.StringIO(cli(*MAIN, "--format", "csv").out)))
    assert rows and all(set(row) == {"table", "row", "column", "value"} for row in rows)
    total = [r for r in rows if (r["table"], r["row"], r["column"]) ==
             ("parameters", "total", "total")]
    assert [r["value"] for r in total] == ["6738415616"]
    assert {r["table"] for r in rows} >= {"parameters", "flops-per-token", "training", "notes"}
    hours = next(r for r in rows if r["table"] == "training" and r["row"] == "GPU-hours")
    assert hours["column"] == "value"


def test_one_table_by_name(cli):
    only = cli(*MAIN, "--format", "csv", "--table", "parameters").out
    rows = list(csv.reader(io.StringIO(only)))
    assert rows[0] == ["component", "per layer", "layers", "total", "≈", "share"]
    assert ["total", "", "", "6738415616", "6738415616", "1.0"] in rows
    text = cli(*MAIN, "--table", "Flops per token").out
    assert text.startswith("FLOPs per token (T = 4,096") and "\nattention/kv " not in text
    bad = cli(*MAIN, "--table", "nope")
    assert bad.code == 2 and "parameters, flops-per-token, training-flops-per-token, training" \
        in bad.err
    assert cli(*MAIN, "--format", "json", "--table", "parameters").code == 2


def test_latex_is_ascii_and_balanced(cli):
    """Issue 12: --format latex must compile: formulas in $...$, every other character escaped
    or spelled in LaTeX (×, ≈, · have no glyph in plain pdflatex)."""
    for argv in (MAIN, ("llama2-7b", "--formula"), ("memory", "deepseek-v3", "--gpu", "h100"),
                 ("infer", "llama3.1-405b", "--gpu", "h100", "--gpus", "16"),
                 ("compare", "gpt2", "mixtral-8x7b"), ("gpus",), ("conventions", "gpt2")):
        out = cli(*argv, "--format", "latex").out
        assert out.isascii(), [ch for ch in out if not ch.isascii()][:5]
        body = "\n".join(line for line in out.splitlines() if not line.startswith("%"))
        assert body.count("\\begin{tabular}") == body.count("\\end{tabular}") >= 1
        unescaped = body.replace("\\$", "")
        assert unescaped.count("$") % 2 == 0
        assert unescaped.count("{") - unescaped.count("\\{") == \
            unescaped.count("}") - unescaped.count("\\}")


def test_text_fits_the_terminal(cli, monkeypatch):
    """Issue 12: tables reached 190 columns; prose columns (the rules' "assumes", notes) now
    wrap to the terminal's width, 100 when stdout is not a terminal."""
    import calc.tables

    def widest(argv: tuple[str, ...]) -> int:
        return max(len(line) for line in cli(*argv).out.splitlines())

    assert widest(MAIN) <= 100
    monkeypatch.setattr(calc.tables, "text_width", lambda: 80)
    narrow = cli(*MAIN).out
    assert widest(MAIN) < 100
    notes = narrow[narrow.index("Notes:"):].splitlines()
    assert max(len(line) for line in notes) <= 80
