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
    """The JSON contract of the main command: these keys, with these values."""
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


def test_csv_is_parseable(cli):
    rows = list(csv.reader(io.StringIO(cli(*MAIN, "--format", "csv").out)))
    totals = [row for row in rows if row and row[0] == "total"]
    assert totals and totals[0][3] == "6738415616"


def test_list_and_gpus(cli):
    listing = cli("list")
    assert listing.code == 0
    for name in calc.list_presets():
        assert name in listing.out
    gpus = cli("gpus", "--format", "json").json()
    assert {g["name"] for g in gpus["gpus"]} >= {"a100", "h100", "tpu-v5p", "mi300x"}


def test_formula_text_and_latex(cli):
    text = cli("llama2-7b", "--formula")
    assert text.code == 0 and "L*d*d_qk*h" in text.out
    latex = cli("llama2-7b", "--formula", "--format", "latex")
    assert "d_{qk}" in latex.out
    data = cli("llama2-7b", "--formula", "--format", "json").json()
    assert data["formulas"]["params total"]["value"] == 6_738_415_616


BAD = [
    (("no-such-model",), "unknown model 'no-such-model'"),
    (("llama2-7",), "llama2-7b"),
    (("llama2-7b", "--gpu", "a10"), "did you mean a100"),
    (("llama2-7b", "--tokens", "abc"), "--tokens: 'abc' is not a number"),
    (("llama2-7b", "--tokens", "-5"), "--tokens"),
    (("llama2-7b", "--tokens", "0"), "--tokens"),
    (("llama2-7b", "--tokens", "nan"), "--tokens"),
    (("llama2-7b", "--tokens", "inf"), "--tokens"),
    (("llama2-7b", "--mfu", "1.5"), "--mfu"),
    (("llama2-7b", "--mfu", "0"), "--mfu"),
    (("llama2-7b", "--mfu", "nan"), "--mfu"),
    (("llama2-7b", "--gpus", "1.5"), "--gpus"),
    (("llama2-7b", "--gpus", "0"), "--gpus"),
    (("llama2-7b", "--attention", "sparse"), "--attention: invalid choice"),
    (("llama2-7b", "--format", "yaml"), "--format: invalid choice"),
    (("llama2-7b", "--seq-len", "-1"), "--seq-len"),
    (("gpt2", "--seq-len", "4096"), "learned position table of 1024"),
    (("llama2-7b", "--tokens", "2e12", "--gpu", "v100"), "no dense bf16 peak"),
    (("llama2-7b", "--set", "attention.n_kv_heads=5"), "n_kv_heads=5 must divide"),
    (("mixtral-8x7b", "--set", "moe.top_k=9"), "top_k=9 must not exceed"),
    (("llama2-7b", "--set", "d_model=-4"), "d_model"),
    (("llama2-7b", "--set", "nonsense"), "KEY=VALUE"),
    ((), "MODEL"),
]


@pytest.mark.parametrize("argv, message", BAD)
def test_bad_input_is_one_line_and_exit_2(cli, argv, message):
    result = cli(*argv)
    assert result.code == 2 and result.out == ""
    assert message in result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


_REST = ('n_layers = 1\ncontext_length = 8\nffn = { activation = "gelu", d_ff = 4 }\n'
         'position = { kind = "rope" }\n')
SPEC_FILES = [
    ("empty.toml", "", "is empty"),
    ("bad.toml", "vocab_size = [", "not valid TOML"),
    ("bad.json", '{"vocab_size": 1', "not valid JSON"),
    ("list.json", "[1, 2]", "holds a list"),
    ("heads.toml", "vocab_size = 10\nd_model = 100\nattention = { n_heads = 3 }\n" + _REST,
     "n_heads=3 does not divide d_model=100"),
    ("negative.toml", "vocab_size = -10\nd_model = 8\nattention = { n_heads = 2 }\n" + _REST,
     "vocab_size"),
]


@pytest.mark.parametrize("name, text, message", SPEC_FILES)
def test_bad_spec_files(cli, tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    result = cli(str(path))
    assert result.code == 2 and message in result.err and result.err.count("\n") == 1


def test_missing_file_and_directory(cli, tmp_path):
    assert "does not exist" in cli(str(tmp_path / "nope.toml")).err
    assert "is a directory" in cli(str(tmp_path)).err


def test_spec_file_in_preset_layout(cli, tmp_path):
    source = Path(calc.presets._data_dir() / "models" / "llama2-7b.toml").read_text()
    path = tmp_path / "mine.toml"
    path.write_text(source)
    assert cli(str(path), "--format", "json").json()["params"]["total"] == 6_738_415_616


def test_module_entry_point_runs_without_torch_or_sympy():
    """`python -m calc` as a user runs it: the report path imports neither torch nor sympy."""
    assert heavy_imports(MAIN) == []
