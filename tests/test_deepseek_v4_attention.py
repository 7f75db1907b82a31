"""DeepSeek-V4's attention parts (attention.q_lora_rank, q_norm_weights, output_groups): the
counts by hand from modeling_deepseek_v4.py's shapes, the one-line refusals, LoRA's targets
and the step's norms. transformers' own model is compared in tests/test_hf_reference.py."""

from __future__ import annotations

import re

import pytest

import calc
from calc.errors import CalcError
from calc.spec.finetune import FineTune, resolve_targets

BASE = dict(name="v4", vocab_size=50, d_model=16, n_layers=2, context_length=16,
            attention={"n_heads": 4, "n_kv_heads": 1, "head_dim": 8, "k_eq_v": True,
                       "qk_norm": "head"},
            ffn={"d_ff": 24, "activation": "swiglu"}, position={"kind": "rope"},
            norm={"kind": "rmsnorm"})


def spec(**attention) -> calc.ModelSpec:
    return calc.ModelSpec.model_validate({**BASE, "attention": {**BASE["attention"],
                                                                **attention}})


def test_parameters_and_flops_by_hand():
    """q_a_proj d × r_q, q_a_norm r_q, q_b_proj r_q × h·d_h (DeepseekV4Attention); o_a_proj
    g·r × h·d_h/g and o_b_proj g·r × d; the query norm's γ gone, the key norm's kept. FLOPs:
    twice each weight a token multiplies through."""
    d, h, width, r_q, groups, rank, layers = 16, 4, 8, 6, 2, 3, 2
    plain = spec()
    v4 = spec(q_lora_rank=r_q, q_norm_weights=False,
              output_groups={"groups": groups, "rank": rank})
    p, q = calc.count_params(v4).components, calc.count_params(plain).components
    assert p["attention/q"] == layers * (d * r_q + r_q + r_q * h * width)
    assert q["attention/q"] == layers * d * h * width
    assert p["attention/o"] == layers * (h * width * rank + groups * rank * d)
    assert p["attention/qk_norm"] == layers * width and q["attention/qk_norm"] == layers * 2 * width
    f = calc.count_flops(v4, 8, "full").components
    assert f["attention/q"] == 2 * layers * (d * r_q + r_q * h * width)
    assert f["attention/o"] == 2 * layers * (h * width * rank + groups * rank * d)


@pytest.mark.parametrize("attention, message", [
    ({"q_lora_rank": 4, "qkv_bias": True}, "not defined with attention.qkv_bias"),
    ({"output_groups": {"groups": 2, "rank": 2}, "out_bias": True},
     "not defined with attention.out_bias"),
    ({"q_lora_rank": 4, "output_gate": True}, "not defined with attention.output_gate"),
    ({"output_groups": {"groups": 3, "rank": 2}},
     "attention.output_groups.groups=3 must divide the heads' output n_heads·v_head_dim = 32"),
    ({"q_norm_weights": False, "qk_norm": "projection"},
     "attention.q_norm_weights=false needs qk_norm='head'"),
    ({"q_lora_rank": 4, "n_kv_heads": None, "head_dim": None, "k_eq_v": False,
      "qk_norm": "none", "mla": {"kv_lora_rank": 4, "qk_nope_head_dim": 2,
                                 "qk_rope_head_dim": 2, "v_head_dim": 4}},
     "not defined with attention.mla"),
])
def test_bad_combinations_are_refused_in_one_line(attention, message):
    with pytest.raises(CalcError, match=re.escape(message)) as caught:
        spec().updated(**{f"attention.{key}": value for key, value in attention.items()})
    assert "\n" not in str(caught.value)


def test_lora_cannot_target_the_latent_or_grouped_projections():
    """PEFT's q and o name q_proj and o_proj, which DeepSeek-V4 does not have (q_a_proj,
    q_b_proj, o_a_proj, o_b_proj): refused, as all-linear is; k and the FFN's stay."""
    v4 = spec(q_lora_rank=6, output_groups={"groups": 2, "rank": 3})
    for targets, named in ((("q", "v"), "queries come through a latent"),
                           (("o",), "grouped projection"), ("all-linear", "q_a/q_b, o_a/o_b")):
        with pytest.raises(CalcError, match=named):
            resolve_targets(v4, FineTune(method="lora", lora_targets=targets))
    assert resolve_targets(v4, FineTune(method="lora", lora_targets=("k", "up"))) == ("k", "up")


def test_the_cache_keeps_the_one_key_and_value_head_once():
    """A 3-layer DeepSeek-V4 after 6 tokens (within the window of 8): its attention hands the
    cache one tensor as both keys and values (DeepseekV4Attention: cache.update(kv, kv)), so
    calc counts 6 tokens × 1 head × 16 per layer once, as V4's own cache layers keep it
    (DeepseekV4HCACache.update: values = keys). transformers' generic sliding layer, which the
    all-sliding configs calc reads get, stores the same values twice: calc's count is half its
    storage, and keys that are the values but cached apart (Gemma 4's) take all of it."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from calc.hf import spec_from_hf_config
    from calc.verify import hf_reference

    config = {"model_type": "deepseek_v4", "vocab_size": 32, "hidden_size": 8,
              "num_hidden_layers": 3, "num_attention_heads": 2, "head_dim": 16,
              "q_lora_rank": 4, "o_groups": 2, "o_lora_rank": 4, "n_routed_experts": 2,
              "num_experts_per_tok": 1, "moe_intermediate_size": 4, "hc_mult": 2,
              "sliding_window": 8, "layer_types": ["sliding_attention"] * 3}
    tokens = 6
    model = hf_reference.build(config, "cpu")
    with torch.no_grad():
        cache = model(input_ids=torch.randint(0, 32, (1, tokens)),
                      use_cache=True).past_key_values
    assert all(torch.equal(layer.keys, layer.values) for layer in cache.layers)
    stored = sum(tensor.numel() for layer in cache.layers for tensor in (layer.keys, layer.values))
    spec = spec_from_hf_config(config)
    assert stored == 2 * tokens * 3 * 16  # elements: the same values as keys and as values
    once = calc.infer(spec, gpu="h100", context=tokens, batch=1).inference.kv_cache_bytes
    assert once == 2 * (stored // 2)  # bf16 bytes of one copy
    apart = spec.updated(**{"attention.kv_cached_once": False})
    assert calc.infer(apart, gpu="h100", context=tokens, batch=1).inference.kv_cache_bytes == (
        2 * stored)


def test_keys_cached_once_must_be_the_values():
    with pytest.raises(CalcError, match=re.escape("attention.kv_cached_once=true needs "
                                                  "attention.k_eq_v=true")) as caught:
        spec().updated(**{"attention.k_eq_v": False, "attention.kv_cached_once": True})
    assert "\n" not in str(caught.value)
