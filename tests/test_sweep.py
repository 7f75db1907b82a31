"""calc.sweep against the one-at-a-time path (calc.estimate, count_params, count_flops).

Integers must be equal, not close: the sweep runs the same compiled formulas (traced into
polynomials, calc.sweeps.vectorise) in int64, and a bound proves no row overflows; floats
follow the same operations in the same order, so they are equal too.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calc
from calc import _compiled
from calc.errors import CalcError
from calc.evaluate import count_flops, count_params
from calc.reports.sweep import sweep
from calc.sweeps.vectorise import Plan
from tests.draws import examples
from tests.strategies import model_specs

RNG = np.random.default_rng(20240601)


def _spec_of(row: dict, base: calc.ModelSpec) -> calc.ModelSpec:
    """The spec a sweep row describes, built the validated way (ModelSpec.updated)."""
    changes = {"d_model": row["d_model"], "n_layers": row["n_layers"],
               "vocab_size": row["vocab_size"], "ffn.d_ff": row["d_ff"]}
    changes["attention.n_heads"] = row["n_heads"]
    if base.attention.mla is None:
        changes["attention.n_kv_heads"] = row["n_kv_heads"]
    return base.updated(**changes)


def _check_row(row: dict, base: calc.ModelSpec) -> None:
    spec = _spec_of(row, base)
    report = calc.estimate(spec, seq_len=row["seq_len"], attention=row["attention"],
                           tokens=row.get("tokens"), gpu=row.get("gpu"), mfu=row.get("mfu"),
                           gpus=row.get("gpus", 1))
    p, f = report.params, report.flops_per_token
    assert row["head_dim"] == spec.head_dim_qk
    assert (row["params_total"], row["params_embedding"], row["params_non_embedding"],
            row["params_active"]) == (p.total, p.embedding, p.non_embedding, p.active)
    flops = count_flops(spec, row["seq_len"], row["attention"])
    assert row["flops_attention_seq"] == flops.attention_per_sequence
    assert row["flops_forward"] == f.forward and row["flops_train"] == f.train
    assert row["attention_share"] == pytest.approx(f.attention_share, rel=1e-15)
    if report.training is not None:
        t = report.training
        assert row["training_flops"] == t.flops
        assert row["gpu_hours"] == t.gpu_hours and row["days"] == t.days


GRID = {"d_model": [1024, 2048, 4096], "n_layers": [2, 7, 32], "n_heads": [8, 16, 32],
        "n_kv_heads": [1, 4, 8], "ffn_ratio": [2.5, 8 / 3], "vocab_size": [32000, 50257],
        "seq_len": [128, 4096], "attention": ["causal", "full"], "tokens": [1e9, 2e12],
        "gpu": ["a100", "h100"], "mfu": [0.3, 0.5], "gpus": [1, 1024]}


def test_grid_equals_estimate_row_by_row():
    base = calc.load_preset("llama2-7b").spec
    result = sweep("llama2-7b", **GRID)
    assert len(result) == np.prod([len(v) for v in GRID.values()])
    assert result["params_total"].dtype == np.int64
    for index in RNG.choice(len(result), 150, replace=False):
        _check_row(result.row(int(index)), base)
    # the rows really are the product of the axes, outermost first
    assert result.row(0)["d_model"] == 1024 and result.row(-1)["d_model"] == 4096
    assert result.row(1)["gpus"] == 1024 and result.row(-1)["gpu"] == "h100"


@pytest.mark.parametrize("name, axes, dropped", [
    # DeepSeek-V3: MLA, first 3 layers dense; 2 or 3 layers leave no MoE layer
    ("deepseek-v3", {"n_layers": [2, 3, 4, 61], "n_heads": [64, 128],
                     "d_model": [4096, 7168]}, "no MoE layer left: 8"),
    # Mistral 7B: every layer a 4096-key sliding window; GQA 8 KV heads stay 8
    ("mistral-7b", {"n_layers": [1, 32], "n_heads": [8, 32, 12], "seq_len": [2048, 32768]},
     "n_kv_heads does not divide n_heads: 4"),
    # GPT-2: learned positions (1024 rows), tied head, biases; MHA heads follow n_heads
    ("gpt2", {"seq_len": [512, 1024, 2048], "n_heads": [12, 8], "d_model": [768, 1000]},
     "seq_len beyond the learned position table: 4"),
    ("mixtral-8x7b", {"n_layers": [1, 4], "d_ff": [1, 14336], "tokens": [1e12],
                      "gpu": ["h100", "mi300x"]}, None),
])
def test_structures_equal_estimate(name, axes, dropped):
    base = calc.load_preset(name).spec
    result = sweep(name, **axes)
    for index in range(len(result)):
        _check_row(result.row(index), base)
    notes = " ".join(result.conventions)
    assert (dropped in notes) if dropped else "dropped" not in notes


@settings(max_examples=examples(25), deadline=None)
@given(specs=st.lists(model_specs(), min_size=1, max_size=6),
       attention=st.sampled_from(["causal", "full"]))
def test_explicit_list_of_mixed_specs(specs, attention):
    """Every structure indicator varying at once: one traced polynomial per output (a looped
    spec's loop dropped: a sweep refuses it, test_a_sweep_refuses_looped_layers_in_one_line)."""
    specs = [s.updated(name=f"m{i}", loop=None) for i, s in enumerate(specs)]
    result = sweep(specs, attention=attention)
    assert len(result) == len(specs)
    for index, spec in enumerate(specs):
        row = result.row(index)
        counts, flops = count_params(spec), count_flops(spec, spec.context_length, attention)
        assert (row["params_total"], row["params_non_embedding"], row["params_active"]) == (
            counts.total, counts.non_embedding, counts.active)
        assert row["flops_attention_seq"] == flops.attention_per_sequence
        assert row["flops_forward"] == flops.forward and row["model"] == spec.name


def test_a_sweep_refuses_looped_layers_in_one_line():
    """Parameters count a looped model's stored layers and FLOPs its passes (calc.spec.loop):
    one row of symbols cannot hold both."""
    from calc.hf import spec_from_hf_config

    spec = spec_from_hf_config({"model_type": "hrm_text", "num_hidden_layers": 2})
    with pytest.raises(calc.CalcError, match="runs stored layers more than once") as error:
        sweep([spec])
    assert "\n" not in str(error.value)


def test_zip_equals_grid():
    d, L = np.meshgrid([1024, 2048], [4, 8, 16], indexing="ij")
    zipped = sweep("llama3-8b", d_model=d.ravel(), n_layers=L.ravel(),
                   tokens=np.linspace(1e11, 6e11, 6), gpu="h100", grid=False)
    for index in range(6):
        row = zipped.row(index)
        single = sweep("llama3-8b", d_model=row["d_model"], n_layers=row["n_layers"],
                       tokens=row["tokens"], gpu="h100").row(0)
        assert row == single
    with pytest.raises(CalcError, match="same length"):
        sweep("gpt2", d_model=[768, 1536], n_layers=[1, 2, 3], grid=False)


def test_int64_where_safe_float64_beyond():
    """T² at T = 2²¹ pushes attention FLOPs per sequence of Llama 3.1 405B past 2⁶³."""
    short = sweep("llama3.1-405b", seq_len=2**16)
    assert short["flops_attention_seq"].dtype == np.int64
    long = sweep("llama3.1-405b", seq_len=[2**16, 2**21])
    assert long["flops_attention_seq"].dtype == np.float64
    assert long["params_total"].dtype == np.int64
    exact = count_flops(calc.load_preset("llama3.1-405b").spec, 2**21).attention_per_sequence
    assert exact > 2**63
    assert long["flops_attention_seq"][1] == pytest.approx(exact, rel=1e-15)
    assert long["flops_forward"][1] == pytest.approx(
        count_flops(calc.load_preset("llama3.1-405b").spec, 2**21).forward, rel=1e-15)
    assert "flops_attention_seq: float64" in " ".join(long.conventions)


def test_plan_bound_at_the_int64_edge():
    """a·b + a: int64 up to 2⁶³ − 1 exactly, float64 one step beyond."""
    def product(s):
        return {"x": s["a"] * s["b"] + s["a"]}

    plan = Plan.trace([product], {}, {"a": False, "b": False})
    ok = {"a": np.array([1, 2**32]), "b": np.array([5, 2**31 - 2])}
    result = plan.run(ok, 2)["x"]
    assert result.dtype == np.int64 and result.tolist() == [6, 2**63 - 2**32]
    over = {"a": np.array([1, 2**32]), "b": np.array([5, 2**31 - 1])}  # 2⁶³ itself
    assert plan.run(over, 2)["x"].dtype == np.float64


def test_plan_folds_absent_parts():
    """Zero indicators remove whole terms: a dense MHA model's total has a handful of terms."""
    from calc.evaluate import symbol_values

    values = symbol_values(calc.load_preset("llama2-7b").spec)
    plan = Plan.trace([_compiled.params_summary], values, {"d": False, "L": False})
    assert len(plan.outputs["total"].terms) <= 4  # L·d², L·d, d and V·d terms


@pytest.mark.parametrize("kwargs, message", [
    ({"gpu": "a1000", "tokens": 1e12}, "did you mean a100"),
    ({"d_model": [0, 64]}, "sweep d_model: expected whole numbers"),
    ({"d_model": [64.5]}, "sweep d_model"),
    ({"mfu": 1.5, "tokens": 1e9}, "sweep mfu"),
    ({"tokens": [-1]}, "sweep tokens"),
    ({"attention": "sparse"}, "sweep attention='sparse'"),
    ({"d_ff": [1], "ffn_ratio": [2]}, "not both"),
    ({"n_heads": [7]}, "no configuration is valid"),
    ({"dtype": "fp9"}, "sweep dtype"),
    ({"gpu": "v100", "tokens": 1e9}, "no dense bf16 peak"),
])
def test_bad_input_is_a_calc_error(kwargs, message):
    with pytest.raises(CalcError, match=message):
        sweep("llama2-7b", **kwargs)


def test_mla_rejects_kv_heads_axis():
    with pytest.raises(CalcError, match="n_kv_heads"):
        sweep("deepseek-v3", n_kv_heads=[1, 8])


def test_dataframe_and_dict():
    pandas = pytest.importorskip("pandas")
    result = sweep(["gpt2", "llama2-7b"], tokens=[1e9, 1e10], gpu=["a100", "h100"])
    frame = result.to_dataframe()
    assert isinstance(frame, pandas.DataFrame) and len(frame) == 8
    assert list(frame.columns) == result.columns
    assert frame["model"].tolist() == result["model"].tolist()
    assert (frame["gpu_hours"].to_numpy() == result["gpu_hours"]).all()
    data = result.to_dict()
    assert data["rows"] == 8 and data["columns"]["params_total"][0] == 124_439_808


def test_renders_in_notebooks():
    result = sweep("llama2-7b", n_layers=list(range(1, 40)), tokens=1e12, gpu="a100")
    markdown = result._repr_markdown_()
    assert "n_layers" in markdown and "39 configurations" in markdown
    assert "<table>" in result._repr_html_()


def test_a_sweep_says_how_many_shapes_it_dropped_and_why():
    """Issue 12: invalid combinations leave the grid silently unless the sweep says so."""
    result = sweep("llama3-8b", d_model=range(2048, 8193, 1024), n_heads=range(8, 65, 8),
                   n_layers=[16, 32])
    assert result.n_dropped == 7 * 8 * 2 - len(result) > 0
    assert result.dropped == {"n_heads does not divide d_model": result.n_dropped}
    assert (f"{result.n_dropped:,} model shapes dropped as invalid: n_heads does not divide "
            f"d_model") in calc.render(result).splitlines()[0]
    whole = sweep("llama3-8b", n_layers=[16, 32])
    assert whole.n_dropped == 0 and whole.dropped == {} and "dropped" not in calc.render(whole)


def test_zipped_widths_keep_the_head_width():
    """The README's example: heads that follow the width stay 128 wide."""
    d, layers = np.meshgrid(range(2048, 8193, 1024), range(16, 81, 4))
    result = sweep("llama3-8b", d_model=d.ravel(), n_heads=d.ravel() // 128, ffn_ratio=3.5,
                   n_layers=layers.ravel(), grid=False)
    assert len(result) == d.size and result.n_dropped == 0
    assert set((result["d_model"] // result["n_heads"]).tolist()) == {128}
    assert set(result["head_dim"].tolist()) == {128}


@pytest.mark.parametrize("axes", [
    {"n_layers": [16, 32], "tokens": 1e12},  # one workload row: its columns broadcast
    {"tokens": [1e11, 1e12, 1e13], "gpu": "h100"},  # one model row
    {"n_layers": [16, 32], "tokens": [1e11, 1e12], "gpu": ["a100", "h100"], "mfu": 0.5},
    {"n_layers": [16, 32, 8], "tokens": 1e12, "gpu": ["a100", "h100", "a100"], "grid": False},
])
def test_every_column_has_every_row(axes):
    """Scalar axes and one-row parts are broadcast: each column, the dict and the DataFrame
    have a value per configuration, the one row() gives."""
    pandas = pytest.importorskip("pandas")
    result = sweep("llama3-8b", **axes)
    rows = [result.row(i) for i in range(len(result))]
    for name in result.columns:
        assert result[name].tolist() == [row[name] for row in rows], name
    frame = result.to_dataframe()
    assert isinstance(frame, pandas.DataFrame) and len(frame) == len(result)
    assert frame.to_dict("records") == rows
    assert all(len(v) == len(result) for v in result.to_dict()["columns"].values())


def test_grid_with_scalar_workload_is_two_rows():
    frame = calc.sweep("llama3-8b", n_layers=[16, 32], tokens=1e12).to_dataframe()
    assert frame.shape[0] == 2
    assert frame["n_layers"].tolist() == [16, 32] and frame["tokens"].tolist() == [1e12] * 2


@pytest.mark.parametrize("name", ["llama2-7b", "mistral-7b", "deepseek-v3", "smollm3-3b",
                                  "gpt2"])
def test_a_column_read_alone_equals_the_same_column_read_after_its_parts(name):
    """Forward and training FLOPs read first are made from the FLOP polynomials block by block
    (nothing else kept); read after flops_weights they are made from the columns: same bits."""
    axes = {"n_layers": RNG.integers(4, 64, 3000), "seq_len": RNG.integers(1, 4097, 3000),
            "grid": False}
    after = sweep(name, **axes)
    after["flops_weights"], after["flops_attention_seq"]
    alone = sweep(name, **axes)
    train = alone["flops_train"]
    assert not alone._model.made("flops_weights")  # the FLOP columns were not kept
    assert np.array_equal(train, after["flops_train"])
    assert np.array_equal(sweep(name, **axes)["flops_forward"], after["flops_forward"])
    spec = calc.load_preset(name).spec
    for index in RNG.choice(len(alone), 5, replace=False):
        row = alone.row(int(index))
        assert train[index] == count_flops(_spec_of(row, spec), row["seq_len"]).train


def test_names_matched_exactly():
    """Names are matched on machine words; a name the sample misses, one beyond 8 characters
    and one beyond Latin-1 still get their own index."""
    from calc.sweeps.axes import _factorise

    base = np.array(["h100", "a100", "mi300x"] * 20_000)
    for odd in ("b200", "a100-80gb-sxm", "h100é", "h100\u0100", "h10"):
        values = base.copy().astype(np.result_type(base, np.array([odd])))
        values[12_345] = odd
        names, codes = _factorise(values)
        assert (names[codes] == values).all() and odd in names.tolist()
