"""`compare` and `conventions`: every number equals the single-model report it summarises."""

from __future__ import annotations

import csv
import io
from functools import reduce

import pytest

import calc
from calc.evaluate import rule_flops
from calc.reports.compare import ROW_GROUPS

MODELS = ["gpt2", "llama2-7b", "mixtral-8x7b", "deepseek-v3"]
WORKLOAD = {"tokens": 2e12, "gpu": "a100", "mfu": 0.35, "gpus": 512}


def _json_path(data: dict, key: str):
    for part in key.split("."):
        if data is None:
            return None
        data = data[part]
    return data


def test_every_cell_equals_the_models_own_report():
    comparison = calc.compare(MODELS, **WORKLOAD)
    assert comparison.models == MODELS
    paths = {spec.key for group in ROW_GROUPS for spec in group.rows if spec.read is None}
    checked = 0
    for model in MODELS:
        report = calc.estimate(model, **WORKLOAD)
        data = report.to_dict()
        for row in comparison.rows:
            value = comparison.value(row.key, model)
            if row.key in paths and not row.key.startswith("spec."):  # the JSON contract's
                assert value == _json_path(data, row.key), (model, row.key)
                checked += 1
            elif row.key in paths:  # the spec's own fields and properties
                assert value == reduce(getattr, row.key.split(".")[1:], report.spec)
        f = report.flops_per_token
        assert comparison.value("flops_per_token.six_n_ratio", model) == f.six_n / f.train
    assert checked == len(MODELS) * 12  # 4 parameter, 4 FLOPs and 4 training rows
    # spot checks against published and hand-counted numbers (tests/test_cli.py, the README)
    assert comparison.value("params.total", "llama2-7b") == 6_738_415_616
    assert comparison.value("params.active", "mixtral-8x7b") == 12_879_925_248
    assert comparison.value("spec.experts_per_token", "deepseek-v3") == "8 of 256"
    assert comparison.value("spec.experts_per_token", "gpt2") is None


def test_groups_and_rows_present():
    comparison = calc.compare(["llama2-7b"], tokens=2e12, gpu="a100", price=2, energy=True)
    groups = {row.group for row in comparison.rows}
    assert groups == {group.title for group in ROW_GROUPS}
    # published hours only when the run compared is the one published (2T on A100)
    assert comparison.value("training.published_gpu_hours", "llama2-7b") == 184_320
    other = calc.compare(["llama2-7b"], tokens=1e12, gpu="a100")
    assert "training.published_gpu_hours" not in {row.key for row in other.rows}
    no_training = calc.compare(["gpt2", "llama2-7b"])
    assert not any(row.group == "Training" for row in no_training.rows)


def test_cli_json_equals_library(cli):
    result = cli("compare", *MODELS, "--tokens", "2e12", "--gpu", "a100", "--mfu", "0.35",
                 "--gpus", "512", "--format", "json")
    assert result.code == 0
    assert result.json() == calc.compare(MODELS, **WORKLOAD).to_dict()


@pytest.mark.parametrize("fmt, marker", [("text", "Parameters"), ("markdown", "| total"),
                                         ("latex", r"\begin{tabular}"), ("html", "<table>"),
                                         ("csv", "parameters,total,llama2-7b,6738415616")])
def test_compare_formats(cli, fmt, marker):
    result = cli("compare", "gpt2", "llama2-7b", "--format", fmt)
    assert result.code == 0 and marker in result.out
    assert "Notes:" in result.out or fmt != "text"


def test_all_presets_as_rows(cli):
    result = cli("compare", "--all", "--rows", "--groups", "params", "--format", "csv",
                 "--table", "parameters")
    names = [row["model"] for row in csv.DictReader(io.StringIO(result.out))]
    for name in calc.list_presets():
        assert name in names
    assert names.index("gpt2") < names.index("llama3.1-405b")  # smallest first


@pytest.mark.parametrize("argv, message", [
    (("compare",), "give models to compare, or --all"),
    (("compare", "gpt2", "--all"), "not both"),
    (("compare", "gpt2", "--groups", "disk"), "groups: unknown 'disk'"),
    (("compare", "gpt2", "llama2-7", "--tokens", "1e9"), "did you mean llama2-7b"),
    (("compare", "gpt2", "--seq-len", "4096"), "learned position table"),
    (("conventions",), "MODEL"),
    (("conventions", "gpt2", "--mfu", "2"), "--mfu"),
])
def test_bad_input(cli, argv, message):
    result = cli(*argv)
    assert result.code == 2 and message in result.err and result.err.count("\n") == 1


