"""Read the training config a user already has: DeepSpeed JSON, a Megatron-LM argument list
(a launch script, or a release-test YAML's MODEL_ARGS), a NeMo launcher YAML, a torchtitan
TOML (2024 and 2025 layouts), an axolotl, LLaMA-Factory or alignment-handbook YAML, or a
transformers TrainingArguments JSON.

Each reader maps the settings calc models onto calc.memory's keyword arguments, keeps every
setting it read with what it became, and lists every setting it ignored, so nothing in the file
is silently dropped. `read_trainer_config(path)` picks the reader by the file's shape.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from calc.errors import CalcError
from calc.trainers.base import Setting, TrainerConfig

__all__ = ["FORMATS", "Setting", "TrainerConfig", "read_trainer_config"]

FORMATS = ("deepspeed", "megatron", "nemo", "torchtitan", "axolotl", "llama-factory",
           "alignment-handbook", "transformers")


def _load_yaml(text: str, path: Path) -> Any:
    try:
        import yaml  # an optional dependency: calc[configs]
    except ImportError:
        raise CalcError(f"--from {path}: reading YAML needs PyYAML (pip install pyyaml)") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        reason = " ".join(str(error).split())
        raise CalcError(f"--from {path}: not valid YAML ({reason})") from None


def read_trainer_config(path: str | Path) -> TrainerConfig:
    """The settings of the trainer config at `path`, its format found from its content."""
    from calc.trainers import deepspeed, megatron, torchtitan, transformers_args

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise CalcError(f"--from {path}: cannot read it ({error.strerror})") from None
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise CalcError(f"--from {path}: not valid JSON ({error})") from None
        if not isinstance(data, dict):
            raise CalcError(f"--from {path}: expected a JSON object of settings")
        reader = deepspeed if deepspeed.looks_like(data) else transformers_args
        return reader.read(data, path)
    if suffix == ".toml":
        try:
            return torchtitan.read(tomllib.loads(text), path)
        except tomllib.TOMLDecodeError as error:
            raise CalcError(f"--from {path}: not valid TOML ({error})") from None
    if suffix in (".yml", ".yaml"):
        data = _load_yaml(text, path)
        if not isinstance(data, dict):
            raise CalcError(f"--from {path}: expected a YAML mapping of settings")
        return _read_yaml(data, path)
    if megatron.looks_like(text):
        return megatron.read(text, path)
    raise CalcError(f"--from {path}: not a config calc reads; expected one of "
                    f"{', '.join(FORMATS)} (.json, .toml, .yml, or a Megatron-LM argument list)")


def _read_yaml(data: dict[str, Any], path: Path) -> TrainerConfig:
    """A YAML by its shape: Megatron-LM's release tests (MODEL_ARGS), NeMo's launcher,
    LLaMA-Factory, the alignment handbook, else axolotl."""
    from calc.trainers import axolotl, handbook, llamafactory, megatron, nemo

    if isinstance(data.get("MODEL_ARGS"), dict):
        flags = {str(flag): [] if value is True else [str(value)]
                 for flag, value in data["MODEL_ARGS"].items() if value is not False}
        config = megatron.read_flags(flags, path)
        config.ignored.extend(key for key in data if key != "MODEL_ARGS")
        return config
    if nemo.looks_like(data):
        return nemo.read(data, path)
    if llamafactory.looks_like(data):
        return llamafactory.read(data, path)
    if handbook.looks_like(data):
        return handbook.read(data, path)
    return axolotl.read(data, path)
