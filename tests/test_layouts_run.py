"""Issue 19, layouts that run: each framework's memory recipe and buffers, the margin a GPU
keeps, the frameworks' refusals, a search that can be pinned and says why it is empty, time
and money on every plan."""

from __future__ import annotations

import pytest

import calc
from calc.counting import GIB, SECONDS_PER_HOUR
from calc.errors import CalcError
from calc.plan.memory import margin
from calc.spec.layout import make_layout
from calc.spec.memory import RESERVE, STACKS

LLAMA70 = dict(gpu="h100", gpus=512, global_batch=512)


def test_the_70b_example_fits_with_the_margin_under_megatrons_recipe():
    """The issue's top layout (tp 4 · pp 2×8 · dp 64, no recomputation: 78.9 GiB under the
    ZeRO paper's recipe) needs 95.3 GiB allocated under Megatron-LM's fp32 main gradients;
    the search's top layout now fits with its margin, and calc.memory agrees."""
    report = calc.layout("llama3-70b", **LLAMA70, top=3)
    assert report.framework == "megatron" and report.recipe == "mixed-fp32-grads"
    best = report.best[0]
    assert best.memory_per_gpu_bytes <= report.gpu_memory_bytes
    o = best.layout
    own = calc.memory("llama3-70b", gpu="h100", **o.model_dump(exclude={"global_batch"}))
    assert own.memory.fits and own.memory.total_bytes == pytest.approx(
        best.memory_per_gpu_bytes, rel=1e-9)
    assert own.memory.margin_bytes == pytest.approx(best.memory_margin_bytes, rel=1e-9)
    assert best.memory_margin_bytes > 0
    old = calc.memory("llama3-70b", gpu="h100", tp=4, pp=2, vpp=8, dp=64, zero=1,
                      sequence_parallel=True).memory
    assert round(old.allocated_bytes / GIB, 1) == 95.3 and not old.fits


def test_pinned_degrees_and_sets_hold(cli):
    report = calc.layout("llama3-70b", **LLAMA70, tp=8, pp=[4, 8],
                         recompute=["none", "selective"], top=20)
    assert report.pinned == {"tp": [8], "pp": [4, 8], "recompute": ["none", "selective"]}
    rows = [row.layout for row in report.best]
    assert {o.tp for o in rows} == {8} and {o.pp for o in rows} <= {4, 8}
    assert {o.recompute for o in rows} <= {"none", "selective"}
    result = cli("layout", "llama3-70b", "--gpu", "h100", "--gpus", "512", "--global-batch",
                 "512", "--tp", "8", "--pp", "4,8", "--zero", "1", "--micro-batch", "1,2",
                 "--top", "3", "--format", "json")
    assert result.code == 0, result.err
    data = result.json()
    assert len(data["best"]) == 3
    for row in data["best"]:
        o = row["layout"]
        assert o["tp"] == 8 and o["pp"] in (4, 8) and o["zero"] == 1 and o["micro_batch"] in (1, 2)


def test_an_empty_search_says_why_and_the_nearest_change(cli):
    with pytest.raises(CalcError, match=r"no layout of llama3-70b on 500 × h100 .*nearest: "
                                        r"--global-batch 500; --gpus 512"):
        calc.layout("llama3-70b", gpu="h100", gpus=500, global_batch=512)
    result = cli("layout", "llama3-70b", "--gpu", "h100", "--gpus", "500", "--global-batch",
                 "512")
    assert result.code == 2 and result.out == "" and result.err.count("\n") == 1
    result = cli("layout", "llama2-7b", "--gpu", "h100", "--gpus", "16", "--global-batch", "64",
                 "--tp", "3")
    assert result.code == 2 and "drop the pin tp 3" in result.err
    with pytest.raises(CalcError, match=r"fits: the .* valid layouts need at least"):
        calc.layout("llama3.1-405b", gpu="a100", gpus=8, global_batch=8)


def test_every_ranked_layout_is_a_dataframe_row_with_time_and_money():
    pytest.importorskip("pandas")
    report = calc.layout("llama2-7b", gpu="h100", gpus=16, global_batch=64, top=5,
                         tokens=2e12, price=2.5)
    frame = report.to_dataframe()
    assert len(frame) == len(report.best) == 5 and list(frame["rank"]) == [1, 2, 3, 4, 5]
    assert {"tp", "pp", "zero", "recompute", "step_time_s", "breakdown.compute",
            "breakdown.pipeline_bubble", "gpu_hours", "days", "cost"} <= set(frame.columns)
    for row in report.best:
        hours = 2e12 / row.tokens_per_s_per_gpu / SECONDS_PER_HOUR
        assert row.gpu_hours == pytest.approx(hours) and row.cost == pytest.approx(2.5 * hours)
        assert row.days == pytest.approx(hours / 16 / 24)
        assert sum(row.breakdown.values()) == pytest.approx(row.step_time_s)


