"""Reading a Hugging Face config.json into a ModelSpec (calc.hf's front door; see calc.hf)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from calc.errors import CalcError, one_line
from calc.files import read_mapping
from calc.hf.defaults import supported_types
from calc.hf.fields import HFConfig
from calc.hf.readers import READERS
from calc.spec import ModelSpec


def read_hf_config(path: str | Path) -> dict[str, Any]:
    """The JSON object in a config.json file; CalcError naming the file on any problem."""
    return read_mapping(path, "config file")


def default_name(path: str | Path) -> str:
    """Qwen3-0.6B/config.json → 'Qwen3-0.6B'; my-model.json → 'my-model'."""
    path = Path(path)
    return (path.parent.name or path.stem) if path.stem == "config" else path.stem


def spec_from_hf_config(config: dict[str, Any] | str | Path, name: str | None = None,
                        where: str | None = None) -> ModelSpec:
    """The ModelSpec of a Hugging Face config (the dict of a config.json, or its path)."""
    if not isinstance(config, dict):
        where = where or f"config file {str(config)!r}"
        name = name or default_name(config)
        config = read_hf_config(config)
    where = where or "Hugging Face config"
    model_type = config.get("model_type")
    if model_type not in READERS:
        raise CalcError(f"{where}: model_type={model_type!r} is not supported; supported: "
                        f"{', '.join(supported_types())}")
    c = HFConfig(config, where)
    spec = READERS[model_type](c)
    label = name or config.get("_name_or_path") or model_type
    try:
        return ModelSpec.model_validate({"name": str(label), **spec})
    except ValidationError as error:
        raise CalcError(one_line(error, f"{c.where}, as calc spec")) from None
