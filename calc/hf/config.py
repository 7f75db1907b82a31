"""Reading a Hugging Face config.json into a ModelSpec (calc.hf's front door; see calc.hf)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from calc.errors import CalcError, one_line
from calc.files import read_mapping
from calc.hf.fields import HFConfig
from calc.hf.multimodal import is_multimodal, language_config
from calc.hf.quantization import note as quantization_note
from calc.hf.quantization import quantization
from calc.hf.readers import READERS
from calc.hf.unknown import unsupported
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
    if config.get("model_type") not in READERS and is_multimodal(config):
        config, _ = language_config(config, where)
        where = f"{where}, text_config"
    model_type = config.get("model_type")
    if model_type not in READERS:
        raise unsupported(model_type, config, where)
    c = HFConfig(config, where)
    spec = READERS[model_type](c)
    label = name or config.get("_name_or_path") or model_type
    try:
        return ModelSpec.model_validate({"name": str(label), **spec})
    except ValidationError as error:
        raise CalcError(one_line(error, f"{c.where}, as calc spec")) from None


def hf_notes(config: dict[str, Any]) -> list[str]:
    """What the report says about a config.json beyond its counts: the towers a multimodal
    model's count leaves out, and the storage of quantized weights."""
    notes = []
    if config.get("model_type") not in READERS and is_multimodal(config):
        notes.append(language_config(config, "")[1])
    stored = quantization(config)
    if stored is not None:
        notes.append(quantization_note(stored))
    return notes