@pytest.mark.parametrize("model", ["gpt3-125m", "llama2-7b", "mistral-7b", "deepseek-v3"])
def test_conventions_table_equals_reports(model):
    table = calc.conventions_table(model, seq_len=2048)
    causal = calc.estimate(model, seq_len=2048).flops_per_token.train
    full = calc.estimate(model, seq_len=2048, attention="full").flops_per_token.train
    rows = {row.key: row for row in table.rows}
    assert rows["exact-causal"].train == causal and rows["exact-full"].train == full
    rules = rule_flops(calc.load_preset(model).spec, 2048)
    assert set(rows) == {"exact-causal", "exact-full", *rules}
    for key, value in rules.items():
        assert rows[key].train == value
        assert rows[key].vs_causal == value / causal and rows[key].vs_full == value / full
    trains = [row.train for row in table.rows]
    assert table.spread == max(trains) / min(trains)
    assert rows[table.highest].train == max(trains)
    assert rows["exact-causal"].mfu == pytest.approx(0.4)


def test_conventions_palm_is_full_attention_six_n():
    """PaLM's 12·L·H·Q·T is full T×T attention: at T → 1 it tends to 6N (less position rows)."""
    table = calc.conventions_table("llama2-7b", mfu=0.5)
    rows = {row.key: row for row in table.rows}
    assert rows["6N"].train < rows["exact-causal"].train < rows["exact-full"].train
    assert rows["palm"].mfu == pytest.approx(0.5 * rows["palm"].vs_causal)


def test_conventions_cli(cli):
    text = cli("conventions", "llama2-7b")
    assert text.code == 0
    for label in ("6N", "Kaplan", "PaLM", "Megatron", "Chinchilla", "calc exact, causal",
                  "calc exact, full", "spread", "MFU"):
        assert label in text.out
    data = cli("conventions", "llama2-7b", "--seq-len", "2048", "--format", "json").json()
    assert data == calc.conventions_table("llama2-7b", seq_len=2048).to_dict()


def test_memory_rows_are_the_memory_reports():
    """The memory group reads each model's own calc.memory report (one GPU, no sharding)."""
    comparison = calc.compare(["llama2-7b", "mixtral-8x7b"], tokens=1e12, gpu="h100",
                              groups=["memory"])
    for name in ("llama2-7b", "mixtral-8x7b"):
        spec = calc.load_preset(name).spec
        own = calc.memory(name, gpu="h100", seq_len=spec.context_length).memory
        assert comparison.value("memory.total_bytes", name) == own.total_bytes
        assert comparison.value("memory.fits", name) is own.fits


def test_compare_takes_the_memory_flags(cli):
    """Issue 12: compare's memory rows were fixed at 2022's eager attention and dropout
    (llama3-8b: 360 GiB of activations) and no flag could change them."""
    spec = calc.load_preset("llama3-8b").spec
    modern = calc.memory("llama3-8b", seq_len=spec.context_length).memory
    paper = calc.memory("llama3-8b", seq_len=spec.context_length, flash_attention=False,
                        dropout=True).memory
    assert paper.activations_bytes > 9 * modern.activations_bytes
    data = cli("compare", "llama3-8b", "--groups", "memory", "--format", "json").json()
    assert _row(data, "memory.activations_bytes") == [modern.activations_bytes]
    for flags in (["--paper-2022"], ["--no-flash-attention", "--dropout"]):
        data = cli("compare", "llama3-8b", "--groups", "memory", *flags, "--format",
                   "json").json()
        assert _row(data, "memory.activations_bytes") == [paper.activations_bytes]
    full = cli("compare", "llama3-8b", "--groups", "memory", "--recompute", "full",
               "--micro-batch", "2", "--format", "json").json()
    own = calc.memory("llama3-8b", seq_len=spec.context_length, recompute="full",
                      micro_batch=2).memory
    assert _row(full, "memory.activations_bytes") == [own.activations_bytes]


def test_compare_gpu_without_tokens_still_says_whether_it_fits():
    comparison = calc.compare(["gpt2", "llama3-8b"], gpu="h100", groups=["memory"])
    assert [comparison.value("memory.fits", m) for m in ("gpt2", "llama3-8b")] == [True, False]


def _row(data: dict, key: str) -> list:
    return next(row["values"] for row in data["rows"] if row["key"] == key)
