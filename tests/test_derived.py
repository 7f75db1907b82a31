"""What a frozen spec determines is computed once and kept with it (calc.spec.base): the layer
kinds and counts, the formulas' symbols, the parameter counts, a spec's preset. A copy never
reads a value its original kept; equality, hashing and dumps see the fields alone."""

from __future__ import annotations

import copy
import pickle

import pytest

import calc
from calc import evaluate
from calc.evaluate import count_params, symbol_values
from calc.presets import resolve
from calc.spec.layers import LayersSpec
from calc.spec.model import ModelSpec

KEPT = ("mixer_kinds", "attention_kinds", "layer_kinds", "ffn_kinds", "layer_counts",
        "moe_layers")


def fresh(spec: ModelSpec) -> ModelSpec:
    """The same spec validated anew: nothing kept."""
    return ModelSpec.model_validate(spec.model_dump(exclude_unset=True))


@pytest.mark.parametrize("name", ["llama2-7b", "mixtral-8x7b", "mistral-7b", "deepseek-v3"])
def test_derived_values_are_computed_once(name, monkeypatch):
    spec = fresh(calc.load_preset(name).spec)
    for attribute in KEPT:
        assert getattr(spec, attribute) is getattr(spec, attribute), attribute
    assert symbol_values(spec) is symbol_values(spec)
    assert count_params(spec) is count_params(spec)
    assert resolve(spec) is resolve(spec)
    monkeypatch.setattr(evaluate, "_counted", lambda s: pytest.fail("counted again"))
    count_params(spec)


def test_kept_values_cannot_be_changed():
    spec = calc.load_preset("llama2-7b").spec
    with pytest.raises(TypeError):
        spec.layer_counts["attention"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        symbol_values(spec)["L"] = 1  # type: ignore[index]


@pytest.mark.parametrize("name, change", [
    ("mistral-7b", {"n_layers": 5}),
    ("mixtral-8x7b", {"layers": LayersSpec(ffn_pattern=("dense", "moe"))}),
    ("llama2-7b", {"d_model": 1024, "vocab_size": 7}),
])
def test_a_changed_copy_never_reads_its_originals_values(name, change):
    """model_copy(update=...) copies the instance, kept values and all in pydantic's own copy;
    calc's specs drop them, so the copy computes its own."""
    spec = calc.load_preset(name).spec
    for attribute in KEPT:
        getattr(spec, attribute)  # keep them all on the original
    before = (symbol_values(spec), count_params(spec).total, resolve(spec))
    changed = spec.model_copy(update=change)
    expected = fresh(changed)
    for attribute in KEPT:
        assert getattr(changed, attribute) == getattr(expected, attribute), attribute
    assert symbol_values(changed) == symbol_values(expected) != before[0]
    assert count_params(changed).total == count_params(expected).total != before[1]
    assert resolve(changed).spec is changed
    assert (symbol_values(spec), count_params(spec).total, resolve(spec)) == before


def test_copies_start_without_kept_values():
    spec = calc.load_preset("llama2-7b").spec
    spec.layer_counts, symbol_values(spec)
    fields = set(ModelSpec.model_fields)
    assert set(vars(spec)) > fields
    for copied in (copy.copy(spec), copy.deepcopy(spec), spec.model_copy(),
                   spec.model_copy(deep=True)):
        assert set(vars(copied)) == fields
        assert copied == spec and copied.layer_counts == spec.layer_counts
    assert set(vars(spec)) > fields  # the original keeps its own


def test_kept_values_are_invisible_to_equality_hashing_and_dumps():
    spec = calc.load_preset("llama2-7b").spec
    spec.layer_counts, symbol_values(spec), count_params(spec)
    other = fresh(spec)
    assert spec == other and hash(spec) == hash(other) and repr(spec) == repr(other)
    assert spec.model_dump() == other.model_dump()
    assert spec.model_dump_json() == other.model_dump_json()
    unpickled = pickle.loads(pickle.dumps(spec))
    assert unpickled == other and set(vars(unpickled)) == set(ModelSpec.model_fields)


def test_a_spec_a_report_holds_is_not_checked_again(monkeypatch):
    """A ModelSpec given where a spec is expected was checked when it was built; built from
    data it is checked as before."""
    spec = calc.load_preset("llama2-7b").spec
    monkeypatch.setattr(ModelSpec, "_consistent", lambda self: pytest.fail("checked again"))
    calc.estimate(spec, tokens=1e12, gpu="a100")
    calc.Preset(name="x", title="x", source="x", spec=spec)
    monkeypatch.undo()
    data = {**spec.model_dump(exclude_unset=True), "attention": {"n_heads": 3}}
    with pytest.raises(calc.CalcError, match="n_heads=3 does not divide d_model=4096"):
        spec.updated(**{"attention.n_heads": 3, "attention.n_kv_heads": 3})
    with pytest.raises(ValueError, match="does not divide"):
        ModelSpec.model_validate(data)


def test_the_finetuning_block_only_when_asked(monkeypatch):
    from calc.reports import estimate as report

    calls = []
    block = report.finetune_block
    monkeypatch.setattr(report, "finetune_block", lambda *a: calls.append(a) or block(*a))
    assert calc.estimate("llama2-7b", tokens=1e12, gpu="a100").finetune is None
    assert calls == []
    lora = calc.estimate("llama2-7b", finetune="lora", lora_rank=8)
    assert lora.finetune is not None and lora.finetune.method == "lora" and len(calls) == 1
