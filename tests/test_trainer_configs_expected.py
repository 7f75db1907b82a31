"""tests/data/trainer_configs/EXPECTED.toml: the reading each framework makes of its configs is
complete (one table per file, every file listed with its source in the README) and its own
arithmetic holds — degrees multiply to the world size, batches to micro-batch · dp ·
accumulation, Megatron's virtual stages to layers / (pp · layers per virtual stage) — so a
reader checked against it is checked against something consistent."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from calc.presets import load_preset

FOLDER = Path(__file__).parent / "data" / "trainer_configs"
EXPECTED = tomllib.loads((FOLDER / "EXPECTED.toml").read_text(encoding="utf-8"))
MEANINGS = EXPECTED.pop("meaning")
CONFIGS = sorted(p.name for p in FOLDER.iterdir() if p.name not in ("README.md", "EXPECTED.toml"))
DEGREES = ("tp", "pp", "cp")


def test_every_config_has_a_reading_and_a_source():
    assert sorted(EXPECTED) == CONFIGS
    readme = (FOLDER / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([^`]+)` \|", readme, flags=re.MULTILINE))
    assert listed == set(CONFIGS)


@pytest.mark.parametrize("name", CONFIGS)
def test_reading_is_consistent(name):
    entry = EXPECTED[name]
    assert entry["meaning"] in MEANINGS
    if "model" in entry:
        load_preset(entry["model"])  # a catalogued model
    if "world_size" in entry and "dp" in entry:
        degrees = 1
        for key in DEGREES:
            degrees *= entry.get(key, 1)
        assert entry["world_size"] == degrees * entry["dp"]
    batch = [entry.get(key) for key in ("global_batch", "micro_batch", "dp", "grad_accumulation")]
    if all(isinstance(value, int) for value in batch):
        assert batch[0] == batch[1] * batch[2] * batch[3]
    if entry.get("refusal"):
        assert entry["valid"] is False
    assert "fp8_format" not in entry or entry["fp8"] is True


def test_megatron_virtual_stages_come_from_layers_per_stage():
    """--num-layers-per-virtual-pipeline-stage 1 on Mixtral's 32 layers with pp 4 is 8 virtual
    stages (Megatron-LM arguments.py); NeMo's virtual_pipeline_model_parallel_size is given."""
    entry = EXPECTED["megatron_mixtral_8x7b_release.yaml"]
    layers = load_preset(entry["model"]).spec.n_layers
    assert entry["vpp"] == layers // entry["pp"] // 1
    for name in ("nemo_launcher_llama3_70b.yaml", "nemo_launcher_gpt3_175b.yaml",
                 "nemo_launcher_mixtral_8x7b.yaml"):
        nemo = EXPECTED[name]
        assert load_preset(nemo["model"]).spec.n_layers % (nemo["pp"] * nemo["vpp"]) == 0
