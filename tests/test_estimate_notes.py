"""The main report labels what it assumes (issue 12): Chinchilla's dense-model rule on an MoE,
a published run set beside an estimate of a different run, options given that priced nothing."""

from __future__ import annotations

import pytest

import calc


def _text(report) -> str:
    return " ".join(calc.render(report).split())


def _labels(report) -> list[str]:
    """The first cell of every row the report prints."""
    from calc.views import view

    return [row[0] for table in view(report).tables for row in table.rows]


def test_chinchilla_tokens_of_an_moe_are_labelled():
    """DeepSeek-V3: 20 × 671 B total parameters = 13.4 T, a rule fitted on dense models."""
    moe = calc.estimate("deepseek-v3")
    assert moe.params.chinchilla_tokens == 20 * moe.params.total
    assert round(moe.params.chinchilla_tokens / 1e12, 1) == 13.4
    assert "a rule fitted on dense models, not one for MoE" in _text(moe)
    assert "not one for MoE" not in _text(calc.estimate("llama2-7b"))


@pytest.mark.parametrize("changes, differs", [
    ({}, []),
    ({"seq_len": 2048}, ["sequence length"]),
    ({"attention": "full"}, ["attention"]),
    ({"seq_len": 8192, "attention": "full"}, ["sequence length", "attention"]),
    ({"tokens": 1e12}, ["tokens"]),
])
def test_the_published_run_is_compared_only_when_it_is_the_run(changes, differs):
    """Issue 12: the ratio and implied MFU printed when --seq-len/--attention differed from
    the published run's."""
    workload = {"tokens": 2e12, "gpu": "a100", **changes}
    report = calc.estimate("llama2-7b", **workload)
    pub = report.training.published
    assert pub.differs == differs and pub.same_run == (not differs)
    if differs:
        assert pub.ratio is None and pub.implied_mfu is None and pub.implied_mfu_6nd is None
        assert any(f"a different run: {', '.join(differs)} differ" in label
                   for label in _labels(report))
        assert "MFU the published hours imply" not in _labels(report)
    else:
        assert pub.ratio == pytest.approx(report.training.gpu_hours / 184_320)
        assert round(pub.implied_mfu, 3) == 0.414  # README


def test_options_without_tokens_are_named():
    report = calc.estimate("llama2-7b", gpu="a100", gpus=8, mfu=0.5)
    assert report.training is None
    assert "gpu='a100', gpus=8, mfu=0.5 given without tokens" in " ".join(report.notes)
    assert not calc.estimate("llama2-7b").notes


def test_the_hint_reaches_the_cli(cli):
    result = cli("llama2-7b", "--gpu", "a100")
    assert result.code == 0 and "given without tokens" in " ".join(result.out.split())


@pytest.mark.parametrize("model_type, sentence", [
    ("deepseek_v32", "SPARSE_ATTENTION"), ("deepseek_v4", "COMPRESSED_ATTENTION"),
    ("diffllama", "DIFFERENTIAL_ATTENTION"), ("zamba2", "SHARED_BLOCK"), ("hrm_text", "LOOP"),
    ("dory", "NGPT"),
    ("gemma4_text", "PER_LAYER_EMBEDDINGS"), ("gemma3n_text", "ALTUP_LAUREL"),
    ("mllama_text_model", "CROSS_ATTENTION"), ("mamba2", "SCANS"),
    ("doge", "DYNAMIC_MASK"), ("doge", "RESIDUAL_SCALES"),
    ("inkling_text", "RELATIVE_LOGITS"), ("inkling_text", "RESIDUAL_CONVS"),
    ("inkling2_text", "SINK_PROJ"), ("inkling2_text", "CONV_TAPS"),
    ("inkling2_text", "BLOCK_RESIDUAL"), ("inkling2_text", "RELATIVE_LOGITS"),
    ("zaya", "CCA"), ("zaya", "ROUTER_MLP"), ("zaya", "RESIDUAL_SCALES"),
    ("hy_v4", "HYPER_CONNECTIONS"),
])
def test_a_part_brings_its_convention_sentence(model_type, sentence):
    """Each part whose FLOPs follow a convention of their own is named under the report of a
    model that has it (a type's default config), and only there."""
    from calc import counting
    from calc.hf import spec_from_hf_config

    expected = getattr(counting, sentence)
    assert expected in calc.estimate(spec_from_hf_config({"model_type": model_type})).conventions
    assert expected not in calc.estimate("llama2-7b").conventions


def test_projected_sinks_bring_their_own_sentence():
    """Inkling 2's sink_proj (attention.sink_proj) names its convention; learned sinks do not."""
    from calc import counting

    spec = calc.ModelSpec(name="sinks", vocab_size=11, d_model=16, n_layers=2,
                          context_length=16, attention={"n_heads": 4, "sinks": True},
                          ffn={"activation": "swiglu", "d_ff": 8},
                          position={"kind": "rope"})
    assert counting.SINK_PROJ not in calc.estimate(spec).conventions
    projected = spec.updated(**{"attention.sink_proj": True})
    assert counting.SINK_PROJ in calc.estimate(projected).conventions


def test_convolution_taps_bring_their_own_sentence():
    """Inkling 2's per-token taps (residual_conv_taps) name their convention; Inkling's static
    residual convolutions alone do not."""
    from calc import counting

    spec = calc.ModelSpec(name="taps", vocab_size=11, d_model=16, n_layers=2,
                          context_length=16, attention={"n_heads": 4},
                          ffn={"activation": "swiglu", "d_ff": 8}, norm={"kind": "rmsnorm"},
                          position={"kind": "none"}, residual_conv=4)
    assert counting.CONV_TAPS not in calc.estimate(spec).conventions
    tapped = spec.updated(residual_conv_taps=("global",))
    assert counting.CONV_TAPS in calc.estimate(tapped).conventions


def test_block_sparse_layers_bring_their_own_sentence():
    """MiniMax-M3's block-sparse layers name the blocks' convention, not DSA's top-k keys, and
    DSA's report keeps its own."""
    from calc import counting
    from calc.hf import spec_from_hf_config

    m3 = calc.estimate(spec_from_hf_config({
        "model_type": "minimax_m3_vl_text", "num_hidden_layers": 4,
        "layer_types": ["full_attention"] + ["minimax_m3_sparse"] * 3})).conventions
    assert counting.BLOCK_SPARSE_ATTENTION in m3 and counting.SPARSE_ATTENTION not in m3
    dsa = calc.estimate(spec_from_hf_config({"model_type": "deepseek_v32"})).conventions
    assert counting.BLOCK_SPARSE_ATTENTION not in dsa


def test_doge_s_product_key_experts_bring_their_sentence():
    """Doge's CDMoE (is_moe) is named under its report, not under the dense Doge's."""
    from calc import counting
    from calc.hf import spec_from_hf_config

    moe = calc.estimate(spec_from_hf_config({"model_type": "doge", "is_moe": True}))
    dense = calc.estimate(spec_from_hf_config({"model_type": "doge"}))
    assert counting.PRODUCT_KEYS in moe.conventions
    assert counting.PRODUCT_KEYS not in dense.conventions
