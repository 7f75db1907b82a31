"""The CLI as a user meets it: the main command, the JSON contract, list/gpus, bad input."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import pytest

import calc
from tests.conftest import HEAVY, heavy_imports

MAIN = ("llama2-7b", "--tokens", "2e12", "--gpu", "a100")


def test_main_command_text(cli):
    result = cli(*MAIN)
    assert result.code == 0 and result.err == ""
    for expected in ("6,738,415,616", "GPU-hours", "184,320", "Notes:", "causal"):
        assert expected in result.out


def test_flag_table_is_fresh():
    """calc/commands/_flags.py holds each run option's flag as its field says (the parsers read
    it rather than build the schemas); regenerate with `python -m calc.commands._args`."""
    from calc.commands import _args

    assert (Path(_args.__file__).with_name("_flags.py").read_text(encoding="utf-8")
            == _args.flags_source())
    from calc.commands._flags import FLAGS

    assert FLAGS == _args.flag_table()
    from typing import get_args

    from calc.spec.gemm_precision import GemmPrecision

    assert FLAGS["states"]["precision"][:2] == ("choices", get_args(GemmPrecision))
    assert FLAGS["finetune"]["lora_rank"][0] == "int"  # the option is the field's alias


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


@pytest.mark.parametrize("columns", [250, 160])
def test_text_takes_the_columns_a_terminal_gives(cli, monkeypatch, columns):
    """Issue 17: with COLUMNS=250 on a terminal, text stopped at ~124 columns (prose wrapped
    at 60 and notes at 100 whatever the width); now a wider terminal widens them."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", str(columns))
    lines = cli(*MAIN).out.splitlines()
    assert 124 < max(map(len, lines)) <= columns
    notes = lines[lines.index("Notes:") + 1:]
    assert max(map(len, notes)) > 124  # a note is one line where it fits
    assert any(line.endswith("N = all (active) parameters, embeddings included; attention "
                             "ignored") for line in lines)  # a rule's "assumes", unwrapped


@pytest.mark.parametrize("fmt, title", [("text", "Training"), ("markdown", "### Training"),
                                         ("latex", "% Training"), ("html", "<h3>Training</h3>")])
def test_one_table_has_its_title_once(cli, fmt, title):
    """Issue 17: `--table training` printed the title twice (as the document's and the
    table's)."""
    lines = cli(*MAIN, "--table", "training", "--format", fmt).out.splitlines()
    assert lines[0] == title and lines.count(title) == 1
    assert any("GPU-hours" in line for line in lines)


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
    (("llama2-7b", "--gpu", "a1000"), "did you mean a100"),
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
    (("mixtral-8x7b", "--set", "moe.n_zero_experts=3"),
     "moe.n_zero_experts=3: a token's expected FFN experts top_k·E/(E + n_zero_experts) = "
     "2·8/11 must be a whole number"),
    (("mixtral-8x7b", "--set", "moe.shortcut=true"),
     "moe.shortcut: MoE layer 0 needs a dense layer after it, whose FFN its experts' output "
     "joins (layer 1 is moe)"),
    (("llama2-7b", "--set", "d_model=-4"), "d_model"),
    (("llama2-7b", "--set", "output_vocab_size=32000"),
     "output_vocab_size=32000 must be below vocab_size=32000"),
    (("gpt2", "--set", "output_vocab_size=50000"),
     "output_vocab_size=50000 with tie_embeddings=True: a tied LM head is the embedding's"),
    (("llama2-7b", "--set", "nonsense"), "KEY=VALUE"),
    (("llama2-7b", "--tokens", "2e12", "--gpu", "a100", "--mfu", "1e-300"),
     "--mfu: '1e-300' is outside [0.001, 1]"),
    (("llama2-7b", "--tokens", "2e12", "--gpu", "a100", "--mfu", "1e-320"), "--mfu"),
    (("llama2-7b", "--tokens", "1e-5"), "--tokens: '1e-5' is outside [1, 1e18]"),
    (("llama2-7b", "--tokens", "1e300"), "--tokens"),
    (("llama2-7b", "--tokens", "2X"), "--tokens: '2X' is not a number"),
    (("optimal", "--flops", "abc"), "--flops: 'abc' is not a number"),
    (("optimal", "--gpu", "h100", "--days", "0"), "--days"),
    (("infer", "llama2-7b", "--gpu", "h100", "--mbu", "0"), "--mbu"),
    (("infer", "llama2-7b", "--gpu", "h100", "--mfu", "2"), "--mfu"),
    (("--tokens", "2e12"), "MODEL"),
    (("llama2-7b", "--table", "nope"), "--table 'nope': this report's tables are parameters"),
    (("memory", "llama2-7b", "--tp", "3"), "tp=3 does not divide the 32 attention heads"),
    (("memory", "llama2-7b", "--no-such-flag"), "unrecognized arguments: --no-such-flag"),
    (("infer", "llama2-7b", "--gpu", "h100", "--context", "0"), "--context"),
    (("compare", "gpt2", "--groups", "shapes"), "groups: unknown 'shapes'"),
    (("verify", "llama2-7b", "--device", "gpu"), "--device: invalid choice"),
    (("plot", "params", "gpt2", "-o", "/nonexistent/x.png"), "does not exist"),
    (("bench", "--save", "/nonexistent/x.json"), "does not exist"),
    (("docs", "--root", "/nonexistent"), "no <!-- output: blocks"),
    (("LLAMA2-7", "--tokens", "2e12"), "did you mean llama2-7b"),
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
    """`python -m calc` as a user runs it: the report path imports neither torch nor sympy,
    nor what a preset name does not need (bench/startup.py): the config readers, the formulas,
    the step-time model, pandas, and tabulate (the text tables are calc.tables.simple_table)."""
    assert heavy_imports(MAIN, (*HEAVY, "pandas", "matplotlib", "transformers", "tabulate",
                                "calc.hf", "calc.formulas", "calc.timing", "calc.sweeps",
                                "calc.verify", "calc.trainers")) == []


