"""The serving estimate of `calc infer` (calc.serving, calc.plan.serving; docs/serving.md):
its JSON, its physics floors, the layouts the engines accept, the rate search and its cost."""

from __future__ import annotations

import json

import pytest

import calc
from calc.counting import GIGA, MILLION, SECONDS_PER_HOUR
from calc.presets import get_gpu
from calc.serving.constants import load_serving_constants

LLAMA = ("llama3.1-70b", "--gpu", "h100", "--input-len", "1000", "--output-len", "200")
KEYS = {"output_tokens_per_s", "total_tokens_per_s", "output_tokens_per_s_per_gpu", "ttft_s",
        "tpot_s", "e2e_s", "batch", "bound"}


def serving(cli, *argv: str) -> dict:
    result = cli("infer", *argv, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)["serving"]


def test_the_json_has_the_serving_keys_and_they_agree(cli):
    s = serving(cli, *LLAMA, "--gpus", "8", "--tp", "8", "--concurrency", "32")
    assert KEYS <= set(s)
    assert s["layout"] == {"tp": 8, "pp": 1, "ep": 1, "replicas": 1, "gpus": 8}
    assert s["output_tokens_per_s_per_gpu"] * 8 == pytest.approx(s["output_tokens_per_s"])
    # total = output + prompts at the same request rate
    assert s["total_tokens_per_s"] == pytest.approx(s["output_tokens_per_s"] * 1200 / 200)
    assert s["e2e_s"] == pytest.approx(s["ttft_s"] + 199 * s["tpot_s"])
    assert s["batch"] == 32 and s["batch_limit"] == "load"


def test_a_decode_step_is_never_faster_than_reading_the_weights(cli):
    """Batch 1 on tp 8: each GPU streams its eighth of 141 GB of bf16 weights every token."""
    s = serving(cli, *LLAMA, "--gpus", "8", "--tp", "8", "--batch", "1")
    bandwidth = get_gpu("h100").bandwidth_gb_s * GIGA
    assert s["tpot_s"] > s["weights_bytes_per_gpu"] / bandwidth
    assert s["weights_bytes_per_gpu"] == pytest.approx(141.1e9 / 8, rel=0.01)


def test_more_concurrency_more_throughput_and_slower_tokens(cli):
    low = serving(cli, *LLAMA, "--gpus", "8", "--tp", "8", "--concurrency", "4")
    high = serving(cli, *LLAMA, "--gpus", "8", "--tp", "8", "--concurrency", "128")
    assert high["output_tokens_per_s"] > 3 * low["output_tokens_per_s"]
    assert high["tpot_s"] > low["tpot_s"]


def test_no_load_given_is_the_engines_largest_batch(cli):
    s = serving(cli, *LLAMA, "--gpus", "8", "--tp", "8")
    assert s["batch"] == load_serving_constants().engine("vllm").max_sequences
    assert s["batch_limit"] == "engine"
    trt = serving(cli, *LLAMA, "--gpus", "8", "--tp", "8", "--engine", "trt-llm")
    assert trt["batch_limit"] == "memory" and trt["batch"] == trt["max_sequences_fit"]


def test_weights_stored_narrower_take_fewer_bytes_scales_counted(cli):
    bf16 = serving(cli, *LLAMA, "--gpus", "8", "--tp", "8", "--batch", "1")
    fp8 = serving(cli, *LLAMA, "--gpus", "8", "--tp", "8", "--batch", "1", "--dtype", "fp8")
    int4 = serving(cli, *LLAMA, "--gpus", "8", "--tp", "8", "--batch", "1", "--dtype", "int4")
    assert fp8["weights_bytes_per_gpu"] < 0.55 * bf16["weights_bytes_per_gpu"]
    # int4 keeps a 16-bit scale per 128 weights: more than half of fp8's bytes
    assert 0.5 * fp8["weights_bytes_per_gpu"] < int4["weights_bytes_per_gpu"] \
        < 0.56 * fp8["weights_bytes_per_gpu"]
    kv8 = serving(cli, *LLAMA, "--gpus", "8", "--tp", "8", "--batch", "1", "--kv-dtype", "fp8")
    assert kv8["kv_cache_bytes_per_token_per_gpu"] * 2 == \
        bf16["kv_cache_bytes_per_token_per_gpu"]


