"""Every model type transformers builds as a causal LM is read, refused naming the feature the
spec lacks (calc.hf.unknown.NEEDS), or not a decoder-only language model
(calc.hf.unknown.NOT_DECODER_LMS): a transformers upgrade that adds a type fails here, naming it.

A multimodal wrapper in the mapping (Gemma 4, Qwen 3.5, ...) is covered through the text model
its config class builds by default (calc.hf.multimodal): read when calc.hf.multimodal.WRAPPERS
knows its tie rule, refused when its text model is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # noqa: E402
from transformers.models.auto.modeling_auto import (  # noqa: E402
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
)

from calc.errors import CalcError  # noqa: E402
from calc.hf import spec_from_hf_config, supported_types  # noqa: E402
from calc.hf.multimodal import WRAPPERS  # noqa: E402
from calc.hf.unknown import NEEDS, NOT_DECODER_LMS  # noqa: E402

CAUSAL_LMS = sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def _text_type(model_type: str) -> str | None:
    """The model_type of a wrapper's default text_config (None: not a wrapper)."""
    cls = CONFIG_MAPPING[model_type]
    if "text_config" not in getattr(cls, "sub_configs", {}):
        return None
    if model_type in WRAPPERS:
        return WRAPPERS[model_type][0]
    # the sub-config's class, or (AutoConfig) the default the wrapper's __post_init__ builds
    text = getattr(cls.sub_configs["text_config"], "model_type", "")
    if text:
        return text
    try:
        return cls().text_config.model_type
    except Exception:  # a class whose own defaults do not validate (gemma4_assistant)
        return None


def coverage(model_type: str) -> str | None:
    """How calc covers a type of the mapping, or None where it does not."""
    if model_type in supported_types():
        return "read"
    if model_type in NEEDS:
        return f"refused: needs {NEEDS[model_type]}"
    if model_type in NOT_DECODER_LMS:
        return f"not a decoder-only LM: {NOT_DECODER_LMS[model_type]}"
    text = _text_type(model_type)
    if text in NEEDS:
        return f"refused through its text model {text}"
    if text in supported_types() and model_type in WRAPPERS:
        return f"its language model {text} is read"
    return None


def test_every_causal_lm_type_is_read_or_refused_by_name():
    missing = [t for t in CAUSAL_LMS if coverage(t) is None]
    assert not missing, (f"transformers {transformers.__version__} builds these causal-LM types "
                         f"that calc neither reads nor refuses naming a feature: {missing}")


def test_the_tables_hold_only_types_transformers_builds_and_calc_does_not_read():
    read = set(supported_types())
    assert not read & set(NEEDS) and not read & set(NOT_DECODER_LMS)
    assert not set(NEEDS) & set(NOT_DECODER_LMS)
    assert set(NOT_DECODER_LMS) <= set(CAUSAL_LMS)
    assert set(NEEDS) <= set(CONFIG_MAPPING)  # a text model may sit under its wrapper's entry


@pytest.mark.parametrize("model_type", sorted(NEEDS))
def test_a_refused_type_is_refused_with_its_feature(model_type):
    with pytest.raises(CalcError, match=r"needs .* which calc's spec cannot express") as error:
        spec_from_hf_config({"model_type": model_type})
    assert NEEDS[model_type] in str(error.value)


@pytest.mark.parametrize("model_type", sorted(NOT_DECODER_LMS))
def test_a_type_that_is_not_a_decoder_lm_says_what_it_is(model_type):
    with pytest.raises(CalcError, match="calc counts decoder-only language models"):
        spec_from_hf_config({"model_type": model_type})


def test_docs_list_every_refused_type_and_its_feature():
    """docs/custom-models.md's table of refused types is calc.hf.unknown.NEEDS, row for row."""
    text = (Path(__file__).parents[1] / "docs" / "custom-models.md").read_text()
    rows = {line.split("|")[1].strip().strip("`"): line.split("|")[2].strip()
            for line in text.splitlines() if line.startswith("| `")}
    assert rows == NEEDS
