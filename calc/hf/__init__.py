"""Hugging Face config.json → ModelSpec, and back, for the decoder model types transformers builds.

    spec = calc.ModelSpec.from_hf_config("Qwen3-0.6B/config.json")
    python -m calc path/to/config.json --tokens 1e12 --gpu h100

Supported: calc.hf.defaults.supported_types(), read by calc.hf.readers and the family modules
calc/hf/family_*.py. A field the file leaves out takes transformers' default for that type
(calc.hf.defaults, with the transformers version it was read from); each type's reader repeats
what transformers' modeling code builds from the config. A config the spec cannot express
exactly, or one transformers itself refuses, is a CalcError naming the field: a count is never
silently wrong; an unknown model_type names the closest supported ones (calc.hf.unknown). A
multimodal config is counted by its language model (calc.hf.multimodal); a quantized one by its
unquantized model, with the storage of its weights in hf_notes (calc.hf.quantization).
calc.hf.export writes a spec back as a config. Neither torch nor transformers is imported here
(calc.verify.hf_reference builds transformers' model).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from calc.errors import CalcError, one_line
from calc.hf.defaults import supported_types
from calc.hf.fields import HFConfig
from calc.hf.multimodal import is_multimodal, language_config
from calc.hf.quantization import note as quantization_note
from calc.hf.quantization import quantization
from calc.hf.readers import READERS
from calc.hf.unknown import unsupported
from calc.spec import ModelSpec

__all__ = ["default_name", "hf_config_from_spec", "hf_notes", "read_hf_config",
           "spec_from_hf_config", "supported_types"]


def read_hf_config(path: str | Path) -> dict[str, Any]:
    """The JSON object in a config.json file; CalcError naming the file on any problem."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CalcError(f"config file {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CalcError(f"config file {str(path)!r} cannot be read as JSON: {error}") from None
    if not isinstance(data, dict):
        raise CalcError(f"config file {str(path)!r} holds a {type(data).__name__}, "
                        f"expected a JSON object")
    return data


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


def hf_config_from_spec(spec: ModelSpec) -> dict[str, Any]:
    """A config dict of a transformers architecture that builds exactly `spec` (calc.hf.export)."""
    from calc.hf.export import hf_config_from_spec as export

    return export(spec)
