"""Gemma 4's attention parts: keys used as values (attention.k_eq_v, a kind's own k_eq_v), the
last layers reading an earlier layer's keys and values (attention.kv_shared_layers) and their
double-wide FFN (ffn.double_wide), through the spec's rules, the step's operators, serving's
cache and the training memory. Exactness against transformers' own model is
tests/test_hf_reference.py's (gemma4_unified_text: default, released and random configs)."""

from __future__ import annotations

import re

import pytest

import calc
from calc.evaluate import count_flops, count_params

BASE = {"name": "shared", "vocab_size": 97, "d_model": 64, "n_layers": 6, "context_length": 64,
        "attention": {"n_heads": 4, "n_kv_heads": 2, "head_dim": 16, "sliding_window": 8,
                      "layer_pattern": ["local", "local", "global"], "qk_norm": "head",
                      "kind_shapes": {"global": {"n_kv_heads": 1, "head_dim": 32,
                                                 "k_eq_v": True}},
                      "kv_shared_layers": 2},
        "ffn": {"activation": "geglu", "d_ff": 96, "double_wide": True},
        "norm": {"kind": "rmsnorm", "placement": "sandwich"}, "position": {"kind": "rope"}}


def _spec(ffn: dict | None = None, **attention) -> calc.ModelSpec:
    return calc.ModelSpec.model_validate({**BASE, "attention": {**BASE["attention"], **attention},
                                          "ffn": {**BASE["ffn"], **(ffn or {})}})


@pytest.mark.parametrize(("attention", "ffn", "message"), [
    ({"kv_shared_layers": 6}, {}, "attention.kv_shared_layers=6 must be below n_layers=6"),
    ({"kv_shared_layers": 4}, {}, "attention.kv_shared_layers=4: no earlier global layer"),
    ({"kv_shared_layers": 0}, {}, "ffn.double_wide widens the FFN of the layers without keys"),
    ({"chunk_size": 4, "layer_pattern": ["local", "chunked", "global"]}, {},
     "the shared layers must be global or local, not chunked"),
    ({"v_head_dim": 8}, {},
     "attention.k_eq_v: the global layers' keys are their values, so their value width must "
     "be their key width 32, not 8"),
    ({"differential": True}, {}, "attention.differential is not defined with attention.mla"),
])
def test_what_the_layers_cannot_be_is_one_line(attention, ffn, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _spec(ffn, **attention)


def test_a_layer_of_another_mixer_cannot_share():
    with pytest.raises(ValueError, match="the last 2 layers must be attention layers"):
        calc.ModelSpec.model_validate({
            **BASE, "layers": {"mixer_pattern": ["attention"] * 5 + ["mamba"]},
            "mamba": {"d_inner": 64, "d_state": 4, "d_conv": 2, "dt_rank": 4}})


def test_the_cli_refuses_a_spec_file_in_one_line(cli, tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text('name = "x"\nvocab_size = 97\nd_model = 64\nn_layers = 2\n'
                    'context_length = 64\n[attention]\nn_heads = 4\nkv_shared_layers = 2\n'
                    '[ffn]\nactivation = "swiglu"\nd_ff = 96\n[position]\nkind = "rope"\n')
    result = cli(str(path))
    assert result.code == 2 and result.err.count("\n") == 1
    assert "attention.kv_shared_layers=2 must be below n_layers=2" in result.err


def test_the_parts_count_as_the_layers_have_them():
    """Layers 0-5: local, local, global (own K = V), local, local (shared), global (shared);
    W_K/W_V on layers 0, 1, 3 (64 → 2·16 each), W_K alone on layer 2 (64 → 32); key norms on
    those four; the last two FFNs 2·96 wide; no FLOPs of the missing products."""
    spec = _spec()
    c = count_params(spec).components
    assert c["attention/kv"] == 3 * 64 * 2 * 2 * 16 + 64 * 32
    # q norms on the 4 local (16) and 2 global (32) layers, k norms on layers 0, 1, 3 and 2
    assert c["attention/qk_norm"] == 4 * 16 + 2 * 32 + 3 * 16 + 32
    assert c["mlp/up"] == 2 * 64 * 96 * (4 + 2 * 2)
    f = count_flops(spec, 8).components
    assert f["attention/kv"] == 2 * c["attention/kv"]
    assert f["mlp"] == 2 * (c["mlp/up"] + c["mlp/down"])


def test_step_time_prices_the_products_the_layers_have():
    """The operators: W_K/W_V over the layers with their own keys and values (W_K alone where
    the keys are the values), the plain and double-wide FFNs apart, each at calc's FLOPs."""
    from calc.timing.operators import model_terms

    spec = _spec()
    terms, flops = model_terms(spec, 64), count_flops(spec, 64).components
    kv = [(op.n, op.layers) for op in terms.matmuls if op.name == "attention/kv"]
    assert kv == [(2 * 32, 3), (32, 1)]
    up = [(op.n, op.layers) for op in terms.matmuls if op.name == "mlp/up"]
    assert up == [(2 * 96, 4), (2 * 192, 2)]
    for name in ("attention/kv", "mlp/up", "mlp/down"):
        key = "mlp" if name.startswith("mlp") else name
        total = sum(op.flops for op in terms.matmuls if op.name.startswith(key))
        assert total == pytest.approx(flops[key], rel=1e-12)


def test_serving_and_infer_cache_only_the_layers_with_their_own():
    """A serving replica's cache of one sequence is infer's, at every context: the local
    layers 0, 1, 3 (2 heads of 16, K and V, window 8) and the global layer 2 (1 head of 32)."""
    from calc.serving.layouts import Replica
    from calc.serving.memory import replica_memory
    from calc.timing.operators import model_terms

    spec = _spec()
    block = calc.infer(spec, gpu="h100", context=64, batch=1).inference
    assert block.kv_cache_bytes_per_token == 2 * (3 * 2 * 2 * 16 + 2 * 32)
    assert block.kv_cache_bytes == 2 * (3 * 8 * 2 * 2 * 16 + 64 * 2 * 32)
    memory = replica_memory(spec, model_terms(spec, 64), Replica(), "bf16", "bf16", 80)
    for context in (1, 8, 9, 64):
        block = calc.infer(spec, gpu="h100", context=context, batch=1).inference
        assert memory.kv_bytes(context) == pytest.approx(block.kv_cache_bytes, rel=1e-12)


def test_training_activations_drop_the_shared_layers_own_keys_and_values():
    """One GPU holds every layer: the two kv-shared layers keep no K or V of their own (layer
    4's 2 heads of 16, layer 5's 1 head of 32, each K and V, in bf16), and the double-wide FFNs
    keep more than plain ones."""
    plain = _spec({"double_wide": False}, kv_shared_layers=0)
    shared = _spec()
    a = calc.memory(plain, gpu="h100", seq_len=64).memory
    b = calc.memory(shared, gpu="h100", seq_len=64).memory
    assert b.activations["layers"] != a.activations["layers"]
    wide = _spec({"double_wide": False})
    c = calc.memory(wide, gpu="h100", seq_len=64).memory
    # K and V of layers 4 (2 heads of 16) and 5 (1 head of 32), bf16, 64 tokens
    assert a.activations["layers"] - c.activations["layers"] == 64 * 2 * (2 * 2 * 16 + 2 * 32)
    assert b.activations["layers"] > c.activations["layers"]  # the wider FFNs keep more
