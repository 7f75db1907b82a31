"""calc's formulas against the model torch builds from the same spec, exactly."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import calc  # noqa: E402
from calc.reports.verify import verify  # noqa: E402
from tests.draws import examples, one_feature  # noqa: E402
from tests.hf_family_strategies import doge_config  # noqa: E402
from tests.strategies import (  # noqa: E402
    inkling_specs,
    model_specs,
    ngpt_specs,
    shared_block_specs,
)


def assert_verifies(spec: calc.ModelSpec, seq_len: int, device: str) -> None:
    """calc's parameters and FLOPs equal the reference model's on `device` at `seq_len` tokens
    (no more than a learned position table holds), each mismatch named."""
    if spec.position_table:
        seq_len = min(seq_len, spec.position_table)
    report = verify(spec, seq_len, device=device)
    assert report.ok, [c for c in [*report.params, *report.flops] if not c.match]


@pytest.mark.parametrize("name", calc.list_presets())
def test_every_preset_verifies_exactly(name):
    """Parameters per component and forward FLOPs per component at T = 32 on the meta device;
    backward exactly 2 × forward."""
    report = verify(calc.load_preset(name).spec, 32)
    assert report.ok, [c for c in [*report.params, *report.flops] if not c.match]
    total = next(check for check in report.params if check.quantity == "total")
    assert total.torch == calc.count_params(calc.load_preset(name).spec).total


@settings(max_examples=examples(8), deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=model_specs(), seq_len=st.integers(1, 8))
def test_one_layer_of_each_structure_counts_as_every_layer(spec, seq_len):
    """calc.verify.count runs one layer of each structure on the meta device; running every
    layer gives the same counts, component by component and operator by operator."""
    from calc.verify.count import count_flops
    from calc.verify.model import build

    model = build(spec)
    assert count_flops(model, seq_len) == count_flops(model, seq_len, every_layer=True)


def test_sliding_window_beyond_the_window():
    """Mistral 7B at T = 8192 > w = 4096: the band, not the square, is computed and counted."""
    report = verify(calc.load_preset("mistral-7b").spec, 8192)
    scores = next(c for c in report.flops if c.quantity == "attention/scores")
    assert report.ok and scores.torch == 2 * 32 * 32 * 256 * 4096 * 8192


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=model_specs(), seq_len=st.integers(1, 24), device=st.sampled_from(["meta", "cpu"]),
       batch=st.integers(1, 2))
def test_random_specs_verify_exactly(spec, seq_len, device, batch):
    """Every option the spec allows (tests/strategies.py), on meta and on real CPU tensors
    (where the MoE router's real top-k decides the expert loads)."""
    if spec.position_table:
        seq_len = min(seq_len, spec.position_table)
    report = verify(spec, seq_len, batch=batch, device=device)
    assert report.ok, [c for c in [*report.params, *report.flops] if not c.match]


@one_feature
@given(spec=model_specs().filter(lambda s: s.layer_counts["rwkv"]), seq_len=st.integers(1, 12),
       device=st.sampled_from(["meta", "cpu"]))
def test_random_specs_with_rwkv_layers_verify_exactly(spec, seq_len, device):
    """RWKV layers beside any other mixer, FFN and norm placement: the time-mix, the WKV's
    9 FLOPs per channel under StateCounter, and the channel-mix around the FFN."""
    assert_verifies(spec, seq_len, device)


@one_feature
@given(spec=model_specs().filter(lambda s: s.layer_counts["griffin"]), seq_len=st.integers(1, 12),
       device=st.sampled_from(["meta", "cpu"]))
def test_random_specs_with_griffin_layers_verify_exactly(spec, seq_len, device):
    """Griffin's recurrent blocks beside any other mixer, FFN and norm placement: linear_y/x,
    the temporal conv, the block-diagonal gates (one bmm each), Λ, linear_out, and the RG-LRU's
    3 FLOPs per channel under StateCounter."""
    assert_verifies(spec, seq_len, device)


@one_feature
@given(spec=model_specs().filter(lambda s: s.moe is not None
                                 and (s.moe.n_zero_experts or s.moe.shortcut)),
       seq_len=st.integers(1, 12), device=st.sampled_from(["meta", "cpu"]))
def test_random_specs_with_zero_experts_or_shortcut_verify_exactly(spec, seq_len, device):
    """LongCat-Flash's parts beside any other: the router over E + E_0, exactly k·E/(E + E_0)
    FFN experts a token (by the router's scores on the CPU), and the shortcut-connected MoE's
    routed output joined a layer later."""
    assert_verifies(spec, seq_len, device)


@one_feature
@given(spec=inkling_specs(), seq_len=st.integers(1, 16), device=st.sampled_from(["meta", "cpu"]))
def test_random_specs_with_inklings_parts_verify_exactly(spec, seq_len, device):
    """Inkling's parts: the relative bias (r_proj and the bank's product per token, its bank
    the window wide on sliding layers, narrower or wider than T), the residual convolutions on
    the keys, values and both sublayers' outputs, the router scoring the shared experts with
    its global scale, the dense FFN's output scale."""
    assert_verifies(spec, seq_len, device)


@one_feature
@given(spec=model_specs().filter(lambda s: s.prediction_head is not None
                                 or not s.norm.first_mixer_norm),
       seq_len=st.integers(1, 12), device=st.sampled_from(["meta", "cpu"]))
def test_random_specs_with_modernbert_decoders_parts_verify_exactly(spec, seq_len, device):
    """ModernBERT decoder's prediction head (a d × d dense layer, 2·d² FLOPs a token, and a
    norm) and its layer 0 without the norm before its mixer, beside any other part."""
    assert_verifies(spec, seq_len, device)


@one_feature
@given(spec=model_specs().filter(lambda s: s.attention.cca is not None
                                 or (s.moe is not None and s.moe.router_mlp is not None)
                                 or s.residual_scales is not None),
       seq_len=st.integers(1, 12), device=st.sampled_from(["meta", "cpu"]))
def test_random_specs_with_zaya_parts_verify_exactly(spec, seq_len, device):
    """ZAYA1's parts beside any other: CCA's two causal convs (2·C·k_a + 2·C·d_h·k_b a token),
    split values and temperatures, the MLP router carrying its state (its four products), and
    the residual scales (parameters only)."""
    assert_verifies(spec, seq_len, device)


@one_feature
@given(spec=model_specs().filter(lambda s: s.position.kind == "bucketed"),
       seq_len=st.integers(1, 12), device=st.sampled_from(["meta", "cpu"]))
def test_random_specs_with_a_bucketed_bias_verify_exactly(spec, seq_len, device):
    """CPM-Ant's score bias (one table of buckets + segments² rows × heads, looked up and
    added: 0 FLOPs) and its segment table, beside any other part."""
    assert_verifies(spec, seq_len, device)


@one_feature
@given(spec=model_specs().filter(lambda s: s.loop is not None), seq_len=st.integers(1, 12),
       device=st.sampled_from(["meta", "cpu"]))
def test_random_specs_with_looped_layers_verify_exactly(spec, seq_len, device):
    """Looped layers (calc.spec.loop): parameters once per stored layer (HRM-Text's initial
    state with them), FLOPs once per executed pass, the reference model running the runs in
    order, beside any other part."""
    assert_verifies(spec, seq_len, device)


@one_feature
@given(spec=ngpt_specs(), seq_len=st.integers(1, 12),
       device=st.sampled_from(["meta", "cpu"]))
def test_random_specs_with_ngpt_scales_verify_exactly(spec, seq_len, device):
    """nGPT's scale vectors (Dory): parameters per layer, attention layer, FFN and head row,
    0 FLOPs, beside any other part (looped layers among them)."""
    assert_verifies(spec, seq_len, device)


def test_shortcut_joins_the_routed_output_after_the_next_layer():
    """The reference model's ScMoE: the dense layer's output plus the MoE layer's routed part,
    as transformers' LongcatFlashDecoderLayer adds them (residual + MLP + shortcut output)."""
    from calc.verify.model import build

    spec = calc.spec_from_hf_config({
        "model_type": "longcat_flash", "num_layers": 1, "hidden_size": 8,
        "ffn_hidden_size": 4, "expert_ffn_hidden_size": 4, "n_routed_experts": 2,
        "zero_expert_num": 2, "moe_topk": 2, "num_attention_heads": 2, "q_lora_rank": 4,
        "kv_lora_rank": 4, "qk_nope_head_dim": 2, "qk_rope_head_dim": 2, "head_dim": 2,
        "v_head_dim": 2, "vocab_size": 16})
    model = build(spec, "cpu")
    ids = torch.randint(0, 16, (1, 5))
    seen: dict[str, torch.Tensor] = {}
    moe, dense = model.layers[0], model.layers[1]
    dense.register_forward_hook(lambda module, args, out: seen.update(dense=out))
    moe.ffn.register_forward_hook(lambda module, args, out: seen.update(
        routed=module.pending.clone()))
    with torch.no_grad():
        x = model.token(ids)
        out = dense(moe(x, torch.arange(5)), torch.arange(5))
        moe.ffn.pending = None
        logits = model(ids)
    assert not torch.equal(seen["routed"], torch.zeros_like(seen["routed"]))
    expected = model.lm_head(model.final_norm(out + seen["routed"]), model.token.weight)
    assert torch.allclose(logits, expected)


@settings(max_examples=examples(6), deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=model_specs().filter(lambda s: s.layer_counts["mlstm"]), seq_len=st.integers(1, 9),
       device=st.sampled_from(["meta", "cpu"]))
def test_random_specs_with_mlstm_layers_verify_exactly(spec, seq_len, device):
    """xLSTM's mLSTM beside any other mixer, FFN and norm placement: q, k, v, the output gate,
    the input and forget gates, the head norm, out_proj, and the matrix memory's 5 FLOPs per
    element of C and n (decay and write under StateCounter, the read as a matmul)."""
    assert_verifies(spec, seq_len, device)


def test_cpu_forward_is_a_real_language_model():
    from calc.verify.model import build

    spec = calc.load_preset("chapter-char-gpt").spec
    model = build(spec, "cpu")
    logits = model(torch.randint(0, spec.vocab_size, (2, 16)))
    assert logits.shape == (2, 16, spec.vocab_size) and torch.isfinite(logits).all()
    # causal: changing a later token leaves earlier logits alone
    ids = torch.randint(0, spec.vocab_size, (1, 16))
    changed = ids.clone()
    changed[0, -1] = (changed[0, -1] + 1) % spec.vocab_size
    assert torch.allclose(model(ids)[0, :-1], model(changed)[0, :-1])


def test_verify_command(cli):
    result = cli("verify", "gpt2", "--seq-len", "16", "--format", "json")
    data = result.json()
    assert result.code == 0 and data["ok"] is True
    assert data["params"][-1] == {"quantity": "total", "calc": 124_439_808,
                                  "torch": 124_439_808, "match": True}
    assert cli("verify", "gpt2", "--seq-len", "2048").code == 2  # beyond the position table


@pytest.mark.parametrize("name", ["gpt2", "chapter-char-gpt", "mixtral-8x7b", "deepseek-v3"])
def test_verify_against_transformers(name):
    """`verify --hf`: the preset exported to transformers' architecture, built there on meta."""
    pytest.importorskip("transformers")
    report = verify(calc.load_preset(name).spec, 32, hf=True)
    assert report.hf is not None and report.hf.compared and report.ok
    assert [check.match for check in report.hf.checks] == [True, True]


def test_verify_says_why_transformers_was_not_compared():
    pytest.importorskip("transformers")
    report = verify(calc.load_preset("gpt3-13b").spec, 16, hf=True)
    assert report.ok and not report.hf.compared and "head_dim=128" in report.hf.reason
    # issue 12: the headline said "everything matches" when transformers was not compared
    headline = calc.render(report).splitlines()[0]
    assert "transformers NOT compared" in headline and "everything matches" not in headline


def test_verify_a_config_json_with_hf(cli):
    pytest.importorskip("transformers")
    config = "tests/data/hf_configs/qwen3-30b-a3b.json"
    result = cli("verify", config, "--hf", "--seq-len", "64", "--format", "json")
    data = result.json()
    assert result.code == 0 and data["ok"] and data["hf"]["model_type"] == "qwen3_moe"


@one_feature
@given(spec=shared_block_specs(), seq_len=st.integers(1, 12),
       device=st.sampled_from(["meta", "cpu"]))
def test_random_specs_with_a_shared_block_verify_exactly(spec, seq_len, device):
    """The shared block beside any mixer, with FFNs or without: each weight set counted once,
    each depth's projection and adapters, its products and QKᵀ·V at every depth (the
    reference model runs them; one layer per structure on meta counts as every layer)."""
    assert_verifies(spec, seq_len, device)



@st.composite
def _gemma3n_specs(draw) -> calc.ModelSpec:
    """Gemma 3n's language model read from a random config (tests/hf_strategies.py): the
    general strategy draws AltUp and LAuReL only on its rarer sandwich-normed attention
    specs."""
    from calc.hf import spec_from_hf_config
    from tests.hf_strategies import STRATEGIES

    config = draw(STRATEGIES["gemma3n_text"]("gemma3n_text"))
    return spec_from_hf_config({"model_type": "gemma3n_text", **config,
                                "vocab_size": draw(st.integers(1, 50)), "pad_token_id": None})


@one_feature
@given(spec=_gemma3n_specs(), seq_len=st.integers(1, 12), device=st.sampled_from(["meta", "cpu"]))
def test_random_gemma3n_specs_verify_exactly(spec, seq_len, device):
    """Gemma 3n's AltUp (the streams' projections in and out, each layer's router,
    coefficients and prediction product), LAuReL (its two products and norm), per-layer
    embeddings and kv-shared layers on calc's reference model, on meta and real tensors."""
    assert_verifies(spec, seq_len, device)


def _doge_part(spec: calc.ModelSpec) -> bool:
    return (spec.attention.dynamic_mask is not None or spec.residual_scales is not None
            or bool(spec.moe and spec.moe.product_keys))


@one_feature
@given(spec=model_specs().filter(_doge_part), seq_len=st.integers(1, 14),
       device=st.sampled_from(["meta", "cpu"]))
def test_doge_parts_verify_exactly(spec, seq_len, device):
    """Doge's parts (product-key experts, the residual scales and, where the drawn spec has
    only global attention layers, the dynamic mask) with whatever else the spec draws, on meta
    and on real CPU tensors."""
    assert_verifies(spec, seq_len, device)


@one_feature
@given(config=doge_config(), seq_len=st.integers(1, 14), device=st.sampled_from(["meta", "cpu"]))
def test_doge_configs_verify_exactly(config, seq_len, device):
    """Doge as calc reads it: the dynamic mask (dt_proj and A; each key/value head's top keep
    keys, multiplied alone once keep < T), with is_moe the product-key experts (the router's
    2·⌊√E⌋ sub-keys, k one-neuron experts as two bmm a token) and the residual scales, on meta
    and on real CPU tensors."""
    from calc.hf import spec_from_hf_config

    spec = spec_from_hf_config({"model_type": "doge", "vocab_size": 11, **config})
    assert_verifies(spec, seq_len, device)
