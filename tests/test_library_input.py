"""The library takes the same values as the CLI and refuses bad ones with one CalcError line
(issue 12: `calc.compare("llama2-7b")` iterated the string, `calc.estimate(None)` raised a
TypeError, "2T" worked on the command line only, an MFU of 1e-300 printed a 300-digit ratio)."""

from __future__ import annotations

import pytest

import calc
from calc.numbers import RANGES, parse, quantity


@pytest.mark.parametrize("text, value", [
    ("2T", 2e12), ("2t", 2e12), ("1.5B", 1.5e9), ("1.5 G", 1.5e9), ("300k", 3e5),
    ("2_000", 2000.0), (" 2e12 ", 2e12), (7, 7.0), (0.4, 0.4),
])
def test_one_parser_reads_what_users_type(text, value):
    assert parse(text) == value


@pytest.mark.parametrize("value", [True, False, None, "abc", "", "nan", "inf", "-inf", [1],
                                   "2X", float("nan")])
def test_the_parser_refuses_what_is_not_a_number(value):
    with pytest.raises(ValueError):
        parse(value)


def test_library_accepts_the_cli_spelling():
    assert calc.estimate("gpt2", tokens="2T").training.tokens == 2e12
    assert calc.estimate("gpt2", tokens="2T", gpu="a100", mfu="0.5").training.mfu == 0.5


@pytest.mark.parametrize("kwargs, message", [
    ({"tokens": True}, "tokens: True is a bool"),
    ({"tokens": 1e-5}, "tokens: 1e-05 is outside [1, 1e18]"),
    ({"tokens": 1e300}, "tokens"),
    ({"tokens": "lots"}, "tokens: 'lots' is not a number"),
    ({"tokens": 1e12, "gpu": "a100", "mfu": 1e-300}, "mfu: 1e-300 is outside [0.001, 1]"),
    ({"tokens": 1e12, "gpu": "a100", "mfu": 1e-320}, "mfu"),
    ({"tokens": 1e12, "mfu": 1.5}, "mfu"),
])
def test_library_bounds_are_the_cli_bounds(kwargs, message):
    with pytest.raises(calc.CalcError) as caught:
        calc.estimate("gpt2", **kwargs)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_every_range_refuses_its_own_edges():
    for kind, bounds in RANGES.items():
        assert quantity(bounds.high, "x", kind) == bounds.high
        with pytest.raises(calc.CalcError):
            quantity(bounds.high * 10, "x", kind)
        with pytest.raises(calc.CalcError):
            quantity(bounds.low / 10 if bounds.low else -1, "x", kind)


@pytest.mark.parametrize("model", [None, 42, "", "   ", ["gpt2"]])
def test_a_model_that_is_not_a_name_is_one_line(model):
    with pytest.raises(calc.CalcError) as caught:
        calc.estimate(model)
    assert "model=" in str(caught.value)


def test_a_path_object_is_a_model(tmp_path):
    source = calc.presets._data_dir() / "models" / "gpt2.toml"
    assert calc.estimate(source).params.total == calc.estimate("gpt2").params.total


def test_compare_of_one_name_is_one_model():
    one = calc.compare("gpt2", groups=["params"])
    assert one.models == ["gpt2"]
    assert one.to_dict() == calc.compare(["gpt2"], groups=["params"]).to_dict()


def test_render_refuses_an_unknown_format_and_a_non_report():
    report = calc.estimate("gpt2")
    with pytest.raises(calc.CalcError, match="format 'yaml'"):
        calc.render(report, "yaml")
    with pytest.raises(calc.CalcError, match="not a calc report"):
        calc.render("gpt2")


def test_library_edges_are_one_line():
    for call, message in [
        (lambda: calc.load_model(None), "model=None"),
        (lambda: calc.get_gpu(None), "gpu=None"),
        (lambda: calc.sweep("gpt2", tokens="lots"), "sweep tokens: 'lots' is not a number"),
    ]:
        with pytest.raises(calc.CalcError, match=message):
            call()
    assert calc.compare("gpt2", groups="params").rows[0].group == "Parameters"
    sweep = calc.sweep("gpt2", tokens=["2T", 1e12], gpu="h100")
    assert sorted(set(sweep["tokens"].tolist())) == [1e12, 2e12]