def test_moe_decode_reads_only_the_experts_a_batch_touches(cli):
    argv = ("mixtral-8x7b", "--gpu", "h100", "--gpus", "2", "--tp", "2", "--input-len", "500",
            "--output-len", "100")
    one = serving(cli, *argv, "--batch", "1")["decode_step"]
    many = serving(cli, *argv, "--batch", "64")["decode_step"]
    # 2 of 8 experts at batch 1, nearly all 8 at 64: the weights read grow, not 64-fold
    assert many["bandwidth_s"] + many["compute_s"] > 1.5 * one["bandwidth_s"]
    assert many["seconds"] < 8 * one["seconds"]


@pytest.mark.parametrize("argv, message", [
    (("--gpus", "8", "--tp", "3"), "tp=3 does not divide the 64 attention heads; nearest that "
                                   "work: --tp 2 or --tp 4"),
    (("--gpus", "16", "--tp", "16"), "use --pp 2 with --tp 8"),
    (("--gpus", "8", "--tp", "4", "--pp", "3"), "nearest: --gpus 12"),
    (("--gpus", "8", "--engine", "tgi"), "--engine: invalid choice: 'tgi'"),
    (("--gpus", "1", "--tp", "1"), "does not fit"),
    (("--request-rate", "10", "--tpot-ms", "2"), "nearest that works: --tpot-ms"),
])
def test_bad_layouts_are_one_line_naming_what_works(cli, argv, message):
    result = cli("infer", *LLAMA, *argv)
    assert result.code == 2
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_serving_options_need_the_lengths(cli):
    result = cli("infer", "llama3.1-70b", "--gpu", "h100", "--gpus", "8", "--tp", "8")
    assert result.code == 2 and "need input_len and output_len" in result.err


def test_the_cheapest_way_to_serve_70b_at_10_requests_a_second(cli):
    s = serving(cli, *LLAMA, "--request-rate", "10", "--tpot-ms", "50", "--price", "2.5")
    assert s["searched"] and s["tpot_s"] <= 0.050
    assert s["requests_per_s"] == pytest.approx(10)
    assert s["output_tokens_per_s"] == pytest.approx(10 * 200)
    per_million = s["layout"]["gpus"] * 2.5 / (s["output_tokens_per_s"] * SECONDS_PER_HOUR) \
        * MILLION
    assert s["cost_per_million_output_tokens"] == pytest.approx(per_million)
    # nothing on fewer GPUs meets the target at this rate
    fewer = [row for row in s["layouts"] if row["gpus"] < s["layout"]["gpus"]]
    assert not any(row["meets"] for row in fewer)
    assert s["bound"]


def test_every_layout_marked_as_meeting_the_target_meets_it(cli):
    s = serving(cli, *LLAMA, "--request-rate", "10", "--tpot-ms", "50")
    met = [row for row in s["layouts"] if row["meets"]]
    assert met and all(row["tpot_s"] <= 0.050 for row in met)


@pytest.mark.parametrize("rate", [0.5, 1.0, 1.9, 3.0])
def test_arrivals_at_a_rate_keep_littles_law(cli, rate):
    """The running batch is rate × end-to-end latency at every rate, and latency grows with
    the rate (the root found, not the bracket's far end)."""
    argv = (*LLAMA, "--gpus", "4", "--tp", "2", "--pp", "2")
    s = serving(cli, *argv, "--request-rate", str(rate))
    assert s["batch"] == pytest.approx(rate * s["e2e_s"], rel=1e-2, abs=1e-2)
    faster = serving(cli, *argv, "--request-rate", str(rate * 1.2))
    assert faster["tpot_s"] > s["tpot_s"]


