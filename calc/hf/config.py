"""Reading a Hugging Face config.json into a ModelSpec (calc.hf's front door; see calc.hf).

Every reader (a ModelType's, calc/hf/families/) goes through `read_hf`, which also settles,
once for all of them, what a config leaves to assumption and says so in `HFModel.notes`: the
context T calc uses and why (a long-context config's max_position_embeddings is not the context
it was pre-trained at), every field the file leaves out that transformers' default filled, the
towers a multimodal model's count leaves out (calc.hf.multimodal) and the storage of quantized
weights (calc.hf.quantization). An unknown model_type gets calc.hf.unknown's one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from calc.errors import CalcError, one_line
from calc.files import read_mapping
from calc.hf.fields import HFConfig
from calc.hf.multimodal import is_multimodal, language_config
from calc.hf.quantization import note as quantization_note
from calc.hf.quantization import quantization
from calc.hf.registry import find
from calc.hf.unknown import unsupported
from calc.spec import ModelSpec


def read_hf_config(path: str | Path) -> dict[str, Any]:
    """The JSON object in a config.json file; CalcError naming the file on any problem."""
    return read_mapping(path, "config file")


def default_name(path: str | Path) -> str:
    """Qwen3-0.6B/config.json → 'Qwen3-0.6B'; my-model.json → 'my-model'."""
    path = Path(path)
    return (path.parent.name or path.stem) if path.stem == "config" else path.stem


@dataclass(frozen=True)
class HFModel:
    """A config.json read: its spec, and what the report should say about how it was read."""

    spec: ModelSpec
    notes: tuple[str, ...]


def spec_from_hf_config(config: dict[str, Any] | str | Path, name: str | None = None,
                        where: str | None = None) -> ModelSpec:
    """The ModelSpec of a Hugging Face config (the dict of a config.json, or its path)."""
    return read_hf(config, name, where).spec


def read_hf(config: dict[str, Any] | str | Path, name: str | None = None,
            where: str | None = None) -> HFModel:
    """The ModelSpec of a Hugging Face config with the notes its report should carry."""
    if not isinstance(config, dict):
        where = where or f"config file {str(config)!r}"
        name = name or default_name(config)
        config = read_hf_config(config)
    where = where or "Hugging Face config"
    original = config
    if find(config.get("model_type")) is None and is_multimodal(config):
        config, _ = language_config(config, where)
        where = f"{where}, text_config"
    model_type = config.get("model_type")
    kind = find(model_type)
    if kind is None:
        raise unsupported(model_type, config, where)
    c = HFConfig(config, where, kind)
    spec = kind.read(c)
    context = training_context(c, spec)
    label = name or config.get("_name_or_path") or model_type
    try:
        built = ModelSpec.model_validate({"name": str(label), **spec})
    except ValidationError as error:
        raise CalcError(one_line(error, f"{c.where}, as calc spec")) from None
    return HFModel(built, (context, *c.defaulted_note(), *hf_notes(original)))


# RoPE types whose parameters name the pre-training length: transformers'
# standardize_rope_params (modeling_rope_utils.py) gives them original_max_position_embeddings
# ("the original max position embeddings used during pretraining"), from the config's top level
# first (Phi-3 keeps it there), else from the RoPE parameters, else max_position_embeddings.
# "su" is Phi-3's first name for longrope.
_SCALED_ROPE = ("llama3", "yarn", "longrope", "su")
# Fields that give a context, and what the value means: a limit, or the training length BLOOM's
# files record.
_LIMIT = "the longest context it allows; the config does not state the pre-training context, " \
    "which may be shorter"
_CONTEXT_KEYS = {"max_position_embeddings": _LIMIT, "n_positions": _LIMIT, "n_ctx": _LIMIT,
                 "max_sequence_length": _LIMIT,
                 "seq_length": "the sequence length the model was trained at",
                 # CPM-Ant: CpmAntConfig's "maximum sequence length that this model might ever
                 # be used with", the longest distance its position buckets tell apart
                 "position_bias_max_distance": _LIMIT}


def _rope_parameters(c: HFConfig) -> dict[str, Any]:
    """The config's RoPE parameters (rope_parameters in transformers 5, rope_scaling in older
    files); of several per layer type, the first with a scaled type."""
    found = c.values.get("rope_parameters") or c.values.get("rope_scaling") or {}
    if not isinstance(found, dict):
        return {}
    nested = [v for v in found.values() if isinstance(v, dict)]
    if nested and len(nested) == len(found):
        scaled = [v for v in nested if v.get("rope_type", v.get("type")) in _SCALED_ROPE]
        return (scaled or nested)[0]
    return found


def training_context(c: HFConfig, spec: dict[str, Any]) -> str:
    """Set spec["context_length"] to the pre-training context where the config states it (a
    scaled RoPE's original_max_position_embeddings) and return the sentence that says which
    context T is and why."""
    given = spec["context_length"]
    kind = spec.get("position", {}).get("kind")
    if kind == "learned":
        return (f"Context T = {given:,}: the rows of the learned position table, the longest "
                f"sequence the model has positions for.")
    rope = _rope_parameters(c)
    rope_type = rope.get("rope_type", rope.get("type"))
    if kind == "rope" and rope_type in _SCALED_ROPE:
        original = c.values.get("original_max_position_embeddings",
                                rope.get("original_max_position_embeddings"))
        where = ("original_max_position_embeddings" if "original_max_position_embeddings"
                 in c.values else "rope_scaling.original_max_position_embeddings")
        if isinstance(original, int) and not isinstance(original, bool) and \
                0 < original < given:
            spec["context_length"] = original
            factor = rope.get("factor")
            scaled = f" × {factor:g}" if isinstance(factor, int | float) else ""
            return (f"Context T = {original:,}: the pre-training context, the config's {where} "
                    f"(its {rope_type} RoPE scaling{scaled} extends it to "
                    f"max_position_embeddings = {given:,}, a long-context limit reached after "
                    f"pre-training); --seq-len sets another.")
    if c.values.get("original_max_position_embeddings") == given and kind == "rope":
        return (f"Context T = {given:,}: the config's max_position_embeddings, which its "
                f"original_max_position_embeddings gives as the pre-training context too.")
    key = next((k for k in _CONTEXT_KEYS if c.values.get(k) == given), None)
    if key is None:
        source = ("transformers' default max_position_embeddings (the file has none)"
                  if "max_position_embeddings" in c.defaulted else
                  f"calc's {c.type} reader's default")
        return f"Context T = {given:,}: {source}; --seq-len sets another."
    return f"Context T = {given:,}: the config's {key}, {_CONTEXT_KEYS[key]} (--seq-len sets " \
        f"another)."


def hf_notes(config: dict[str, Any]) -> list[str]:
    """What the report says about a config.json beyond its counts: the towers a multimodal
    model's count leaves out, and the storage of quantized weights."""
    notes = []
    if find(config.get("model_type")) is None and is_multimodal(config):
        notes.append(language_config(config, "")[1])
    stored = quantization(config)
    if stored is not None:
        notes.append(quantization_note(stored))
    return notes
