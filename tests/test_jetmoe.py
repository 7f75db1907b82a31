"""JetMoE (jetmoe/jetmoe-8b; Shen et al. 2024, arXiv:2404.07413): a mixture of attention heads
and a mixture of MLP experts, exact against transformers 5.24.0's JetMoeForCausalLM and against
a hand count from the config's fields."""

from __future__ import annotations

import json

import pytest

import calc
from calc.hf import spec_from_hf_config
from calc.hf.export import hf_config_from_spec, shape
from calc.timing.operators import model_terms
from tests.hf_released import CONFIGS

RELEASED = json.loads((CONFIGS / "jetmoe-8b.json").read_text())
SMALL = {"model_type": "jetmoe", "vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2,
         "num_key_value_heads": 2, "kv_channels": 16, "intermediate_size": 48,
         "num_local_experts": 4, "num_experts_per_tok": 2, "max_position_embeddings": 64}


def _by_hand(c: dict) -> tuple[int, int]:
    """(total, active) from the release's fields: per layer a router d × E and one kv_proj
    d × 2·h_kv·d_h, E attention experts of W_Q d × h_kv·d_h and W_O h_kv·d_h × d, an output
    bias d; the MoE's router d × E, E GLU experts of 3·d·d_ff, an output bias d; two RMSNorms;
    the tied embedding and the final norm."""
    d, e, k = c["hidden_size"], c["moe_num_experts"], c["moe_top_k"]
    heads = c["num_key_value_heads"] * c["kv_channels"]
    shared = d * e + d * 2 * heads + d + d * e + d + 2 * d
    attention_expert, mlp_expert = 2 * d * heads, 3 * d * c["ffn_hidden_size"]
    layers, embedding = c["num_hidden_layers"], c["vocab_size"] * d + d
    total = layers * (shared + e * (attention_expert + mlp_expert)) + embedding
    active = layers * (shared + k * (attention_expert + mlp_expert)) + embedding
    return total, active


def test_released_counts_by_hand_and_by_transformers():
    pytest.importorskip("transformers")
    from calc.verify.hf_reference import hf_parameter_count

    counts = calc.count_params(spec_from_hf_config(RELEASED))
    assert (counts.total, counts.active) == _by_hand(RELEASED)
    assert counts.total == hf_parameter_count(RELEASED) == 8_522_237_952
    assert counts.components["attention/router"] == 24 * 2048 * 8


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_forward_flops_are_transformers(device):
    """On meta the router's choice is balanced (calc.verify.hf_reference); on CPU it is the
    router's own top-2: the same FLOPs either way, exactly k experts a token."""
    pytest.importorskip("transformers")
    from calc.verify.hf_reference import count

    config = RELEASED if device == "meta" else SMALL
    counted = count(config, 32, device)
    spec = spec_from_hf_config(config)
    assert counted.params == calc.count_params(spec).total
    assert counted.forward == 32 * calc.count_flops(spec, 32, "full").forward


def test_verify_builds_the_mixture_of_heads_and_compares_with_transformers():
    pytest.importorskip("torch")
    from calc.reports.verify import verify

    report = verify(spec_from_hf_config(SMALL), 16, hf=True, hf_config=SMALL)
    assert report.ok and report.hf is not None and len(report.hf.checks) == 2


def test_the_spec_writes_back_as_the_same_config():
    spec = spec_from_hf_config(RELEASED)
    assert spec.attention.experts == 8 and spec.attention.n_heads == 32
    written = hf_config_from_spec(spec)
    assert written["model_type"] == "jetmoe"
    assert shape(spec_from_hf_config(written)) == shape(spec)


@pytest.mark.parametrize(("change", "message"), [
    ({"moe_num_experts": 16}, "moe_num_experts=16: transformers' JetMoeConfig reads "
                              "num_local_experts"),
    ({"glu": False}, "glu=False: transformers' JetMoe builds GLU experts"),
    ({"num_attention_heads": 16}, "JetMoeConfig sets it to num_key_value_heads"),
])
def test_what_transformers_would_build_otherwise_is_refused(change, message):
    with pytest.raises(calc.CalcError, match=message):
        spec_from_hf_config({**RELEASED, **change})


def test_training_and_serving_price_the_attention_router():
    spec = spec_from_hf_config(RELEASED)
    terms = model_terms(spec, 4096)
    router = next(m for m in terms.matmuls if m.name == "attention/router")
    assert router.flops == 24 * 2 * 2048 * 8 and router.split == "none"
    total = sum(m.flops for m in terms.matmuls) + terms.attention_causal + terms.head.flops
    assert total == pytest.approx(calc.count_flops(spec, 4096).forward, rel=1e-12)
    served = calc.infer(spec, gpu="h100", context=4096).inference
    assert served.kv_cache_bytes == 24 * 2 * 16 * 128 * 2 * 4096  # h_kv = 16 heads cached