def test_the_median_gap_is_a_decode_iteration_unless_most_gaps_hold_a_prefill():
    """Without chunked prefill (SGLang) prompts stall decoding: the mean gap between tokens
    (TPOT) spreads the stalls over every token; the median gap, what a median inter-token
    latency reads, is a plain decode iteration while fewer than half the gaps hold a prefill
    iteration, and one that holds it once most do."""
    from calc.presets import load_preset, system_for_gpu
    from calc.serving.layouts import Replica
    from calc.serving.schedule import Load
    from calc.serving.setup import serve, setup

    c = load_serving_constants()
    built = setup(load_preset("llama3.1-8b").spec, get_gpu("h100"), system_for_gpu("h100"),
                  Replica(tp=1, pp=1, ep=1), "bf16", "bf16", "bf16", "sglang", c)
    few = serve(built, Load("closed", 2048, 128, concurrency=16), c)  # 4 prefills, 128 steps
    assert few.itl_median == pytest.approx(few.decode.total) and few.itl_median < few.tpot
    most = serve(built, Load("closed", 2048, 8, concurrency=64), c)  # 16 prefills, 8 steps
    assert most.itl_median == pytest.approx(most.decode.total + most.prefill.total)
    static = serve(built, Load("static", 2048, 128, batch=16), c)  # prefilled before decoding
    assert static.itl_median == static.tpot == static.decode.total


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trt-llm"])
def test_every_engine_pays_one_iteration_overhead_and_one_for_each_sequence(engine):
    """An iteration's overhead beyond its kernels: a floor per layer, the one fixed overhead
    every engine shares, and the one cost for each decoding sequence (presets/serving.toml)."""
    from calc.presets import load_preset, system_for_gpu
    from calc.serving.layouts import Replica
    from calc.serving.setup import setup

    c = load_serving_constants()
    spec = load_preset("llama3.1-8b").spec
    model = setup(spec, get_gpu("h100"), system_for_gpu("h100"), Replica(tp=1, pp=1, ep=1),
                  "bf16", "bf16", "bf16", engine, c).model
    one, many = (model.iteration(n, 1000, 0, 1000, c).overhead for n in (1, 65))
    each = c.value("sequence_overhead_us") * 1e-6
    assert many - one == pytest.approx(64 * each)
    assert one == pytest.approx(spec.n_layers * c.value("layer_floor_us") * 1e-6
                                + c.value("step_overhead_ms") * 1e-3 + each)


@pytest.mark.parametrize("engine, held", [("trt-llm", 1.0), ("vllm", 0.5), ("sglang", 0.5)])
def test_the_sequences_that_fit_follow_the_engines_admission(engine, held):
    """TensorRT-LLM's default capacity policy (GUARANTEED_NO_EVICT) admits a request against
    its prompt and whole output; vLLM fills blocks as tokens come (preempting when full), so a
    continuous batch's sequences hold I + O/2 on average. A static batch holds I + O in both."""
    from calc.presets import load_preset, system_for_gpu
    from calc.serving.layouts import Replica
    from calc.serving.schedule import Load
    from calc.serving.setup import serve, setup

    c = load_serving_constants()
    built = setup(load_preset("llama3.1-70b").spec, get_gpu("h100"), system_for_gpu("h100"),
                  Replica(tp=4, pp=1, ep=1), "bf16", "bf16", "bf16", engine, c)
    running = serve(built, Load("closed", 2000, 2000, concurrency=8), c)
    assert running.capacity == built.capacity(2000 + held * 2000)
    static = serve(built, Load("static", 2000, 2000, batch=8), c)
    assert static.capacity == built.capacity(4000) < built.capacity(3000)


def test_a_tighter_target_costs_more_gpus(cli):
    loose = serving(cli, *LLAMA, "--request-rate", "10", "--tpot-ms", "50")
    tight = serving(cli, *LLAMA, "--request-rate", "10", "--tpot-ms", "15")
    assert tight["layout"]["gpus"] > loose["layout"]["gpus"]


def test_the_library_and_its_dataframe():
    pytest.importorskip("pandas")
    report = calc.infer("llama3.1-8b", gpu="h100", input_len=512, output_len=128,
                        concurrency=16)
    assert report.serving is not None and report.serving.batch == 16
    frame = report.to_dataframe()
    assert frame["serving.output_tokens_per_s"].iloc[0] == report.serving.output_tokens_per_s


def test_todays_context_and_batch_keep_their_roofline(cli):
    result = cli("infer", "llama3-70b", "--gpu", "h100", "--gpus", "8", "--batch", "256",
                 "--context", "2048", "--format", "json")
    data = json.loads(result.out)
    assert data["serving"] is None
    assert data["inference"]["tokens_per_second"] == pytest.approx(14064, rel=1e-3)


