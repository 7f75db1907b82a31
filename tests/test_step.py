"""`calc step`, `calc layout` and `reproduce --throughput`: the report's arithmetic, its JSON
contract, the search's ranking and memory, the fit and the published step times."""

from __future__ import annotations

import json

import pytest

import calc
from calc import _compiled
from calc.calibration.throughput import published_step
from calc.evaluate import layout_values
from calc.plan.memory import margin
from calc.plan.search import memory_total, search_layouts
from calc.presets import get_gpu, load_preset, load_throughput_runs
from calc.reports.layout import layout
from calc.reports.step import step
from calc.source_flops import source_flops_per_step

JSON_KEYS = {"step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "hfu",
             "breakdown", "fits", "memory_per_gpu_bytes"}


def test_step_json_has_the_contract_keys(cli):
    result = cli("step", "llama2-7b", "--gpu", "a100", "--gpus", "8", "--micro-batch", "2",
                 "--global-batch", "64", "--flash-attention", "--format", "json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert JSON_KEYS <= set(data)
    assert sum(data["breakdown"].values()) == pytest.approx(data["step_time_s"])


def test_step_rates_follow_from_the_step_time():
    report = step("llama2-13b", gpu="h100", gpus=16, tp=2, micro_batch=2, global_batch=64,
                  recompute="selective", flash_attention=True, tokens=1e12)
    tokens = 64 * 4096
    assert report.tokens_per_s_per_gpu == pytest.approx(tokens / report.step_time_s / 16)
    peak = get_gpu("h100").peak_flops("bf16")
    assert report.mfu == pytest.approx(report.tflops_per_gpu * 1e12 / peak)
    assert report.hfu > report.mfu  # selective recomputation adds the attention core
    assert report.gpu_hours == pytest.approx(1e12 / report.tokens_per_s_per_gpu / 3600)
    assert report.days == pytest.approx(report.gpu_hours / 16 / 24)
    assert report.fits == (report.memory_per_gpu_bytes <= report.gpu_memory_bytes)


def test_step_defaults_are_memorys_current_practice(cli):
    """Issue 12's defaults reach the step: flash attention and no dropout unless asked, as
    `memory` assumes; the 2022 setting and the old flag still parse."""
    argv = ("step", "llama2-7b", "--gpu", "a100", "--gpus", "8", "--global-batch", "64",
            "--format", "json")
    default, old_flags, paper = (json.loads(cli(*argv, *extra).out) for extra in (
        (), ("--flash-attention", "--no-dropout"), ("--no-flash-attention", "--dropout")))
    assert default == old_flags
    assert paper["step_time_s"] > default["step_time_s"]
    assert paper["memory_per_gpu_bytes"] > default["memory_per_gpu_bytes"]
    layout = step("llama2-7b", gpu="a100", gpus=8, global_batch=64).layout
    assert layout.flash_attention and not layout.dropout


def test_hfu_equals_mfu_without_recomputation():
    report = step("llama2-7b", gpu="a100", gpus=8, global_batch=8)
    assert report.hfu == report.mfu and report.breakdown["recompute"] == 0


@pytest.mark.parametrize(("argv", "message"), [
    (["--tp", "5"], "not divisible by tp × pp × cp"),
    (["--pp", "2"], "global_batch is needed with pp=2"),
    (["--gpu", "nope"], "unknown GPU"),
    (["--system", "nope"], "unknown system"),
    (["--tp", "6"], "tp=6 does not divide the 32 attention heads of llama2-7b: megatron "
                    "refuses it"),
    (["--tp", "16", "--gpus", "64"], "tp=16 spans 2 nodes of 8 GPUs"),
    (["--sequence-parallel"], "sequence parallelism needs tp > 1"),
    (["--zero", "1", "--framework", "torchtitan"], "ZeRO stage 1 is not one torchtitan runs"),
    (["--zero", "2", "--pp", "2", "--global-batch", "48", "--framework", "deepspeed"],
     "deepspeed refuses it (ZeRO 2 and 3 without a pipeline"),
])
def test_step_bad_input_is_one_line(cli, argv, message):
    base = ["step", "llama2-7b", "--gpu", "a100", "--gpus", "48"]
    if "--gpu" in argv:
        base = ["step", "llama2-7b", "--gpus", "48"]
    result = cli(*base, *argv)
    assert result.code == 2 and message in result.err and result.err.count("\n") == 1


def test_memory_accepts_the_layout_degrees(cli):
    result = cli("memory", "mixtral-8x7b", "--gpu", "h100", "--dp", "8", "--ep", "8",
                 "--cp", "2", "--seq-len", "4096", "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["memory"]["options"]["ep"] == 8


@pytest.mark.parametrize("framework", ["megatron", "deepspeed", "torchtitan"])
def test_search_memory_is_calc_memory(framework):
    """The search's cached states, activations and buffers, with the margin, equal the
    compiled memory formulas' and calc.memory's total under each framework's recipe."""
    setup, found = search_layouts(load_preset("llama2-13b").spec, gpu="a100", gpus=32,
                                  global_batch=64, framework=framework)
    for candidate in found.ranked[::97] + found.rejected[::97]:
        o = candidate.layout
        symbols = {**setup.base_symbols, **layout_values(setup.spec, o)}
        allocated = (_compiled.memory(symbols)["total"]
                     + sum(_compiled.memory_buffers(symbols).values()))
        total = allocated + margin(o, allocated).total
        assert memory_total(setup.spec, setup.base_symbols, o, {}) == pytest.approx(total)
        assert candidate.memory_bytes == pytest.approx(total)
        own = calc.memory(setup.spec, gpu="a100", **o.model_dump(exclude={"global_batch"}))
        assert own.memory.total_bytes == pytest.approx(total, rel=1e-12)
        assert own.memory.options.recipe == setup.recipe


def test_layout_search_ranks_fitting_layouts_and_explains_rejects():
    report = layout("llama2-70b", gpu="a100", gpus=256, global_batch=512)
    times = [row.step_time_s for row in report.best]
    assert times == sorted(times) and report.best[0].why.startswith("fastest")
    assert all(row.memory_per_gpu_bytes <= report.gpu_memory_bytes for row in report.best)
    for row in report.rejected:
        assert row.step_time_s < times[0] and row.why.startswith("memory:")
    # the search's best is at least as fast as a common hand-made layout that fits
    hand = step("llama2-70b", gpu="a100", gpus=256, tp=8, pp=4, global_batch=512,
                sequence_parallel=True, flash_attention=True, recompute="selective")
    assert hand.fits and times[0] <= hand.step_time_s


def test_published_step_from_tflops_uses_the_sources_formula():
    """Narayanan et al. 2021 Table 1, 1.7B: eq. 3 FLOPs ÷ (137 TFLOP/s × 32 GPUs)."""
    run = load_throughput_runs()["narayanan2021-1.7b"]
    spec = load_preset(run.model).spec
    h, layers, v, s, b = spec.d_model, spec.n_layers, spec.vocab_size, 2048, 512
    eq3 = 96 * b * s * layers * h**2 * (1 + s / (6 * h) + v / (16 * layers * h))
    assert source_flops_per_step(run, spec) == pytest.approx(eq3)
    assert published_step(run, spec).seconds == pytest.approx(eq3 / (137e12 * 32))


@pytest.mark.parametrize("name", ["bigscience2022-bloom-176b", "narayanan2021-76b"])
def test_the_search_covers_the_authors_layout(name):
    """A published layout inside the searched space (BLOOM's 70 layers over 12 stages,
    Megatron's interleaved 76B) is among the layouts the search prices."""
    from calc.calibration.throughput import prepare
    from calc.plan.search import outside

    model = prepare(load_throughput_runs()[name])
    layout, run = model.layout, model.run
    setup, found = search_layouts(model.spec, gpu=run.gpu, gpus=run.gpus,
                                  global_batch=run.global_batch, seq_len=run.seq_len,
                                  system=run.system, dtype=layout.dtype,
                                  framework=layout.framework, dropout=layout.dropout,
                                  flash_attention=layout.flash_attention)
    assert outside(model.spec, layout, setup.gpus_per_node) is None
    priced = [c.layout for c in found.ranked + found.rejected]
    assert layout in priced


def test_main_report_prices_the_predicted_mfu_beside_the_default():
    """The training block keeps the default-MFU hours and adds calc step's, for the same
    tokens: the given layout's hours are calc.step's."""
    import calc

    layout = dict(tp=2, micro_batch=2, global_batch=256, flash_attention=True)
    report = calc.estimate("llama2-7b", tokens=2e12, gpu="a100", gpus=64, **layout)
    training = report.training
    assert training.mfu == 0.4 and training.predicted is not None
    direct = step("llama2-7b", gpu="a100", gpus=64, tokens=2e12, **layout)
    assert training.predicted.gpu_hours == pytest.approx(direct.gpu_hours)
    assert training.predicted.mfu == pytest.approx(direct.mfu)
    assert training.gpu_hours == pytest.approx(training.flops / (312e12 * 0.4) / 3600)


def test_searched_layout_is_at_least_as_fast_as_a_given_one(cli):
    searched = cli("llama2-7b", "--tokens", "2e12", "--gpu", "a100", "--gpus", "64",
                   "--search-layout", "--global-batch", "256", "--format", "json")
    given = cli("llama2-7b", "--tokens", "2e12", "--gpu", "a100", "--gpus", "64",
                "--tp", "2", "--global-batch", "256", "--flash-attention", "--format", "json")
    assert searched.code == 0 and given.code == 0, searched.err + given.err
    best = json.loads(searched.out)["training"]["predicted"]
    mine = json.loads(given.out)["training"]["predicted"]
    assert best["searched"] and best["fits"]
    assert best["gpu_hours"] <= mine["gpu_hours"] * (1 + 1e-9)


@pytest.mark.parametrize(("argv", "message"), [
    (["--tp", "2"], "give --tokens and --gpu too"),
    (["--tokens", "1e12", "--gpu", "a100", "--tp", "2", "--search-layout"],
     "layout fields tp and search_layout"),
])
def test_main_report_layout_errors(cli, argv, message):
    result = cli("llama2-7b", *argv)
    assert result.code == 2 and message in result.err


def test_infer_adds_tensor_parallel_all_reduces_on_the_real_link():
    import calc

    one = calc.infer("llama2-70b", gpu="h100", gpus=1, batch=8).inference
    eight = calc.infer("llama2-70b", gpu="h100", gpus=8, batch=8).inference
    sixteen = calc.infer("llama2-70b", gpu="h100", gpus=16, batch=8).inference
    assert one.decode_communication_seconds == 0 and one.communication_share == 0
    assert eight.communication_link == "intra-node"
    assert sixteen.communication_link == "inter-node"
    assert sixteen.decode_communication_seconds > eight.decode_communication_seconds > 0
    for i in (eight, sixteen):
        assert i.decode_seconds_with_communication == pytest.approx(
            i.decode_seconds_per_token + i.decode_communication_seconds)
        assert i.tokens_per_second == pytest.approx(8 / i.decode_seconds_with_communication)
        assert i.communication_share == pytest.approx(
            i.decode_communication_seconds / i.decode_seconds_with_communication)


def test_expert_parallelism_splits_the_experts_in_memory():
    """calc.memory with ep: the routed experts are split ep ways more, the rest is not."""
    import calc
    from calc.evaluate import count_params

    spec = load_preset("mixtral-8x7b").spec
    counts = count_params(spec)
    experts = counts.components["moe/experts"]
    one = calc.memory(spec, dp=8, ep=1, seq_len=4096).memory.params_per_gpu
    eight = calc.memory(spec, dp=8, ep=8, seq_len=4096).memory.params_per_gpu
    assert one - eight == pytest.approx(experts * (1 - 1 / 8))


def test_step_names_the_stack_terms_it_prices_apart(cli):
    """A power-limited GPU, an attention kernel priced from another and fp8 all-gathers each
    get a sentence under the step tables, and only where they apply."""
    titan = cli("step", "llama3-8b", "--gpu", "h100-hbm2e-500w", "--gpus", "64", "--tp", "8",
                "--sequence-parallel", "--global-batch", "96", "--micro-batch", "12",
                "--dtype", "fp8", "--fp8-recipe", "current", "--framework", "torchtitan",
                "--zero", "3")
    assert titan.code == 0, titan.err
    assert "Power limit: h100-hbm2e-500w" in titan.out
    assert "casts to fp8 before the sequence-parallel all-gathers" in titan.out
    assert "Attention kernel" not in titan.out
    foundry = cli("step", "llama3-8b", "--gpu", "h100", "--gpus", "8", "--global-batch", "48",
                  "--framework", "foundry", "--zero", "3")
    assert foundry.code == 0, foundry.err
    assert "foundry runs fa1, priced at 0.5 × fa2's speed" in foundry.out
    assert "Power limit" not in foundry.out and "fp8 before" not in foundry.out
