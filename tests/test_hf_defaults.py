"""calc.hf.defaults against the installed transformers' config classes: drift is an error.

calc reads a config.json the way transformers does, so the defaults it fills in for missing
fields must be transformers' own (calc.hf.defaults keeps them as data with the version they were
read from). A new transformers release that changes one fails here, naming the field.
"""

from __future__ import annotations

import dataclasses

import pytest

transformers = pytest.importorskip("transformers")

from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # noqa: E402

from calc.hf.defaults import (  # noqa: E402
    ALIASES,
    DEFAULTS,
    EXTRA_ATTRIBUTES,
    LEGACY_KWARGS,
    TRANSFORMERS_VERSION,
)


def fields(model_type: str) -> dict[str, object]:
    """The config class's dataclass fields and their defaults (MISSING for none)."""
    return {field.name: field.default for field in dataclasses.fields(CONFIG_MAPPING[model_type])}


def test_the_defaults_were_read_from_the_installed_version():
    assert transformers.__version__ == TRANSFORMERS_VERSION, (
        "re-read calc/hf/defaults.py from this transformers, then update TRANSFORMERS_VERSION "
        "and the pin in pyproject.toml")


@pytest.mark.parametrize("model_type", sorted(DEFAULTS))
def test_defaults_equal_the_config_class(model_type):
    cls = CONFIG_MAPPING[model_type]
    known = fields(model_type)
    attribute_map = getattr(cls, "attribute_map", {})
    for key, ours in DEFAULTS[model_type].items():
        if key in EXTRA_ATTRIBUTES.get(model_type, ()):
            continue
        name = key if key in known else attribute_map.get(key, key)
        assert name in known, f"{cls.__name__} has no field {key!r}"
        assert known[name] == ours, f"{cls.__name__}.{key}: transformers {known[name]!r}, " \
                                    f"calc.hf.defaults {ours!r}"


@pytest.mark.parametrize("model_type", sorted(EXTRA_ATTRIBUTES))
def test_extra_attributes_are_still_not_fields(model_type):
    """The modeling code reads them with getattr and a fallback; a new field would bring a new
    default, which calc must then follow."""
    for key in EXTRA_ATTRIBUTES[model_type]:
        assert key not in fields(model_type), f"{model_type}: {key} became a config field"


@pytest.mark.parametrize("model_type", sorted(ALIASES))
def test_aliases_are_the_classes_attribute_maps(model_type):
    attribute_map = CONFIG_MAPPING[model_type].attribute_map
    for alias, field in ALIASES[model_type].items():
        assert attribute_map.get(alias) == field or attribute_map.get(field) == alias


@pytest.mark.parametrize("model_type", sorted(LEGACY_KWARGS))
def test_legacy_keywords_still_set_their_field(model_type):
    for alias, field in LEGACY_KWARGS[model_type].items():
        config = CONFIG_MAPPING[model_type](**{alias: 128})
        assert getattr(config, field) == 128