def test_step_prices_tokens_and_takes_the_least_recomputation_that_fits(cli):
    report = calc.step("llama3-70b", gpu="h100", gpus=512, tp=8, pp=4, global_batch=512,
                       recompute="auto", tokens=15e12, price=2, energy=True)
    assert report.layout.recompute == "full" and report.fits
    assert any("recompute auto: full, the least that fits" in n for n in report.notes)
    assert report.cost == pytest.approx(2 * report.gpu_hours)
    assert report.energy_kwh > 0 and report.memory_margin_bytes > 0
    selective = calc.step("llama3-70b", gpu="h100", gpus=512, tp=8, pp=4, global_batch=512,
                          recompute="selective")
    assert not selective.fits
    fits = calc.step("llama2-7b", gpu="h100", gpus=8, zero=1, recompute="auto")
    assert fits.layout.recompute == "none" and fits.fits


def test_the_tp_16_case_is_refused(cli):
    result = cli("step", "llama3-70b", "--gpu", "h100", "--gpus", "512", "--tp", "16")
    assert result.code == 2 and result.err.count("\n") == 1
    assert "tp=16 spans 2 nodes of 8 GPUs" in result.err and "refuses it" in result.err
    ok = cli("step", "llama3-70b", "--gpu", "h100", "--gpus", "512", "--tp", "16",
             "--allow-cross-node-tp", "--format", "json")
    assert ok.code == 0 and ok.json()["links"]["tp"] == "inter-node"


@pytest.mark.parametrize("framework, recipe, per_param", [
    ("megatron", "mixed-fp32-grads", 6 + 12 / 8),  # theoretical_memory_usage.py: 6 + 12/d
    ("deepspeed", "mixed", 4 + 12 / 8),  # ZeRO §3.1, stage 1
    ("torchtitan", "fsdp-mixed", 16 / 8),  # FSDP2: everything fp32 and sharded
])
def test_each_framework_keeps_its_own_recipe(framework, recipe, per_param):
    zero = 3 if framework == "torchtitan" else 1
    m = calc.memory("llama2-7b", gpu="h100", dp=8, zero=zero, framework=framework).memory
    assert m.options.recipe == recipe == STACKS[framework].recipes["bf16"]
    states = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes
    assert states == pytest.approx(per_param * m.params_per_gpu, rel=1e-9)
    assert (m.buffers["gradient_bucket"] > 0) is (framework == "deepspeed")
    assert (m.buffers["gathered_weights"] > 0) is (framework == "torchtitan")
    given = calc.memory("llama2-7b", gpu="h100", dp=8, zero=zero, framework=framework,
                        recipe="mixed").memory
    assert given.options.recipe == "mixed"


def test_the_margin_is_counted_and_a_layout_within_it_does_not_fit(cli):
    m = calc.memory("llama2-7b", gpu="h100", tp=2, dp=4).memory
    groups = ["tp", "dp"]
    assert m.margin_groups == groups
    assert m.margin["nccl"] == 2 * RESERVE["nccl_communicator"].value
    assert m.margin["cuda_context"] == RESERVE["cuda_context"].value
    assert m.margin["fragmentation"] == pytest.approx(
        RESERVE["fragmentation"].value * m.allocated_bytes, abs=1)
    assert m.total_bytes == m.allocated_bytes + m.margin_bytes
    lay = make_layout(8, tp=2, dp=4)
    assert margin(lay, m.allocated_bytes).total == pytest.approx(m.margin_bytes, abs=1)
    room = (m.gpu_bytes - m.allocated_bytes) / GIB  # what is left beside the allocations
    tight = calc.memory("llama2-7b", gpu="h100", tp=2, dp=4, memory_margin=room * 1.01).memory
    assert not tight.fits and tight.margin == {"given": pytest.approx(room * 1.01 * GIB, abs=1)}
    loose = calc.memory("llama2-7b", gpu="h100", tp=2, dp=4, memory_margin=room * 0.99).memory
    assert loose.fits
    text = cli("memory", "llama2-7b", "--gpu", "h100", "--memory-margin", "4").out
    assert "margin" in text and "--memory-margin" in " ".join(text.split())
