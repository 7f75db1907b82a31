"""What calc builds without pydantic's validator is what the validator builds (calc.spec.trusted,
Frozen.unchecked): every preset and GPU entry, random specs, the workload a user passes, the
default fine-tuning and every part of the main report. "The same" is strict: the same classes,
the same fields set, the same values of the same types (a tuple is not a list, 1.0 is not 1)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError

import calc
from calc.presets import (
    Preset,
    PublishedParams,
    PublishedRun,
    _data_dir,
    _model_files,
    _preset_from_mapping,
)
from calc.reports.estimate import Report
from calc.spec import GPU, ModelSpec, Workload
from calc.spec import trusted as trust
from calc.spec.base import Frozen
from calc.spec.finetune import FULL_TRAINING, FineTune
from tests.draws import examples
from tests.strategies import model_specs


def same(a: Any, b: Any, where: str = "") -> None:
    """`a` and `b` alike in class, fields set, keys and their order, and every value's type."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, BaseModel):
        assert a.model_fields_set == b.model_fields_set, where
        for name in type(a).model_fields:
            same(getattr(a, name), getattr(b, name), f"{where}.{name}")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def test_same_tells_apart_what_equality_does_not():
    """The comparison itself: == holds for all three pairs, `same` for none."""
    with pytest.raises(AssertionError):
        same((1, 2), [1, 2])
    with pytest.raises(AssertionError):
        same(1, 1.0)
    with pytest.raises(AssertionError):
        same(FineTune(), FineTune(method="full"))  # equal values, different fields set


@pytest.mark.parametrize("name", calc.list_presets())
def test_every_preset_is_built_as_validation_builds_it(name):
    """What load_preset builds without validating is what validating the file builds."""
    data = tomllib.loads(_model_files()[name].read_text(encoding="utf-8"))
    same(calc.load_preset(name), _preset_from_mapping(name, data, f"preset {name}"), name)
    # and built without the validator (_build raises where trusted falls back to it)
    trust._build(ModelSpec, {"name": name, **data["spec"]})
    published = data.get("published", {})
    for model, key in ((PublishedParams, "params"), (PublishedRun, "training")):
        if key in published:
            trust._build(model, published[key])


def test_every_gpu_is_built_as_validation_builds_it():
    data = tomllib.loads((_data_dir() / "gpus.toml").read_text(encoding="utf-8"))
    for name, entry in data.items():
        same(trust._build(GPU, {"name": name, **entry}),
             GPU.model_validate({"name": name, **entry}), name)
    assert set(calc.load_gpus()) == set(data)


@settings(max_examples=examples(150), deadline=None)
@given(spec=model_specs(max_layers=6))
def test_random_specs_are_built_as_validation_builds_them(spec):
    """Every option a spec allows, written as a JSON file writes it (tuples as arrays)."""
    data = json.loads(spec.model_dump_json(exclude_unset=True))
    same(trust.trusted(ModelSpec, data), ModelSpec.model_validate(data))


SPEC = {"vocab_size": 10, "d_model": 8, "n_layers": 2, "context_length": 16,
        "position": {"kind": "rope"}, "attention": {"n_heads": 2},
        "ffn": {"d_ff": 16, "activation": "gelu"}}


def test_what_trusted_cannot_convert_goes_to_the_validator():
    with pytest.raises(ValidationError, match="typo"):  # a key the class lacks
        trust.trusted(ModelSpec, {**SPEC, "typo": 1})
    for data in ({**SPEC, "n_layers": "2"}, {**SPEC, "ffn": [16]}):  # no TOML type of the field
        with pytest.raises(trust._Unknown):
            trust._build(ModelSpec, data)
    same(trust.trusted(ModelSpec, {**SPEC, "n_layers": "2"}), ModelSpec.model_validate(SPEC))


def test_trusted_data_is_not_checked():
    """Bounds and cross-field rules are the validator's: trusted data passes them because the
    tests above validate every file calc ships, not because `trusted` checks them."""
    assert trust.trusted(ModelSpec, {**SPEC, "n_layers": 0}).n_layers == 0
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        ModelSpec.model_validate({**SPEC, "n_layers": 0})


def test_full_training_is_finetune_defaults():
    same(FULL_TRAINING, FineTune())


VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10**20), st.floats(allow_nan=True),
    st.text(max_size=4),
    st.sampled_from(["2T", "1.5B", " 3 ", "2_000", "causal", "full", "bf16", "fp8", "a100",
                     "0.4", "nan", "-1", [], {}]))


