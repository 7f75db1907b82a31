"""Training memory, step time, layouts and serving of models with mixers other than attention
(Mamba, Mamba-2, gated DeltaNet, lightning attention, short convolutions, their hybrids), from
the released configs of tests/data/hf_configs (README.md cites each): hand counts from the
config's own fields."""

from __future__ import annotations

import json
import math

import pytest

import calc
from calc.evaluate import count_flops
from calc.plan.search import search_layouts
from calc.presets import get_gpu, resolve
from calc.spec.layout import check, make_layout
from calc.timing.constants import load_constants
from calc.timing.operators import model_terms
from calc.timing.schedule import device_for, step_time
from tests.hf_released import CONFIGS
from tests.test_timing import NETWORK

BF16 = 2
MIXER_MODELS = ["mamba-130m-hf", "mamba-codestral-7b-v0.1", "ai21-jamba-1.5-mini",
                "qwen3-next-80b-a3b-instruct", "lfm2-1.2b", "falcon-h1-0.5b-base",
                "minimax-text-01-hf", "rwkv-4-169m-pile", "recurrentgemma-2b", "xlstm-7b"]


def _config(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def _preset(name: str):
    return resolve(str(CONFIGS / f"{name}.json"))


def _state_elements_by_hand(name: str) -> int:
    """One sequence's recurrent state, all layers, from the config's fields: the SSM state and
    the conv's last k − 1 inputs (vLLM's conv state) of each layer without attention."""
    c = _config(name)
    layers = c["num_hidden_layers"]
    if name == "mamba-130m-hf":  # Mamba-1: D × N, conv over D channels
        inner = c["intermediate_size"]
        return layers * (inner * c["state_size"] + (c["conv_kernel"] - 1) * inner)
    if name == "ai21-jamba-1.5-mini":  # Mamba-1 except attention every attn_layer_period
        mamba = sum(i % c["attn_layer_period"] != c["attn_layer_offset"] for i in range(layers))
        inner = c["mamba_expand"] * c["hidden_size"]
        return mamba * (inner * c["mamba_d_state"] + (c["mamba_d_conv"] - 1) * inner)
    if name == "qwen3-next-80b-a3b-instruct":  # gated DeltaNet but every 4th layer
        linear = sum((i + 1) % c["full_attention_interval"] != 0 for i in range(layers))
        keys = c["linear_num_key_heads"] * c["linear_key_head_dim"]
        values = c["linear_num_value_heads"] * c["linear_value_head_dim"]
        state = c["linear_num_value_heads"] * c["linear_key_head_dim"] * c[
            "linear_value_head_dim"]
        return linear * (state + (c["linear_conv_kernel_dim"] - 1) * (2 * keys + values))
    if name == "minimax-text-01-hf":  # lightning: d_h × d_h per head, no conv
        lightning = c["layer_types"].count("linear_attention")
        return lightning * c["num_attention_heads"] * c["head_dim"] ** 2
    if name == "rwkv-4-169m-pile":  # WKV num, den, max per channel; the two shifted inputs
        return layers * (3 * c["attention_hidden_size"] + 2 * c["hidden_size"])
    if name == "recurrentgemma-2b":  # the RG-LRU per channel, the conv's last k − 1 inputs
        types = c["_block_types"]  # the default block_types, as the file's 4.x name gives it
        griffin = sum(types[i % len(types)] == "recurrent" for i in range(layers))
        return griffin * c["lru_width"] * c["conv1d_width"]
    if name == "lfm2-1.2b":  # a short convolution except at full_attn_idxs
        conv = layers - len(c["full_attn_idxs"])
        return conv * (c["conv_L_cache"] - 1) * c["hidden_size"]
    raise KeyError(name)


@pytest.mark.parametrize("name", ["mamba-130m-hf", "ai21-jamba-1.5-mini",
                                  "qwen3-next-80b-a3b-instruct", "lfm2-1.2b",
                                  "minimax-text-01-hf", "rwkv-4-169m-pile"])
def test_the_state_cache_is_a_hand_count_from_the_config(name):
    """The decode cache of the layers without attention: constant in the context."""
    short = calc.infer(_preset(name), gpu="h100", context=1024, batch=3).inference
    long = calc.infer(_preset(name), gpu="h100", context=4096, batch=3).inference
    assert short.state_cache_bytes == 3 * BF16 * _state_elements_by_hand(name)
    assert long.state_cache_bytes == short.state_cache_bytes
    attention_cache = long.kv_cache_bytes - long.state_cache_bytes
    assert attention_cache == 4 * (short.kv_cache_bytes - short.state_cache_bytes)


def test_lightning_activations_are_a_hand_count_from_the_config():
    """One lightning-attention mixer per token: its in_proj input (the norm's output, d) and
    10 widths of H·d_h split t ways (q, k, v before and after the SiLU, the kernel's output,
    the gate before its sigmoid, the norm's output, out_proj's input)."""
    c = _config("minimax-text-01-hf")
    d, width, s = c["hidden_size"], c["num_attention_heads"] * c["head_dim"], 4096
    for tp in (1, 8):
        m = calc.memory(_preset("minimax-text-01-hf"), seq_len=s, micro_batch=2, tp=tp).memory
        assert m.activations_per_mixer_bytes == {
            "lightning": s * 2 * (d + 10 * width / tp) * BF16}


def test_rwkv_activations_are_a_hand_count_from_the_config():
    """One RWKV layer's mixer per token: the norm's output (d); k, v, the WKV output,
    sigmoid(r) and output's input (5·d_a, split t ways by channels); the time-mix's shifted
    input and three mixes (4d) and the channel-mix's shifted input, two mixes, sigmoid and the
    FFN output it gates (5d), replicated."""
    c = _config("rwkv-4-169m-pile")
    d, width, s = c["hidden_size"], c["attention_hidden_size"], 1024
    for tp in (1, 4):
        m = calc.memory(_preset("rwkv-4-169m-pile"), seq_len=s, micro_batch=2, tp=tp).memory
        assert m.activations_per_mixer_bytes == {
            "rwkv": s * 2 * (d + 5 * width / tp + 9 * d) * BF16}


def test_griffin_state_and_activations_are_hand_counts_from_the_config():
    """RecurrentGemma's decode cache: the Griffin layers' fixed state, and the local-attention
    layers' keys and values up to the window (2,048), no further. Training: one Griffin block
    per token keeps the norm's output (d) and 10·lru_width split t ways (y and GeLU(y), x, the
    conv's output, the two gates, a, the scan's input and output, linear_out's input)."""
    name, c = "recurrentgemma-2b", _config("recurrentgemma-2b")
    state = _state_elements_by_hand(name)
    served = {n: calc.infer(_preset(name), gpu="h100", context=n, batch=3).inference
              for n in (1024, 2048, 4096)}
    per_token = 8 * 2 * c["num_key_value_heads"] * c["head_dim"] * BF16  # 8 attention layers
    for n, inference in served.items():
        assert inference.state_cache_bytes == 3 * BF16 * state
        assert inference.kv_cache_bytes == 3 * (BF16 * state + per_token * min(n, 2048))
    d, lru, s = c["hidden_size"], c["lru_width"], 1024
    for tp in (1, 2):
        m = calc.memory(_preset(name), seq_len=s, micro_batch=2, tp=tp).memory
        assert m.activations_per_mixer_bytes == {"griffin": s * 2 * (d + 10 * lru / tp) * BF16}


def test_mlstm_state_and_activations_are_hand_counts_from_the_config():
    """xLSTM-7b's decode cache: each of the 32 blocks keeps, per head, C (d_k × d_v), n (d_k)
    and m (1) (xLSTMCache.rnn_state), whatever the context; no KV cache. Training: one mLSTM
    block per token keeps the norm's output (d), and split t ways by heads q, k (2·d_qk), v,
    the kernel's output, the head norm's output, sigmoid(o), out_proj's input (5·d_v), the
    two gates and the kernel's n and m (4 per head)."""
    c = _config("xlstm-7b")
    d = c["embedding_dim"]
    blocks, heads = c["num_blocks"], c["num_heads"]
    d_qk, d_v = int(d * c["qk_dim_factor"]), int(d * c["v_dim_factor"])
    dk, dv = d_qk // heads, d_v // heads
    state = blocks * heads * (dk * dv + dk + 1)
    for n in (1024, 8192):
        inference = calc.infer(_preset("xlstm-7b"), gpu="h100", context=n, batch=3).inference
        assert inference.state_cache_bytes == inference.kv_cache_bytes == 3 * BF16 * state
    s = 1024
    for tp in (1, 2):
        m = calc.memory(_preset("xlstm-7b"), seq_len=s, micro_batch=2, tp=tp).memory
        split = 2 * d_qk + 5 * d_v + 4 * heads
        assert m.activations_per_mixer_bytes == {"mlstm": s * 2 * (d + split / tp) * BF16}


def test_mamba_activations_are_a_hand_count_from_the_config():
    """Per token and layer: the norm's input and in_proj's (d each), xz and the scan output
    (3D, split t ways), x_dbl and B, C (R + 4N, replicated); R = ⌈d/16⌉ (time_step_rank
    'auto')."""
    c = _config("mamba-130m-hf")
    d, inner, n = c["hidden_size"], c["intermediate_size"], c["state_size"]
    rank, layers, s = math.ceil(d / 16), c["num_hidden_layers"], 4096
    for tp in (1, 2):
        m = calc.memory(_preset("mamba-130m-hf"), seq_len=s, micro_batch=2, tp=tp).memory
        per_token = 2 * d + 3 * inner / tp + rank + 4 * n
        assert m.activations["layers"] == layers * s * 2 * per_token * BF16
        assert m.activations_per_mixer_bytes == {"mamba": s * 2 * (d + 3 * inner / tp
                                                                   + rank + 4 * n) * BF16}
        assert m.activations_per_layer_bytes is None  # no attention layer


@pytest.mark.parametrize("name", MIXER_MODELS)
def test_memory_step_layout_and_infer_price_every_mixer(name):
    preset = _preset(name)
    m = calc.memory(preset, gpu="h100", seq_len=4096).memory
    assert m.activations["layers"] > 0 and m.total_bytes > m.states_bytes
    kinds = {k for k, n in preset.spec.layer_counts.items()
             if n and k in ("mamba", "deltanet", "lightning", "rwkv", "griffin", "mlstm",
                            "conv")}
    assert set(m.activations_per_mixer_bytes) == kinds
    report = calc.step(preset, gpu="h100", gpus=8, global_batch=64, seq_len=4096,
                       flash_attention=True, dropout=False)
    assert report.step_time_s > 0 and 0 < report.mfu < 1
    assert "Scans and convolutions" in " ".join(report.conventions)
    served = calc.infer(preset, gpu="h100", context=4096).inference
    assert served.state_cache_bytes > 0 and served.decode_seconds_per_token > 0


@pytest.mark.parametrize("name", ["ai21-jamba-1.5-mini", "lfm2-1.2b"])
def test_the_layout_search_prices_hybrids_as_memory_does(name):
    spec = _preset(name).spec
    _, found = search_layouts(spec, gpu="h100", gpus=16, global_batch=64, seq_len=4096,
                              dropout=False)
    assert found.ranked, "some layout of a 16-GPU node pair fits"
    best = found.ranked[0].layout
    assert best.cp == 1  # ring attention does not split the other mixers: cp is not proposed
    m = calc.memory(spec, gpu="h100", seq_len=4096, micro_batch=best.micro_batch, tp=best.tp,
                    pp=best.pp, dp=best.dp, ep=best.ep, vpp=best.vpp, zero=best.zero,
                    recompute=best.recompute, sequence_parallel=best.sequence_parallel,
                    dropout=False).memory
    assert found.ranked[0].memory_bytes == pytest.approx(m.total_bytes, rel=1e-9)


def _step_seconds(spec, **fields) -> float:
    constants = load_constants()
    layout, _ = check(spec, make_layout(8, **fields))
    framework = constants.framework(layout.framework)
    device = device_for(get_gpu("h100"), layout.dtype, constants, framework)
    terms = model_terms(spec, layout.seq_len)
    return step_time(terms, layout, device, NETWORK, framework).step


@pytest.mark.parametrize("name", ["mamba-130m-hf", "ai21-jamba-1.5-mini", "lfm2-1.2b"])
def test_step_time_grows_with_the_layers(name):
    spec = _preset(name).spec
    fields = dict(global_batch=32, seq_len=2048, flash_attention=True, dropout=False)
    deeper = spec.updated(n_layers=2 * spec.n_layers)
    assert _step_seconds(deeper, **fields) > 1.5 * _step_seconds(spec, **fields)


@pytest.mark.parametrize("name", MIXER_MODELS)
def test_operators_add_up_to_calcs_forward_flops_for_every_mixer(name):
    spec = _preset(name).spec
    terms = model_terms(spec, 4096)
    total = (sum(m.flops for m in terms.matmuls) + terms.attention_causal + terms.head.flops
             + sum(op.flops for op in terms.recurrences))
    assert total == pytest.approx(count_flops(spec, 4096).forward, rel=1e-12)
    assert terms.recurrences, "its scans and convolutions are priced"


def test_a_transformer_has_no_recurrences_and_two_reductions_per_layer():
    spec = calc.load_preset("llama2-7b").spec
    terms = model_terms(spec, 4096)
    assert terms.recurrences == () and terms.tp_reductions == ((2.0, spec.d_model),)
    assert {m.name for m in terms.matmuls}.isdisjoint({"mamba/in", "deltanet/in", "conv/in"})


def test_mamba1_x_proj_adds_a_small_all_reduce():
    """vLLM's MambaMixer: x_proj is row-parallel, its R + 2N outputs all-reduced."""
    spec = _preset("mamba-130m-hf").spec
    rank, n = spec.mamba.dt_rank, spec.mamba.d_state
    assert model_terms(spec, 2048).tp_reductions == ((1.0, spec.d_model), (1.0, rank + 2 * n))


def test_tensor_parallelism_splits_lightning_attention_by_heads():
    """vLLM's MiniMaxText01LinearAttention splits qkv_proj, output_gate and the state by heads:
    t must divide lightning.n_heads, even where the attention layers have more heads."""
    spec = _preset("minimax-text-01-hf").spec.updated(**{"lightning.n_heads": 6})
    with pytest.raises(calc.CalcError, match=r"tp=4 must divide lightning\.n_heads=6"):
        calc.memory(spec, seq_len=4096, tp=4)


@pytest.mark.parametrize(("name", "options", "message"), [
    ("mamba-130m-hf", dict(tp=5), "tp=5 must divide mamba.d_inner=1536"),
    ("falcon-h1-0.5b-base", dict(tp=2), "tp=2 must divide mamba.n_groups=1"),
    ("qwen3-next-80b-a3b-instruct", dict(cp=2), "cp=2: context parallelism of"),
])
def test_splits_the_mixers_cannot_take_are_one_line(name, options, message):
    with pytest.raises(calc.CalcError, match=message):
        calc.memory(_preset(name), seq_len=4096, **options)
