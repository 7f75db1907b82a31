"""calc's reading of every trainer config in tests/data/trainer_configs against EXPECTED.toml,
key by key: what the framework itself makes of each plan-changing setting (written from the
frameworks' code, not from calc's output), as calc's run-config options; every setting of a
file read or listed as ignored; a file the framework refuses refused by calc on its GPUs."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

import calc
from calc.errors import CalcError
from calc.spec.layout import make_layout
from calc.trainers import read_trainer_config
from calc.trainers.megatron import arguments

FOLDER = Path(__file__).parent / "data" / "trainer_configs"
EXPECTED = tomllib.loads((FOLDER / "EXPECTED.toml").read_text(encoding="utf-8"))
EXPECTED.pop("meaning")
SHARDING = {"none": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3, "megatron-fsdp": 3}
FINETUNE = {"full": "full", "lora": "lora", "qlora": "qlora", "lora_8bit": "lora"}
# Keys a file cannot state, with why: calc reads the file alone.
UNSTATED = {
    "deepspeedexamples_zero_offload_10b.sh": {
        "sharding", "global_batch", "grad_accumulation"},  # in the DeepSpeed JSON it names
    "transformers_run_clm.json": {"seq_len"},  # run_clm.py's block_size default, not a key
    # the recipe's README launches it on one process: not a key of the YAML
    "alignment_handbook_zephyr_qlora.yaml": {"world_size", "global_batch"},
}


def _read(name: str):
    if name.endswith((".yml", ".yaml")):
        pytest.importorskip("yaml")
    return read_trainer_config(FOLDER / name)


def _targets(value: str | list[str]) -> set[str]:
    parts = value if isinstance(value, list) else value.split(",")
    return {part.strip() for part in parts}


def _accumulation(options: dict, entry: dict, dp: int | None) -> int | None:
    if "gradient_accumulation" in options:
        return options["gradient_accumulation"]
    if dp and isinstance(options.get("global_batch"), int):
        return options["global_batch"] // (options.get("micro_batch", 1) * dp)
    return None


def _check(key: str, expected, config, entry: dict) -> None:
    o = config.options
    degrees = o.get("tp", 1) * o.get("pp", 1) * o.get("cp", 1)
    dp = config.world_size // degrees if config.world_size else None
    if key in ("tp", "pp", "vpp", "cp", "ep"):
        assert o.get(key, 1) == expected
    elif key == "world_size":
        assert config.world_size == expected
    elif key == "dp" and "world_size" in entry:
        assert dp == expected
    elif key in ("micro_batch", "global_batch", "seq_len"):
        assert o.get(key) == (None if expected == "auto" else expected)
    elif key == "grad_accumulation" and expected != "auto":
        assert _accumulation(o, entry, dp if "world_size" in entry else None) in (expected,
                                                                                  None)
        if "world_size" in entry or "gradient_accumulation" in o:
            assert _accumulation(o, entry, dp) == expected
    elif key == "sequence_parallel":
        assert o.get("sequence_parallel", False) is expected
    elif key == "recompute":
        assert o.get("recompute", "none") == expected
    elif key == "distributed_optimizer":
        assert (o.get("zero", 0) >= 1) is expected
    elif key == "sharding":
        assert o.get("zero", 0) == SHARDING[expected]
    elif key == "dtype":
        assert o.get("dtype") == (None if expected == "auto" else expected)
    elif key == "fp8":
        assert (o.get("precision") == "fp8") is expected
    elif key == "finetune":
        assert o.get("finetune", "full") == FINETUNE[expected]
    elif key == "lora_rank":
        assert o.get("lora_rank") == expected
    elif key == "lora_targets":
        assert _targets(o["lora_targets"]) == _targets(expected)
    elif key == "quant":
        assert o.get("base_dtype") == expected
    elif key == "double_quant":
        assert o.get("double_quant") is expected
    elif key in ("offload_optimizer", "offload_params"):
        assert o.get(key, "none") == expected
    elif key == "optimizer":
        if "8bit" in expected:
            assert o.get("optimizer") == "adam8bit"
        elif "paged" in expected:
            assert o.get("paged") is True
        else:
            assert o.get("optimizer", "adamw") == "adamw"
    elif key == "model":
        _check_model(config.model, expected)


def _check_model(found, expected: str) -> None:
    """The preset itself, or a spec built from the file with the preset's shape."""
    if isinstance(found, str) or found is None:
        assert found == expected
        return
    spec = calc.load_preset(expected).spec
    shape = ("n_layers", "d_model", "n_kv_heads", "context_length")
    assert [getattr(found, a) for a in shape[:3]] == [getattr(spec, a) for a in shape[:3]]
    assert found.attention.n_heads == spec.attention.n_heads
    assert found.ffn.d_ff == spec.ffn.d_ff
    assert (found.moe and found.moe.n_experts) == (spec.moe and spec.moe.n_experts)


