"""Inference against published figures: KV cache per token (ISCA'25 Table 1), Llama 2 7B decode on
an A100 from weights alone, and the roofline's limits (fits, largest batch, compute-bound)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calc
from calc import _compiled
from calc.formulas import inference as I
from calc.plan.roofline import kv_heads_per_gpu
from calc.symbols import SYMBOLS
from tests.draws import examples

# Qwen-2.5 72B (Qwen/Qwen2.5-72B config.json: 80 layers, d 8192, 64 heads, 8 KV heads, FFN
# 29,568, vocab 152,064, QKV biases); not a preset, so written out here.
QWEN25_72B = calc.ModelSpec(
    name="qwen2.5-72b", vocab_size=152_064, d_model=8192, n_layers=80, context_length=32_768,
    attention={"n_heads": 64, "n_kv_heads": 8, "qkv_bias": True},
    ffn={"activation": "swiglu", "d_ff": 29_568}, norm={"kind": "rmsnorm"},
    position={"kind": "rope"})


@pytest.mark.parametrize("model, per_token", [
    ("llama3.1-405b", 516_096),  # 2 × 126 layers × 8 KV heads × 128 × 2 bytes
    ("deepseek-v3", 70_272),  # MLA: (512 + 64) × 61 layers × 2 bytes
    (QWEN25_72B, 327_680),  # 2 × 80 × 8 × 128 × 2
])
def test_kv_cache_per_token_isca25_table1(model, per_token):
    """Zhao et al. 2025 (Insights into DeepSeek-V3, ISCA'25) Table 1, BF16 KV cache per token:
    LLaMA-3.1 405B 516.096 KB, Qwen-2.5 72B 327.680 KB, DeepSeek-V3 70.272 KB (KB = 1000 B)."""
    report = calc.infer(model, gpu="h200", context=1)
    assert report.inference.kv_cache_bytes_per_token == per_token


def test_llama2_7b_decode_on_a100_from_weights_alone():
    """Llama 2 7B in bf16 on one A100-80GB at batch 1: 13.48 GB of weights / 2.039 TB/s ≈ 6.6 ms
    a token (the A100 80GB datasheet's 2,039 GB/s)."""
    i = calc.infer("llama2-7b", gpu="a100", context=1).inference
    assert i.weights_bytes == 2 * 6_738_415_616 == 13_476_831_232
    assert round(i.weights_bytes / 1e9, 2) == 13.48
    assert i.decode_weights_seconds == pytest.approx(13_476_831_232 / 2.039e12, rel=1e-12)
    assert round(i.decode_weights_seconds * 1e3, 1) == 6.6
    # one cached token adds 524,288 bytes: the step is still 6.6 ms and memory-bound
    assert i.decode_bound == "memory" and round(i.decode_seconds_per_token * 1e3, 1) == 6.6
    assert i.tokens_per_second == pytest.approx(1 / i.decode_seconds_per_token)


def test_sliding_window_caps_the_cache():
    """Mistral 7B: every layer keeps at most w = 4,096 tokens, so memory sets no context limit."""
    at_w = calc.infer("mistral-7b", gpu="a100", context=4096).inference
    beyond = calc.infer("mistral-7b", gpu="a100", context=32_768).inference
    assert beyond.kv_cache_bytes == at_w.kv_cache_bytes == 4096 * 131_072
    assert beyond.max_context is None


@pytest.mark.parametrize("model, gpu, context", [
    ("llama2-7b", "a100", 4096), ("llama3-70b", "h100", 8192), ("mixtral-8x7b", "h200", 32_768),
])
def test_largest_batch_and_context_are_the_largest_that_fit(model, gpu, context):
    i = calc.infer(model, gpu=gpu, gpus=2, context=context).inference
    per_sequence = i.kv_cache_bytes  # batch 1
    assert i.weights_bytes + i.max_batch * per_sequence <= i.gpu_bytes
    assert i.weights_bytes + (i.max_batch + 1) * per_sequence > i.gpu_bytes
    fits = calc.infer(model, gpu=gpu, gpus=2, context=i.max_context).inference
    over = calc.infer(model, gpu=gpu, gpus=2, context=i.max_context + 1).inference
    assert fits.fits and not over.fits


def test_a_model_that_does_not_fit_says_so():
    """DeepSeek-V3's 671B weights in bf16 (1.34 TB) on one H100: no batch, no context."""
    i = calc.infer("deepseek-v3", gpu="h100").inference
    assert i.fits is False and i.max_batch == 0 and i.max_context == 0


def test_decode_turns_compute_bound():
    """At context 1 a dense model's step is compute-bound from about b = q_w·R / (2·BW): A100 in
    bf16, 2 × 312e12 / (2 × 2.039e12) ≈ 153 (attention and the exact FLOPs move it a little)."""
    i = calc.infer("llama2-7b", gpu="a100", context=1).inference
    b = i.compute_bound_batch
    assert 140 < b < 170
    at = calc.infer("llama2-7b", gpu="a100", context=1, batch=b).inference
    before = calc.infer("llama2-7b", gpu="a100", context=1, batch=b - 1).inference
    assert at.decode_bound == "compute" and before.decode_bound == "memory"
    # MHA at 4,096 tokens: reading the cache grows as fast as the FLOPs, never compute-bound
    assert calc.infer("llama2-7b", gpu="a100", context=4096).inference.compute_bound_batch is None


def test_moe_decode_reads_the_experts_its_tokens_touch():
    """Mixtral 8×7B: one token reads its 2 of 8 experts (the active parameters); a large batch
    touches all of them."""
    one = calc.infer("mixtral-8x7b", gpu="h100", gpus=2, context=1).inference
    active = calc.count_params(calc.load_preset("mixtral-8x7b").spec).active
    assert one.decode_weights_read_bytes == pytest.approx(2 * active, rel=1e-12)
    many = calc.infer("mixtral-8x7b", gpu="h100", gpus=2, context=1, batch=4096).inference
    assert many.decode_weights_read_bytes == pytest.approx(many.weights_bytes, rel=1e-9)


def test_int4_weights_compute_in_bf16_with_a_bf16_cache():
    i = calc.infer("llama2-7b", gpu="a100", dtype="int4").inference
    assert i.weights_bytes == 6_738_415_616 / 2
    assert (i.options.compute_dtype, i.options.kv_dtype) == ("bf16", "bf16")
    assert i.peak_flops == 312e12


@pytest.mark.parametrize("gpus, context, batch", [
    (1, 1, 1), (100_000, 1, 1), (1, 1_000_000, 1), (100_000, 1_000_000, 1_000_000),
])
def test_extreme_inputs_stay_finite(gpus, context, batch):
    i = calc.infer("llama3-8b", gpu="h100", gpus=gpus, context=context, batch=batch).inference
    for value in (i.prefill_seconds, i.decode_seconds_per_token, i.tokens_per_second):
        assert 0 < value < float("inf")
    assert i.max_batch >= 0 and (i.max_context is None or i.max_context >= 0)


@pytest.mark.parametrize("options, message", [
    (dict(gpu="v100"), "no dense bf16 peak"),
    (dict(gpu="a100", dtype="fp8"), "no dense fp8 peak"),
    (dict(gpu="tpu-v3"), "has no memory bandwidth"),
    (dict(gpu="a100", batch=0), "batch"),
    (dict(gpu="a100", mbu=1.5), "mbu"),
])
def test_bad_options_name_the_field(options, message):
    with pytest.raises(calc.CalcError) as error:
        calc.infer("llama2-7b", **options)
    assert message in str(error.value)


def test_fp8_on_a_gpu_with_an_fp8_peak_is_priced_at_it():
    """H100 has a dense fp8 peak (twice bf16): fp8 weights of one byte, at that peak."""
    fp8 = calc.infer("llama2-7b", gpu="h100", dtype="fp8", compute_dtype="fp8").inference
    assert fp8.peak_flops == calc.get_gpu("h100").peak_flops("fp8") == 1978.9e12
    assert fp8.weights_bytes == fp8.params == 6_738_415_616


@settings(max_examples=examples(30), deadline=None)
@given(context=st.integers(1, 10**6), batch=st.integers(1, 10**4),
       name=st.sampled_from(["llama2-7b", "mistral-7b", "mixtral-8x7b", "deepseek-v3"]))
def test_compiled_inference_equals_sympy(context, batch, name):
    """The compiled function against sympy's own substitution."""
    spec = calc.load_preset(name).spec
    counts = calc.count_params(spec)
    values = {**calc.evaluate.symbol_values(spec), "T": context, "b": batch,
              "N": counts.total, "N_r": counts.total, "N_er": counts.components["moe/experts"],
              "q_w": 2, "q_kv": 1,
              "K": 2, **kv_heads_per_gpu(spec, 2), "M_gib": 80, "R": 989.4e12, "u": 0.5,
              "BW": 3350, "u_bw": 0.8,
              "F_p": 1.5e10, "F_d": 1.4e10}
    compiled = _compiled.inference(values)
    subs = {SYMBOLS[k]: v for k, v in values.items()}
    for key, expr in I.INFERENCE.items():
        assert compiled[key] == pytest.approx(float(expr.xreplace(subs)), rel=1e-9), key


@pytest.mark.parametrize("gpus, copies", [(1, 1), (4, 1), (8, 1), (16, 2), (32, 4)])
def test_kv_heads_are_replicated_past_their_count(gpus, copies):
    """Issue 12: Llama 3.1 405B has 8 KV heads; on 16 GPUs each holds a whole head, so the cache
    is held twice (vLLM's QKVParallelLinear: num_kv_head_replicas = tp / num_kv_heads)."""
    one = calc.infer("llama3.1-405b", gpu="h100", context=8192).inference
    many = calc.infer("llama3.1-405b", gpu="h100", gpus=gpus, context=8192).inference
    assert many.kv_cache_copies == copies
    assert many.kv_cache_bytes == copies * one.kv_cache_bytes
    per_gpu = many.kv_cache_bytes / gpus
    assert per_gpu == one.kv_cache_bytes / min(gpus, 8)  # never less than one head's share


def test_mla_latent_is_on_every_gpu():
    one = calc.infer("deepseek-v3", gpu="h200", context=4096).inference
    eight = calc.infer("deepseek-v3", gpu="h200", gpus=8, context=4096).inference
    assert eight.kv_cache_copies == 8 and eight.kv_cache_bytes == 8 * one.kv_cache_bytes