def test_the_fit_is_current_and_within_its_bounds():
    """presets/serving.toml's [fit] lists exactly the rows with fitted figures today, holds a
    fold per publisher, and every fitted constant lies within the fit's bounds."""
    from calc.calibration.serving import bounds, prepare_all, publishers

    constants = load_serving_constants()
    models, _ = prepare_all(constants)
    fitted = sorted(m.run.name for m in models if any(f.fitted for f in m.figures))
    assert sorted(constants.fit["rows"]) == fitted
    assert sorted(constants.fit["loso"]) == publishers(models)
    folds = [constants.fitted, *constants.fit["loso"].values()]
    for values in folds:
        for name, value in values.items():
            low, high = bounds(constants, name)
            assert low <= value <= high, name


def test_the_fit_keeps_every_constant_inside_its_prior():
    """The fit's range is the prior itself (issue 21: a constant lies inside the range its
    physical source allows), not a widened one."""
    from calc.calibration.serving import bounds

    constants = load_serving_constants()
    for name, (low, high, _) in constants.priors.items():
        assert bounds(constants, name) == (low, high), name


def test_a_constant_no_fitted_figure_depends_on_stays_at_its_prior_centre():
    """Every fit starts from the priors' geometric centres; one over rows that do not depend on
    a constant (LMDeploy's A100 rows say nothing of AMD's kernels) leaves that constant there,
    and moves the others only where the loss falls."""
    import math

    from calc.calibration.serving import centre, fit, loss, prepare_all, start

    constants = load_serving_constants()
    initial = start(constants)
    for name, (low, high, _) in constants.priors.items():
        assert initial.value(name) == pytest.approx(math.sqrt(low * high), rel=1e-3), name
        assert centre(constants, name) == initial.value(name)
    models, _ = prepare_all(constants)
    rows = [m for m in models if m.run.publisher == "lmdeploy"]
    assert rows and all(m.run.engine == "other" and m.run.gpu.startswith("a100") for m in rows)
    free = ["amd.gemm16_fraction", "amd.gemm8_fraction", "amd.weight_stream_fraction"]
    moved = fit(initial, rows, names=[*free, "step_overhead_ms"])
    for name in free:
        assert moved.value(name) == initial.value(name), name
    assert loss(moved, rows) <= loss(initial, rows)


def test_the_stored_folds_leave_unconstrained_constants_at_their_centres():
    """presets/serving.toml's folds were fitted from the priors' centres: in each, a constant
    the fold's rows do not depend on (the loss the same at both ends of its range) is at its
    centre, not at a value fitted on the publisher the fold holds out."""
    from calc.calibration.serving import bounds, centre, loss, prepare_all

    constants = load_serving_constants()
    models, _ = prepare_all(constants)
    rows = [m for m in models if any(f.fitted for f in m.figures)]
    checked = 0
    for publisher, values in constants.fit["loso"].items():
        fold = constants.with_values(values)
        others = [m for m in rows if m.run.publisher != publisher]
        for name in ("amd.gemm16_fraction", "nvidia.gemm4_fraction"):
            low, high = bounds(constants, name)
            if loss(fold.with_values({name: low}), others) == loss(
                    fold.with_values({name: high}), others):
                assert fold.value(name) == centre(constants, name), (publisher, name)
                checked += 1
    assert checked  # amd.gemm16_fraction: every MI300X row runs FP8


def test_reproduce_serving_holds_each_publisher_out(cli):
    report = calc.reproduce_serving()
    every = next(e for e in report.errors if e.metric == "throughput" and e.scope == "all")
    assert every.figures >= 200
    assert 0 < every.median_in_sample and 0 < every.median <= every.p90
    held = [r for r in report.rows if r.fitted and r.held_out and r.predicted]
    assert any(abs(r.held_out / r.predicted - 1) > 1e-3 for r in held)  # the folds differ
    result = cli("reproduce", "--serving", "--table",
                 "leave-one-publisher-out-error-predicted-published-1", "--format", "csv")
    assert result.code == 0 and "throughput,all" in result.out.replace('"', "")


def test_a_static_batch_is_the_systems_split_over_replicas(cli):
    one = serving(cli, "llama3.1-70b", "--gpu", "a100", "--gpus", "4", "--dtype", "int4",
                  "--batch", "1", "--input-len", "2000", "--output-len", "500")
    assert one["layout"]["replicas"] == 1 and one["batch"] == 1
    eight = serving(cli, "llama3.1-70b", "--gpu", "a100", "--gpus", "4", "--dtype", "int4",
                    "--batch", "8", "--tp", "2", "--input-len", "2000", "--output-len", "500")
    assert eight["layout"]["replicas"] == 2 and eight["batch"] == 4
