"""calc.memory's options as the user gives them: keyword arguments, and a trainer config read
with `from_file` (calc.trainers) whose settings they override; split into the training options
(calc.spec.TrainingMemory), the fine-tuning ones and the offload ones."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from calc.errors import CalcError
from calc.presets import Preset
from calc.reports._finetune import finetune_options
from calc.reports._offload import offload_options
from calc.spec import ModelSpec
from calc.spec.finetune import FineTune
from calc.spec.model import Frozen
from calc.spec.offload import Offload
from calc.trainers import Setting, TrainerConfig, read_trainer_config
from calc.trainers.base import STEP_ONLY

FINETUNE_OPTIONS = ("lora_rank", "lora_targets", "base_dtype", "double_quant", "paged")
OFFLOAD_OPTIONS = {"offload_optimizer": "optimizer", "offload_params": "params",
                   "system": "system", "host_memory_gib": "host_memory_gib",
                   "gpus_per_node": "gpus_per_node"}


class ConfigEcho(Frozen):
    """A trainer config read with --from: every setting read and what it became, every one
    ignored (calc.trainers)."""

    format: str
    path: str
    read: list[dict[str, Any]] = Field(description="key, value and what calc took from it")
    ignored: list[str] = Field(description="settings calc does not model")
    overrides: list[dict[str, Any]] = Field(
        default_factory=list, description="options the file sets and a flag (or keyword) "
                                          "set otherwise: option, file value, value used")


def config_echo(config: TrainerConfig, given: dict[str, Any],
                ignored: list[str] | None = None, read: list[Setting] | None = None,
                options: dict[str, Any] | None = None) -> ConfigEcho:
    """The echo of `config` with `given` (flags, keywords) over its `options` (default the
    reader's): every setting read (`read`, default all), every one ignored, every option a flag
    overrode."""
    options = config.options if options is None else options
    overrides = [{"option": key, "file": options[key], "used": value}
                 for key, value in given.items()
                 if key in options and value is not None and value != options[key]]
    return ConfigEcho(format=config.format, path=config.path,
                      ignored=config.ignored if ignored is None else ignored,
                      read=[{"key": x.key, "value": x.value, "meaning": x.meaning}
                            for x in (config.read if read is None else read)],
                      overrides=overrides)


def split_options(model: str | ModelSpec | Preset | None, from_file: str | None,
                  options: dict[str, Any]) -> tuple[str | ModelSpec | Preset, dict[str, Any],
                                                    FineTune, Offload, ConfigEcho | None]:
    """(the model, the TrainingMemory options, the fine-tuning, the offload, the config echo)."""
    given = {key: value for key, value in options.items() if value is not None}
    echo = None
    if from_file is not None:
        config = read_trainer_config(from_file)
        echo = config_echo(config, given)
        given = {**{k: v for k, v in config.options.items() if k not in STEP_ONLY}, **given}
        model = model if model is not None else config.model
    if model is None:
        raise CalcError(f"model: {from_file} names no model calc knows; give a preset name, "
                        f"spec file or config.json as MODEL")
    finetune = finetune_options(given.pop("finetune", "full"),
                                **{k: given.pop(k) for k in FINETUNE_OPTIONS if k in given})
    offload = offload_options(**{OFFLOAD_OPTIONS[k]: given.pop(k) for k in list(given)
                                 if k in OFFLOAD_OPTIONS})
    return model, given, finetune, offload, echo