@settings(max_examples=examples(400), deadline=None)
@given(values=st.dictionaries(st.sampled_from([*Workload.model_fields, "typo"]), VALUES))
def test_checked_workload_is_what_validation_builds(values):
    """Accepted without the validator only when the validator builds the same object."""
    try:
        expected = Workload(**values)
    except ValidationError:
        expected = None
    try:
        built = trust._checked(Workload, values)
    except trust._Unknown:
        return  # checked() validates these
    assert expected is not None, f"accepted without the validator: {values!r}"
    same(built, expected)


def test_checked_accepts_what_users_give():
    """The plain values calc.estimate gets take the fast path (the test above needs them to)."""
    values = {"tokens": "2T", "seq_len": 4096, "attention": "full", "gpu": "a100",
              "dtype": "fp8", "mfu": 1, "gpus": 8}
    same(trust._checked(Workload, values), Workload(**values))


def test_checked_raises_the_validators_error():
    with pytest.raises(ValidationError, match=r"tokens: -1 is outside \[1, 1e18\]"):
        trust.checked(Workload, {"tokens": -1})


def revalidated(value: Any) -> Any:
    """`value` rebuilt by the validators from the fields it set, innermost first."""
    if isinstance(value, BaseModel):
        return type(value).model_validate(
            {name: revalidated(getattr(value, name)) for name in value.model_fields_set})
    if isinstance(value, dict):
        return {key: revalidated(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(revalidated(item) for item in value)
    return value


ESTIMATES = [
    {}, {"tokens": 2e12, "gpu": "a100"}, {"tokens": "1T", "gpu": "h100", "gpus": 64, "mfu": 1},
    {"seq_len": 1024, "attention": "full"}, {"tokens": 1e12, "gpu": "h100", "precision": "fp8"},
    {"tokens": 1e12, "gpu": "h100", "price": 2, "pue": 1.2, "grid_intensity": 400},
    {"tokens": 1e12, "gpu": "a100", "energy": True, "dtype": "fp16"},
    {"finetune": "lora", "lora_rank": 16, "lora_targets": "all-linear"},
    {"finetune": "qlora", "tokens": 1e9, "gpu": "a100"},
]


@pytest.mark.parametrize("name", calc.list_presets())
def test_every_report_part_is_what_validation_builds(name):
    """The main report's parts are built unchecked (Frozen.unchecked); validated they are the
    same, for every preset with and without a training run."""
    for options in ESTIMATES[:2]:
        report = calc.estimate(name, **options)
        same(report, revalidated(report), f"{name} {options}")


@pytest.mark.parametrize("options", ESTIMATES)
def test_every_option_of_the_report_is_what_validation_builds(options):
    for name in ("llama2-7b", "mixtral-8x7b", "gpt2", "deepseek-v3"):
        try:
            report = calc.estimate(name, **options)
        except calc.CalcError:  # an option the model does not allow (a target it lacks)
            continue
        same(report, revalidated(report), f"{name} {options}")
        assert isinstance(report, Report)


def test_unchecked_is_model_construct():
    values = {"name": "x", "title": "t", "source": "s",
              "spec": calc.load_preset("gpt2").spec}
    same(Preset.unchecked(**values), Preset.model_construct(**values))
    same(Preset.unchecked(**values), Preset(**values))
    with pytest.raises(TypeError, match="no field 'typo'"):
        Preset.unchecked(**values, typo=1)
    with pytest.raises(TypeError, match="source is required"):
        Preset.unchecked(name="x", title="t", spec=values["spec"])


class Box(Frozen):
    items: list[int] = Field(default_factory=list)
    shape: tuple[int, ...] = (1, 2)


def test_defaults_are_each_instances_own():
    """A default a factory gives (a list) is each instance's own, as validation gives it."""
    first, second = Box.unchecked(), Box.unchecked()
    same(first, Box())
    assert first.items is not second.items
    same(Box.unchecked(items=[3]), Box(items=[3]))


def test_the_main_command_builds_no_validator():
    """`python -m calc MODEL --tokens --gpu` validates nothing with pydantic: no class builds its
    schema, and pydantic's plugin search (every installed package's metadata) never runs."""
    code = "\n".join([
        "import contextlib, io, json, runpy, sys",
        "sys.argv = ['calc', 'llama2-7b', '--tokens', '2e12', '--gpu', 'a100']",
        "with contextlib.redirect_stdout(io.StringIO()):",
        "    try:",
        "        runpy.run_module('calc', run_name='__main__')",
        "    except SystemExit as exit_:",
        "        assert exit_.code == 0",
        "from calc.spec.base import Frozen",
        "def every(cls):",
        "    for sub in cls.__subclasses__():",
        "        yield sub",
        "        yield from every(sub)",
        "built = sorted(c.__name__ for c in every(Frozen) if c.__pydantic_complete__)",
        "print(json.dumps([built, 'pydantic.plugin._loader' in sys.modules]))",
    ])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == [[], False]
