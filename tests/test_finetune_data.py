"""presets/published/finetune/: every published fine-tuning run loads, names a catalogued model
and GPU, adapts projections its model has, fits in the GPU it ran on, and the figures a source
printed together agree with each other to the source's rounding.

Sources per file (torchtune's README tables, LitGPT's config-hub table, Answer.AI's FSDP+QLoRA
benchmarks, Unsloth's context-length table); each file's header cites them.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

import calc.presets
from calc.errors import CalcError, one_line
from calc.presets import get_gpu, load_finetune_runs, load_preset
from calc.spec.finetune import FineTune, resolve_targets
from calc.spec.finetune_runs import PublishedFinetune

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "presets" / "published" / "finetune"
RUNS = load_finetune_runs()
ALL = list(RUNS.values())
GIB = 1 << 30


def test_enough_rows_from_enough_sources():
    publishers = Counter(run.publisher for run in ALL)
    assert len(ALL) >= 40
    assert len(publishers) >= 4
    assert publishers["torchtune"] == 16 and publishers["litgpt"] == 20
    assert publishers["answerai"] == 22 and publishers["unsloth"] == 2


def test_one_file_per_publisher_with_a_cited_header():
    for path in sorted(FOLDER.glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        assert text.startswith("# "), f"{path.name}: the header comment cites the source"
        publishers = {entry["publisher"] for entry in tomllib.loads(text).values()}
        assert publishers == {path.stem}, path.name


@pytest.mark.parametrize("run", ALL, ids=lambda r: r.name)
def test_model_gpu_and_targets_are_catalogued(run):
    spec = load_preset(run.model).spec  # the preset exists
    gpu = get_gpu(run.gpu)  # the GPU exists
    if run.method != "full":
        finetune = FineTune(method=run.method, rank=run.lora_rank, targets=run.lora_targets,
                            base_dtype=run.quant)
        assert resolve_targets(spec, finetune)  # every target is a projection the model has
    if run.peak_memory_bytes is not None:
        assert run.peak_memory_bytes <= gpu.memory_gib * GIB, "the peak exceeds the GPU"
    if run.max_seq_len_fits is not None:
        assert run.seq_len is None  # the sequence is the figure, not a setting
    assert run.source.strip() and re.search(r"\b[0-9a-f]{7,10}\b", run.source), (
        "the source names the commit its figures are read at")


def test_settings_are_the_stacks_own():
    # Precision follows each stack: torchtune, LitGPT and fsdp_qlora train in pure bf16.
    for run in ALL:
        if run.stack in ("torchtune", "litgpt", "fsdp_qlora"):
            assert run.precision == "bf16-true", run.name
    # LitGPT's bnb.nf4 is Lightning's 'nf4' (no double quantisation); torchtune's and
    # Answer.AI's QLoRA quantise the block constants too.
    for run in ALL:
        if run.method == "qlora":
            assert run.double_quant is (run.stack != "litgpt"), run.name


def test_torchtune_percent_changes_are_the_printed_figures_ratios():
    """torchtune README (1814feb17) 'Optimization flags': each row prints its change against the
    row above (memory, tokens/s); the figures themselves, rounded to 0.1 GiB and 1 token/s, must
    give those changes back to within that rounding."""
    rows = [r for r in ALL if r.name.startswith("torchtune-llama3.2-3b-")]
    printed_memory = [135.16, -14.93, -15.83, -41.93, -7.29, -5.48, -19.63, -51.61, -45.71]
    printed_tokens = [238.40, 27.18, 1.96, -21.41, 1.38, -0.11, -4.67, 17.96, -2.13]
    assert len(rows) == len(printed_memory) + 1
    for before, after, memory, tokens in zip(rows[:-1], rows[1:], printed_memory, printed_tokens,
                                             strict=True):
        ratio = after.peak_memory / before.peak_memory
        rounding = 0.05 / after.peak_memory + 0.05 / before.peak_memory
        assert abs(ratio - (1 + memory / 100)) <= ratio * rounding + 5e-5, after.name
        assert after.tokens_per_s / before.tokens_per_s == pytest.approx(
            1 + tokens / 100, abs=1e-3), after.name
    # "uses 81.9% less memory with a 284.3% increase in tokens per second" (against the baseline)
    baseline, qlora = rows[0], rows[-1]
    assert 1 - qlora.peak_memory / baseline.peak_memory == pytest.approx(0.819, abs=2e-3)
    assert qlora.tokens_per_s / baseline.tokens_per_s - 1 == pytest.approx(2.843, abs=1e-3)


def test_answerai_70b_on_two_3090s_is_nearly_50_seconds_a_batch():
    """'at nearly 50 seconds per batch' (benchmarks_03_2024.md, Llama 70B on two 3090s): 1,024
    samples, batch 2 on each of 2 GPUs."""
    run = RUNS["answerai-3090-llama2-70b-qlora-offload"]
    steps = run.run_samples / (run.micro_batch * run.gpus)
    assert 40 <= run.run_time_s / steps <= 50


def test_fit_rows_are_a_third_of_each_file_and_held_out_rows_remain():
    fitted = [run for run in ALL if run.fit]
    assert len(fitted) <= len(ALL) / 2  # at least half held out (issue 20)
    for path in sorted(FOLDER.glob("*.toml")):
        names = list(tomllib.loads(path.read_text(encoding="utf-8")))
        assert [RUNS[name].fit for name in names] == [i % 3 == 0 for i in range(len(names))], (
            f"{path.name}: fit rows are every third row in file order")


def test_readme_counts_match_the_files():
    readme = (ROOT / "presets" / "published" / "README.md").read_text(encoding="utf-8")
    section = readme.split("## `finetune/`", 1)[1]
    counts = dict(re.findall(r"\| `(\w+)\.toml` \| \w+ \| (\d+) \|", section))
    assert {name: int(n) for name, n in counts.items()} == Counter(r.publisher for r in ALL)


def test_bad_run_is_one_line_naming_the_field():
    good = RUNS["torchtune-llama3.1-8b-qlora-rtx4090"].model_dump()
    cases = [
        ({"quant": None}, "quant: None with method 'qlora'"),
        ({"method": "full"}, "method: 'full' trains every weight"),
        ({"lora_targets": ["q", "wq"]}, "lora_targets: ['wq'] are not projections"),
        ({"gpus": 2}, "sharding: 'none' with gpus=2"),
        ({"memory_kind": None}, "peak_memory: give it with peak_memory_unit and memory_kind"),
        ({"outcome": "oom"}, "outcome: 'oom' runs carry no figures"),
        ({"assumed": ["flops"]}, "assumed: ['flops'] are not settings"),
        ({"micro_batch": 0}, "micro_batch"),
    ]
    for change, expected in cases:
        with pytest.raises(ValidationError) as caught:
            PublishedFinetune.model_validate({**good, **change})
        message = one_line(caught.value, "fine-tuning run x")
        assert expected in message and "\n" not in message, message


def test_loader_names_the_bad_entry_in_one_line(tmp_path, monkeypatch):
    folder = tmp_path / "published" / "finetune"
    folder.mkdir(parents=True)
    good = (FOLDER / "unsloth.toml").read_text(encoding="utf-8")
    (folder / "unsloth.toml").write_text(good.replace("micro_batch = 1", "micro_batch = -1", 1),
                                         encoding="utf-8")
    monkeypatch.setattr(calc.presets, "_data_dir", lambda: tmp_path)
    calc.presets.load_finetune_runs.cache_clear()
    try:
        with pytest.raises(CalcError) as caught:
            calc.presets.load_finetune_runs()
    finally:
        calc.presets.load_finetune_runs.cache_clear()
    message = str(caught.value)
    assert message.startswith("fine-tuning run unsloth-llama3.3-70b-qlora-a100-maxlen-unsloth")
    assert "micro_batch" in message and "\n" not in message
