"""`calc memory --from FILE`: the trainer configs each project ships (tests/data/trainer_configs,
sources in its README), read into calc.memory's options, every setting echoed or listed."""

from __future__ import annotations

from pathlib import Path

import pytest

import calc
from calc.trainers import read_trainer_config

CONFIGS = Path(__file__).parent / "data" / "trainer_configs"


def _read(name: str):
    return read_trainer_config(CONFIGS / name)


def _accounted(config, keys):
    """Every key of the file is either read or ignored, none both."""
    read = {setting.key for setting in config.read}
    assert not read & set(config.ignored)
    assert set(keys) <= read | set(config.ignored)


def test_deepspeed_zero3_offload():
    """transformers tests/deepspeed/ds_config_zero3.json: fp16, ZeRO 3, optimizer and
    parameters offloaded to the CPU, AdamW."""
    config = _read("ds_config_zero3.json")
    assert config.format == "deepspeed" and config.model is None
    assert config.options == {"dtype": "fp16", "zero": 3, "offload_optimizer": "cpu",
                              "offload_params": "cpu", "optimizer": "adamw"}
    assert {"scheduler.type", "zero_optimization.stage3_max_live_parameters",
            "steps_per_print", "fp16.loss_scale"} <= set(config.ignored)
    _accounted(config, ["fp16.enabled", "zero_optimization.offload_param.device"])
    report = calc.memory("llama2-7b", from_file=str(CONFIGS / "ds_config_zero3.json"),
                         gpu="a100", dp=8, recompute="full")
    assert report.memory.offload.params == "cpu" and report.memory.fits
    assert report.config.format == "deepspeed"


def test_deepspeed_auto_values_are_left_to_calc():
    """ds_config_zero2.json leaves precision and batch to the Trainer ("auto")."""
    config = _read("ds_config_zero2.json")
    assert config.options == {"optimizer": "adamw", "zero": 2, "offload_optimizer": "cpu"}
    meanings = {s.key: s.meaning for s in config.read}
    assert "calc's --dtype applies" in meanings["bf16.enabled"]
    assert "calc's --micro-batch applies" in meanings["train_micro_batch_size_per_gpu"]


def test_megatron_gpt3_175b_script():
    """Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh: the model is built from the
    arguments, GPT-2's 50,257-token vocabulary padded to a multiple of 128 × t = 1,024."""
    config = _read("megatron_gpt3_175b.sh")
    spec = config.model
    assert spec.vocab_size == 51_200 and spec.n_layers == 96 and spec.d_model == 12_288
    gpt3 = calc.count_params(calc.load_preset("gpt3-175b").spec).total
    assert calc.count_params(spec).total == gpt3 + (51_200 - 50_257) * 12_288
    assert config.options["tp"] == 8 and config.options["pp"] == 16
    assert config.options["dtype"] == "fp16" and config.options["flash_attention"]
    assert {"--lr", "--train-iters", "--data-path"} <= set(config.ignored)
    assert config.world_size == 8  # GPUS_PER_NODE=8 × NUM_NODES=1, torchrun's
    report = calc.memory(from_file=str(CONFIGS / "megatron_gpt3_175b.sh"), gpu="a100")
    assert report.memory.options.tp == 8 and report.memory.fits


def test_torchtitan_llama3_70b_fits_the_64_a100s_it_is_written_for():
    """torchtitan llama3_70b.toml ("a preset for 64 A100 GPUs"): FSDP over the remaining
    8 ranks, TP 8 with sequence parallelism, local batch 8 at 8,192 tokens, full activation
    checkpointing: it fits an 80 GB A100."""
    config = _read("torchtitan_llama3_70b.toml")
    assert config.model == "llama3-70b"
    assert config.options["zero"] == 3 and config.options["sequence_parallel"]
    assert "dp" not in config.options  # data_parallel_shard_degree = -1: from --dp
    report = calc.memory(from_file=str(CONFIGS / "torchtitan_llama3_70b.toml"), gpu="a100",
                         dp=8)
    assert report.memory.fits
    # torchtitan's own recipe: fp32 sharded parameters and gradients, 16-bit gathered layers
    assert report.memory.options.recipe == "fsdp-mixed"
    assert report.memory.buffers["gathered_weights"] > 0


