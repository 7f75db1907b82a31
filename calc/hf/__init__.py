"""Hugging Face config.json → ModelSpec, and back, for the decoder model types transformers builds.

    spec = calc.spec_from_hf_config("Qwen3-0.6B/config.json")
    python -m calc path/to/config.json --tokens 1e12 --gpu h100

Supported: calc.hf.supported_types(), every model_type calc.hf.registry lists. Each is a
ModelType (calc.hf.model_type) in its family's module, calc/hf/families/<family>.py: its reader,
which repeats what transformers' modeling code builds from the config; its defaults, which a
field the file leaves out takes (read from the transformers version TRANSFORMERS_VERSION
names); its writer and traits. A config the spec cannot express exactly, or one transformers
itself refuses, is a CalcError naming the field: a count is never silently wrong; an unknown
model_type names the closest supported ones (calc.hf.unknown). A multimodal config is counted by
its language model (calc.hf.multimodal); a quantized one by its unquantized model, with the
storage of its weights in hf_notes (calc.hf.quantization); a Hub model id is read through
huggingface_hub (calc.hf.hub). calc.hf.export writes a spec back as a config, trying the
writers in the registry's order. Neither torch nor transformers is imported here
(calc.verify.hf_reference builds transformers' model).
"""

from __future__ import annotations

from typing import Any

from calc.hf.config import (
    HFModel,
    default_name,
    hf_notes,
    read_hf,
    read_hf_config,
    spec_from_hf_config,
)
from calc.hf.registry import supported_types
from calc.spec import ModelSpec

__all__ = ["HFModel", "default_name", "hf_config_from_spec", "hf_notes", "read_hf",
           "read_hf_config",
           "spec_from_hf_config", "supported_types"]


def hf_config_from_spec(spec: ModelSpec) -> dict[str, Any]:
    """A config dict of a transformers architecture that builds exactly `spec` (calc.hf.export)."""
    from calc.hf.export import hf_config_from_spec as export

    return export(spec)
