"""`calc step --from FILE`: the trainer configs each project ships (tests/data/trainer_configs,
sources in its README) read by calc.trainers into the step's layout, the values checked against
the files themselves (read here without calc's readers), every setting echoed or listed, flags
over the file reported, and a file that does not match the GPUs refused in one line."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from calc.evaluate import count_flops
from calc.presets import resolve
from calc.reports.step import step
from calc.trainers import read_trainer_config

CONFIGS = Path(__file__).parent / "data" / "trainer_configs"
MEGATRON = CONFIGS / "megatron_gpt3_175b.sh"
TORCHTITAN = CONFIGS / "torchtitan_llama3_70b.toml"
DS_10B = CONFIGS / "deepspeedexamples_zero_offload_10b.json"
SH_10B = CONFIGS / "deepspeedexamples_zero_offload_10b.sh"


def _flag(path: Path, flag: str) -> int:
    """The number after `flag` in a launch script, read with a regex (not calc's reader)."""
    return int(re.search(rf"{flag}\s+(\d+)", path.read_text()).group(1))


def test_megatron_script_sets_the_layout():
    """Megatron-LM's GPT-3 175B script: t 8, p 16, micro-batch 1, global batch 1,536,
    s 2,048, fp16, its attention backend; on 1,024 GPUs the data-parallel degree is 8."""
    report = step(from_file=str(MEGATRON), gpu="a100", gpus=1024)
    lay = report.layout
    assert lay.tp == _flag(MEGATRON, "--tensor-model-parallel-size") == 8
    assert lay.pp == _flag(MEGATRON, "--pipeline-model-parallel-size")
    assert lay.micro_batch == _flag(MEGATRON, "--micro-batch-size")
    assert lay.global_batch == _flag(MEGATRON, "--global-batch-size")
    assert lay.seq_len == _flag(MEGATRON, "--seq-length")
    assert lay.dp == 1024 // (lay.tp * lay.pp)
    assert lay.dtype == "fp16" and lay.flash_attention and lay.framework == "megatron"
    assert report.model == "megatron_gpt3_175b" and report.config.format == "megatron"
    assert report.config.overrides == []


def test_torchtitan_toml_sets_the_layout():
    """torchtitan's Llama 3 70B preset for 64 A100s: FSDP (ZeRO 3) over the 8 ranks TP 8 leaves,
    sequence parallelism, local batch 8 at 8,192 tokens, full activation checkpointing, one
    micro-batch per step, torchtitan's constants."""
    data = tomllib.loads(TORCHTITAN.read_text())
    report = step(from_file=str(TORCHTITAN), gpu="a100", gpus=64)
    lay = report.layout
    assert lay.tp == data["parallelism"]["tensor_parallel_degree"] and lay.sequence_parallel
    assert lay.micro_batch == data["training"]["batch_size"]
    assert lay.seq_len == data["training"]["seq_len"]
    assert lay.recompute == data["activation_checkpoint"]["mode"] == "full"
    assert lay.zero == 3 and lay.dp == 64 // lay.tp
    assert lay.global_batch == lay.micro_batch * lay.dp
    assert lay.framework == "torchtitan" and report.model == "llama3-70b"
    assert report.fits  # the file says it is written for 64 A100s


def test_deepspeed_json_sets_zero_offload_and_the_batch():
    """DeepSpeedExamples' 10B ZeRO-Offload config with its launch script's model: ZeRO 2, the
    optimizer on the CPU (the old cpu_offload key), fp16, 30 sequences in 3 accumulation steps
    on one GPU, hence micro-batches of 10 (as the script's --batch-size says)."""
    data = json.loads(DS_10B.read_text())
    spec = read_trainer_config(SH_10B).model
    report = step(spec, from_file=str(DS_10B), gpu="v100", gpus=1, recompute="full")
    lay = report.layout
    assert lay.global_batch == data["train_batch_size"]
    assert lay.micro_batches == data["gradient_accumulation_steps"]
    assert lay.micro_batch == _flag(SH_10B, "--batch-size")
    assert lay.zero == data["zero_optimization"]["stage"]
    assert report.offload.optimizer == "cpu" and lay.dtype == "fp16"
    assert lay.framework == "deepspeed"


def test_every_setting_is_echoed_or_listed():
    report = step(from_file=str(TORCHTITAN), gpu="a100", gpus=64)
    config = read_trainer_config(TORCHTITAN)
    echoed = {row["key"] for row in report.config.read}
    assert {s.key for s in config.read} <= echoed
    assert set(config.ignored) == set(report.config.ignored)
    assert "(format)" in echoed  # the framework, from the file's format


@pytest.mark.parametrize("name, method", [
    ("axolotl_llama3_qlora.yml", "qlora"),
    ("llamafactory_llama3_lora_sft.yaml", "lora"),
    ("nemo_launcher_llama_lora_squad.yaml", "lora"),
    ("alignment_handbook_zephyr_qlora.yaml", "qlora"),
])
def test_a_fine_tune_is_priced_as_its_method(name, method):
    """A LoRA/QLoRA config through `step --from` is priced as that fine-tune (calc.timing.
    finetune), never as full training; its adapter settings are read, not ignored."""
    pytest.importorskip("yaml")
    report = step(from_file=str(CONFIGS / name), gpu="a100", gpus=8)
    assert report.finetune is not None and report.finetune.method == method
    assert ("dequantisation" in report.finetune_parts) == (method == "qlora")
    full = 3 * count_flops(resolve(report.model).spec, report.layout.seq_len).forward
    assert report.model_flops_per_step < full * report.tokens_per_step  # no weight gradients


def test_lora_settings_are_priced_by_step():
    """axolotl's QLoRA example: the step prices its adapters on a 4-bit base
    (calc.timing.finetune); its batch is micro-batch 2 × 4 accumulation steps × dp."""
    pytest.importorskip("yaml")
    report = step(from_file=str(CONFIGS / "axolotl_llama3_qlora.yml"), gpu="a100", gpus=2)
    assert report.layout.global_batch == 2 * 4 * 2
    assert report.finetune is not None and report.finetune.method == "qlora"
    assert report.finetune_parts["dequantisation"] > 0
    assert not any("lora_r" in ignored for ignored in report.config.ignored)
    assert "adapter" in {row["key"] for row in report.config.read}


def test_a_flag_over_the_file_is_reported(cli):
    result = cli("step", "--from", str(MEGATRON), "--gpu", "a100", "--gpus", "1024",
                 "--micro-batch", "2", "--format", "json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["layout"]["micro_batch"] == 2
    assert data["config"]["overrides"] == [{"option": "micro_batch", "file": 1, "used": 2}]
    text = cli("step", "--from", str(MEGATRON), "--gpu", "a100", "--gpus", "1024",
               "--micro-batch", "2").out
    text = " ".join(text.split())  # notes wrap at the terminal width, after the file's path
    assert "override" in text and "micro_batch 1 → 2" in text


@pytest.mark.parametrize("argv, message", [
    (["--from", str(MEGATRON), "--gpus", "64"], "not divisible by tp × pp × cp"),
    # the script's own 8 GPUs (GPUS_PER_NODE × NUM_NODES): Megatron-LM refuses them
    (["--from", str(MEGATRON)], "gpus=8 is not divisible by tp × pp × cp = 8 × 16 × 1 = 128"),
    (["--from", str(TORCHTITAN)], "give --gpus"),
    (["--from", str(DS_10B), "--gpus", "8", "llama2-7b"], "does not match the GPUs"),
    (["--from", str(CONFIGS / "ds_config_zero3.json"), "--gpus", "8"], "names no model"),
    (["--gpus", "8"], "MODEL (or --from"),
])
def test_bad_files_are_one_line(cli, argv, message):
    result = cli("step", "--gpu", "a100", *argv)
    assert result.code == 2 and message in result.err, result.err
    assert result.err.count("\n") == 1


def test_layout_from_takes_the_run_and_searches_the_degrees():
    """`layout --from`: torchtitan's 70B preset fixes the model, 8 sequences of 8,192 tokens
    per data-parallel rank (64 on its 64 GPUs) and torchtitan's constants; the degrees are
    searched, so the best layout need not be the file's."""
    from calc.reports.layout import layout

    data = tomllib.loads(TORCHTITAN.read_text())
    report = layout(from_file=str(TORCHTITAN), gpu="a100", gpus=64)
    tp = data["parallelism"]["tensor_parallel_degree"]
    assert report.global_batch == data["training"]["batch_size"] * 64 // tp
    assert report.seq_len == data["training"]["seq_len"] and report.model == "llama3-70b"
    assert {row.layout.framework for row in report.best} == {"torchtitan"}
    assert report.config.format == "torchtitan"
    assert len({(row.layout.tp, row.layout.zero) for row in report.best}) > 1
    flagged = layout(from_file=str(TORCHTITAN), gpu="a100", gpus=64, global_batch=128)
    assert flagged.global_batch == 128
    assert flagged.config.overrides == []  # the file's 64 is derived, not one of its keys