def test_no_arguments_print_usage_with_examples_that_run(cli):
    """Issue 12: `python -m calc` alone was an error; it shows what to type, and every example
    it shows runs."""
    from calc.commands import EXAMPLES, verbs

    result = cli()
    assert result.code == 0 and result.out.startswith("usage: python -m calc MODEL")
    for verb in verbs():
        assert verb == "estimate" or verb in result.out
    for command, _ in EXAMPLES:
        assert command in result.out
        ran = cli(*command.split()[3:])
        assert ran.code == 0 and ran.err == "", command


def test_version(cli):
    assert cli("--version").out == f"calc {calc.__version__}\n"
    assert cli("-V").code == 0


def test_preset_names_ignore_case_like_gpu_names(cli):
    data = cli("Llama2-7B", "--gpu", "A100", "--tokens", "2T", "--format", "json").json()
    assert data["model"] == "llama2-7b" and data["training"]["gpu"] == "a100"
    assert calc.load_preset("MISTRAL-7B").name == "mistral-7b"


def test_gpus_table_shows_every_dtype_a_peak_can_be_asked_for(cli):
    """Issue 12: the table left out fp64, which --dtype accepts."""
    from calc.spec import DTYPES

    out = cli("gpus", "--format", "csv", "--table", "gpus").out
    rows = list(csv.DictReader(io.StringIO(out)))
    assert set(DTYPES) <= set(rows[0])
    v100 = calc.get_gpu("v100")
    assert next(r for r in rows if r["name"] == "v100")["fp64"] == f"{v100.peak_tflops['fp64']:g}"


@pytest.mark.parametrize("command", ["bench", "verify"])
def test_commands_without_torch_name_their_own_extra(cli, monkeypatch, command):
    """Issue 12: `bench` without torch pointed at the verifier; each command names the extra
    that installs what it needs, as the README writes it (pip install -e ".[x]")."""
    import importlib.util
    import tomllib

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    argv = [command] + (["gpt2"] if command == "verify" else [])
    result = cli(*argv)
    assert result.code == 2
    assert f'{command} needs torch: pip install -e ".[{command}]"' in result.err
    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert command in extras["project"]["optional-dependencies"]
