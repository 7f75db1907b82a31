"""Inkling's parts (attention.relative_logits, residual_conv, moe.shared_in_router and
router_global_scale, ffn.output_scale): counts by hand, one-line refusals, step-time operators.
Against transformers: tests/test_hf_reference.py; against the reference model:
tests/test_verify.py; LoRA against PEFT: tests/test_finetune_mixers.py."""

from __future__ import annotations

import pytest

import calc
from calc.evaluate import count_flops
from calc.hf import spec_from_hf_config
from calc.timing.operators import model_terms

SMALL = {"model_type": "inkling_text", "vocab_size": 100, "hidden_size": 64,
         "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
         "head_dim": 16, "swa_num_attention_heads": 8, "swa_num_key_value_heads": 4,
         "swa_head_dim": 8, "sliding_window_size": 32, "rel_extent": 48, "d_rel": 4,
         "intermediate_size": 96, "moe_intermediate_size": 32, "n_routed_experts": 8,
         "num_experts_per_tok": 2, "n_shared_experts": 2, "dense_mlp_idx": 1,
         "pad_token_id": None, "bos_token_id": None, "eos_token_id": None}


def test_inkling_default_counts():
    """InklingTextConfig's default: 975,340,270,146 parameters, transformers' count on the meta
    device (test_an_empty_config_is_transformers_default_model), of which a token uses
    41,059,054,146 (6 of 256 routed experts and the 2 shared ones on 66 MoE layers)."""
    counts = calc.count_params(spec_from_hf_config({"model_type": "inkling_text"}))
    assert (counts.total, counts.active) == (975_340_270_146, 41_059_054_146)


def test_the_parts_by_hand():
    """Layer 5 is full (rel_extent 48 wide), layers 0-4 slide (their 32-wide window, 8 heads):
    r_proj d·h·d_rel and the banks; k·h_kv·(d_qk + d_v) conv weights on the keys and values,
    2·d·k on the outputs; the router's E + E_s rows and one scale; the dense MLP's scale."""
    spec = spec_from_hf_config(SMALL)
    c = calc.count_params(spec).components
    assert c["attention/relative"] == 64 * 4 * 4 + 5 * 64 * 8 * 4 + 4 * (48 + 5 * 32)
    assert c["attention/conv"] == 4 * (2 * (16 + 16) + 5 * 4 * (8 + 8))
    assert c["residual_conv"] == 6 * 2 * 64 * 4
    assert c["moe/router"] == 5 * (64 * (8 + 2) + 1)
    assert c["mlp/scale"] == 1
    f = count_flops(spec, 40, "full").components
    bank = 2 * 4 * (4 * 48 + 5 * 8 * 32)  # per token: h·d_rel·E a layer, whatever T
    assert f["attention/relative"] == 2 * 64 * 4 * (4 + 5 * 8) + bank
    assert f["attention/conv"] == 2 * c["attention/conv"]
    assert f["residual_conv"] == 2 * c["residual_conv"]


def test_operators_add_up_to_the_forward():
    """r_proj and the bank as products, the convolutions as recurrences: the step's work is
    calc's count."""
    spec = spec_from_hf_config(SMALL)
    terms = model_terms(spec, 64)
    total = (sum(m.flops for m in terms.matmuls) + terms.attention_causal + terms.head.flops
             + sum(r.flops for r in terms.recurrences))
    assert total == pytest.approx(count_flops(spec, 64).forward, rel=1e-12)
    assert {r.name for r in terms.recurrences} == {"attention/conv", "residual_conv"}


BASE = spec_from_hf_config(SMALL)


@pytest.mark.parametrize("changes, message", [
    ({"attention.layer_pattern": ("chunked",), "attention.chunk_size": 4,
      "attention.kind_shapes": {}}, "attention.relative_logits is not defined with chunked"),
    ({"layers.mixer_pattern": ("attention", "mamba"),
      "mamba": {"d_inner": 8, "d_state": 2, "dt_rank": 2}, "attention.relative_logits": None},
     "residual_conv is defined for sequential pre-norm layers"),
    ({"norm.placement": "post"}, "residual_conv is defined for sequential pre-norm"),
    ({"moe.n_shared_experts": 0}, "moe.shared_in_router=True needs moe.n_shared_experts >= 1"),
])
def test_a_spec_the_parts_do_not_fit_is_one_line(changes, message):
    with pytest.raises(calc.CalcError, match=message) as error:
        BASE.updated(**changes)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("changes, message", [
    ({"n_shared_experts": 0}, "n_shared_experts=0 must be a whole number >= 1"),
    ({"layer_types": ["full_attention"] * 6}, "layer_types must list 'hybrid' or"),
    ({"swa_num_key_value_heads": 3}, "swa_num_key_value_heads=3 must divide"),
    ({"dense_mlp_idx": -1}, "dense_mlp_idx=-1 must be a whole number >= 0"),
])
def test_a_config_transformers_cannot_run_is_one_line(changes, message):
    with pytest.raises(calc.CalcError, match=message) as error:
        spec_from_hf_config({**SMALL, **changes})
    assert "\n" not in str(error.value)


def test_legacy_dense_intermediate_size_swaps_the_widths():
    """InklingTextConfig.__post_init__: dense_intermediate_size makes intermediate_size the
    experts' width and itself the dense MLP's."""
    spec = spec_from_hf_config({**SMALL, "dense_intermediate_size": 24})
    assert (spec.ffn.d_ff, spec.moe.d_expert) == (24, 96)