def test_axolotl_llama3_qlora():
    """axolotl examples/llama-3/qlora.yml: QLoRA r = 32 on every linear projection, paged
    AdamW, micro-batch 2 of 4,096 tokens, gradient checkpointing, flash attention."""
    pytest.importorskip("yaml")
    config = _read("axolotl_llama3_qlora.yml")
    assert config.model == "llama3-8b"  # NousResearch's mirror of meta-llama/Meta-Llama-3-8B
    assert config.options == {
        "finetune": "qlora", "seq_len": 4096, "lora_rank": 32, "lora_targets": "all-linear",
        "micro_batch": 2, "optimizer": "adamw", "paged": True, "recompute": "full",
        "flash_attention": True, "gradient_accumulation": 4, "base_dtype": "nf4",
        "double_quant": True, "dtype": "bf16"}
    assert {"datasets", "lora_alpha", "learning_rate", "wandb_project"} <= set(config.ignored)
    m = calc.memory(from_file=str(CONFIGS / "axolotl_llama3_qlora.yml"), gpu="l4").memory
    assert m.finetune.method == "qlora" and m.finetune.rank == 32 and m.fits


def test_transformers_training_arguments():
    """transformers' run_clm.py README example as a TrainingArguments JSON."""
    config = _read("transformers_run_clm.json")
    assert config.format == "transformers" and config.model == "gpt2"
    assert config.options == {"micro_batch": 8, "optimizer": "adamw",
                              "gradient_accumulation": 1, "dtype": "fp32"}  # bf16, fp16 off
    assert {"learning_rate", "output_dir", "num_train_epochs"} <= set(config.ignored)
    assert len(config.read) + len(config.ignored) == 117  # every key of the file


def test_flags_override_the_file(cli):
    pytest.importorskip("yaml")
    result = cli("memory", "--from", str(CONFIGS / "axolotl_llama3_qlora.yml"),
                 "--micro-batch", "4", "--gpu", "l4", "--format", "json")
    import json

    data = json.loads(result.out)
    assert data["memory"]["options"]["micro_batch"] == 4
    assert data["memory"]["options"]["seq_len"] == 4096  # from the file
    assert data["config"]["format"] == "axolotl" and "datasets" in data["config"]["ignored"]


@pytest.mark.parametrize("argv, message", [
    (["memory", "--from", "missing.json"], "cannot read it"),
    (["memory", "--from", str(CONFIGS / "ds_config_zero3.json")], "names no model"),
    (["memory", "--from", str(CONFIGS / "README.md")], "not a config calc reads"),
])
def test_bad_configs(cli, argv, message):
    result = cli(*argv)
    assert result.code == 2 and message in result.err


def test_memory_paths_import_no_sympy():
    """The memory report with fine-tuning, offload, FP8 and a trainer config evaluates compiled
    formulas only (calc._compiled): no sympy, numpy or torch on its path."""
    import subprocess
    import sys

    code = ("import sys, calc; "
            "calc.memory('llama2-7b', finetune='qlora', framework='deepspeed', zero=1, "
            "offload_optimizer='cpu', "
            "precision='fp8', gpu='h100'); "
            f"calc.memory(from_file={str(CONFIGS / 'torchtitan_llama3_70b.toml')!r}); "
            "print(sorted(m for m in ('sympy', 'numpy', 'torch') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=Path(__file__).parents[1], check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("name, framework", [
    ("alignment_handbook_zephyr_qlora.yaml", "hf"), ("axolotl_llama3_lora_8b.yml", "hf"),
    ("axolotl_llama3_qlora.yml", "hf"), ("axolotl_llama3_qlora_fsdp_70b.yaml", "hf"),
    ("llamafactory_llama3_lora_sft.yaml", "hf"), ("llamafactory_llama3_qlora_sft_otfq.yaml", "hf"),
    # a full fine-tune keeps the reader's stack, a DeepSpeed config DeepSpeed's
    ("axolotl_llama3_fft_8b_liger_fsdp.yaml", "fsdp"),
    ("llamafactory_llama3_full_sft.yaml", "deepspeed"), ("transformers_run_clm.json", "fsdp"),
])
def test_trainer_configs_with_adapters_run_on_the_hf_stack(name, framework):
    """PEFT wraps transformers' own nn.Linear modules and the Trainer runs that model
    (calc.trainers.base.peft_stack): a LoRA/QLoRA config's activations are transformers'."""
    pytest.importorskip("yaml")
    assert _read(name).framework == framework
    if framework == "hf":
        m = calc.memory(from_file=str(CONFIGS / name)).memory
        assert m.options.framework == "hf"
