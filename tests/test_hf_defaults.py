"""Each model type's defaults against the installed transformers' config classes: drift is an
error.

calc reads a config.json the way transformers does, so the defaults it fills in for missing
fields must be transformers' own (each ModelType keeps them as data, calc/hf/families/, read from
calc.hf.model_type.TRANSFORMERS_VERSION). A new transformers release that changes one fails
here, naming the field.
"""

from __future__ import annotations

import dataclasses

import pytest

transformers = pytest.importorskip("transformers")

from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # noqa: E402

from calc.hf.model_type import TRANSFORMERS_VERSION, ModelType  # noqa: E402
from calc.hf.registry import MODEL_TYPES  # noqa: E402


def _with(what: str) -> list[ModelType]:
    """The model types whose `what` is not empty."""
    return [kind for kind in MODEL_TYPES if getattr(kind, what)]


def fields(model_type: str) -> dict[str, object]:
    """The config class's dataclass fields and their defaults (MISSING for none)."""
    return {field.name: field.default for field in dataclasses.fields(CONFIG_MAPPING[model_type])}


def test_the_defaults_were_read_from_the_installed_version():
    assert transformers.__version__ == TRANSFORMERS_VERSION, (
        "re-read every ModelType's defaults (calc/hf/families/) from this transformers, then "
        "update TRANSFORMERS_VERSION (calc/hf/model_type.py) and the pin in pyproject.toml")


@pytest.mark.parametrize("kind", MODEL_TYPES, ids=lambda kind: kind.name)
def test_defaults_equal_the_config_class(kind):
    cls = CONFIG_MAPPING[kind.name]
    known = fields(kind.name)
    attribute_map = getattr(cls, "attribute_map", {})
    for key, ours in kind.defaults.items():
        if key in kind.getattr_fields:
            continue
        name = key if key in known else attribute_map.get(key, key)
        assert name in known, f"{cls.__name__} has no field {key!r}"
        assert known[name] == ours, f"{cls.__name__}.{key}: transformers {known[name]!r}, " \
                                    f"calc's {kind.name} defaults {ours!r}"


@pytest.mark.parametrize("kind", _with("getattr_fields"), ids=lambda kind: kind.name)
def test_getattr_fields_are_still_not_fields(kind):
    """The modeling code reads them with getattr and a fallback; a new field would bring a new
    default, which calc must then follow."""
    for key in kind.getattr_fields:
        assert key not in fields(kind.name), f"{kind.name}: {key} became a config field"


@pytest.mark.parametrize("kind", _with("aliases"), ids=lambda kind: kind.name)
def test_aliases_are_the_classes_attribute_maps(kind):
    attribute_map = CONFIG_MAPPING[kind.name].attribute_map
    for alias, field in kind.aliases.items():
        assert attribute_map.get(alias) == field or attribute_map.get(field) == alias


@pytest.mark.parametrize("kind", _with("legacy_kwargs"), ids=lambda kind: kind.name)
def test_legacy_keywords_still_set_their_field(kind):
    for alias, field in kind.legacy_kwargs.items():
        config = CONFIG_MAPPING[kind.name](**{alias: 128})
        assert getattr(config, field) == 128