CHECKED = ("tp", "pp", "vpp", "cp", "ep", "world_size", "dp", "micro_batch", "global_batch",
           "grad_accumulation", "seq_len", "sequence_parallel", "recompute",
           "distributed_optimizer", "sharding", "dtype", "fp8", "finetune", "lora_rank",
           "lora_targets", "quant", "double_quant", "offload_optimizer", "offload_params",
           "optimizer", "model")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_reading_is_the_frameworks(name):
    config = _read(name)
    entry = EXPECTED[name]
    for key in CHECKED:
        if key in entry and key not in UNSTATED.get(name, ()):
            try:
                _check(key, entry[key], config, entry)
            except AssertionError:
                raise AssertionError(f"{name}: {key} expected {entry[key]!r}, options "
                                     f"{config.options}, world {config.world_size}, model "
                                     f"{config.model!r}") from None


def _keys(name: str) -> set[str]:
    """The file's own settings: every flag of a launch script or MODEL_ARGS, every top-level
    key of a JSON, TOML or YAML file."""
    text = (FOLDER / name).read_text(encoding="utf-8")
    if name.endswith(".sh"):
        return set(arguments(text))
    if name.endswith(".json"):
        return set(json.loads(text))
    if name.endswith(".toml"):
        return set(tomllib.loads(text))
    import yaml

    data = yaml.safe_load(text)
    return set(data["MODEL_ARGS"]) if "MODEL_ARGS" in data else set(data)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_setting_is_read_or_listed(name):
    config = _read(name)
    read = {setting.key for setting in config.read}
    assert not read & set(config.ignored), name
    seen = read | set(config.ignored)
    for key in _keys(name):
        assert any(k == key or k.startswith(f"{key}.") for k in seen), f"{name}: {key}"


@pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if e.get("valid") is False))
def test_what_the_framework_refuses_calc_refuses(name):
    """Megatron-LM's GPT-3 175B script on its own 8 GPUs (tp·pp = 128), Mixtral's on 8 (ep 8
    does not divide dp 2): the layout cannot be built."""
    config = _read(name)
    fields = {k: v for k, v in config.options.items()
              if k in ("tp", "pp", "cp", "ep", "vpp", "micro_batch", "global_batch")}
    with pytest.raises(CalcError):
        make_layout(config.world_size, **fields)


def test_both_configs_the_issue_names():
    """Issue 19: Megatron's layers per virtual stage become virtual stages (the release test's
    --num-layers-per-virtual-pipeline-stage 1: 32 / 4 / 1 = 8), and torchtitan 2024's
    [training] degrees with data_parallel_shard_degree -1 are tp 8 under FSDP."""
    release = _read("megatron_mixtral_8x7b_release.yaml")
    assert release.options["vpp"] == 8 and release.options["pp"] == 4
    titan = _read("torchtitan_llama3_70b_2024.toml")
    assert titan.options["tp"] == 8 and titan.options["zero"] == 3
    report = calc.memory(from_file=str(FOLDER / "torchtitan_llama3_70b_2024.toml"),
                         gpu="a100", dp=8)
    assert report.memory.options.tp == 8 and report.memory.options.zero == 3
    assert report.memory.fits  # not the 1,296 GiB of tp 1 without FSDP
