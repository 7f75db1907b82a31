"""Training memory per GPU against the published examples: ZeRO's 7.5B on 64 GPUs, Megatron-LM's
bytes-per-parameter table, Korthikanti et al. 2022's per-layer activation formulas."""

from __future__ import annotations

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import calc
from calc import _compiled
from calc.evaluate import memory_values
from calc.formulas import memory as M
from calc.spec import TrainingMemory
from calc.spec.layout import PAPER_2022
from calc.symbols import SYMBOLS
from tests.draws import examples
from tests.strategies import model_specs

LLAMA2_7B = calc.load_preset("llama2-7b").spec
GPT3_175B = calc.load_preset("gpt3-175b").spec


def _states(params: float, **options) -> dict[str, float]:
    """Model states of `params` parameters with no embedding split off, as calc maps options."""
    opts = TrainingMemory(**options).model_copy(update={"seq_len": 1})
    opts = opts.model_copy(update={"recipe": opts.recipe_name})
    s = memory_values(LLAMA2_7B, opts) | {"N": params, "N_emb": 0, "N_head": 0}
    return _compiled.memory_states(s)


@pytest.mark.parametrize("zero, gb", [(0, 120), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_7_5b_on_64_gpus(zero, gb):
    """Rajbhandari et al. 2020 (ZeRO) Fig. 1: Ψ = 7.5B, N_d = 64, K = 12 → 120 / 31.4 / 16.6 /
    1.9 GB per GPU. The paper's GB is 1e9 bytes: in GiB stage 1 would read 29.25."""
    s = _states(7.5e9, zero=zero, dp=64, framework="deepspeed")  # the ZeRO paper's recipe
    total = s["weights"] + s["gradients"] + s["optimizer"]
    assert round(total / 1e9, 1) == gb
    if zero == 1:
        assert total == 4 * 7.5e9 + 12 * 7.5e9 / 64 == 31.40625e9
        assert round(total / 2**30, 2) == 29.25  # not the paper's 31.4: GB here is 1e9


@pytest.mark.parametrize("recipe, plain, distributed", [
    ("mixed-fp32-grad-copy", 20, (4, 16)),  # "fp16 param, fp16 grads"
    ("mixed-fp32-grads", 18, (6, 12)),  # "bf16 param, fp32 grads"
    ("fp32", 16, (8, 8)),  # "fp32 param, fp32 grads"
])
def test_megatron_distributed_optimizer_table(recipe, plain, distributed):
    """Megatron-LM README, 'Distributed Optimizer': bytes per parameter without and with the
    distributed optimizer (ZeRO stage 1), d = data-parallel size."""
    dtype = "fp32" if recipe == "fp32" else "bf16"
    assert sum(_states(1, recipe=recipe, dtype=dtype).values()) - 1 == plain  # minus Ψ = 1
    s = _states(1, recipe=recipe, dtype=dtype, zero=1, dp=8)
    fixed, sharded = distributed
    assert s["weights"] + s["gradients"] + s["optimizer"] == fixed + sharded / 8


@pytest.mark.parametrize("optimizer, per_param", [("adamw", 16), ("adam8bit", 10), ("sgd", 12)])
def test_optimizer_states_hf_docs(optimizer, per_param):
    """HF Transformers model_memory_anatomy: AdamW 8, 8-bit AdamW 2, SGD with momentum 4 bytes,
    on top of 2 + 2 + 4 (ZeRO's mixed precision)."""
    s = _states(1, optimizer=optimizer, recipe="mixed")
    assert s["weights"] + s["gradients"] + s["optimizer"] == per_param


# Korthikanti et al. 2022 §4 and Table 2, per layer (s sequence, b micro-batch, h hidden size,
# a heads, t tensor-parallel size), 16-bit activations.
s_, b_, h_, a_, t_ = sympy.symbols("s b h a t", positive=True)
KORTHIKANTI = {  # the paper's setting: eager attention, dropout (PAPER_2022)
    "none": (dict(tp=1, **PAPER_2022), s_ * b_ * h_ * (34 + 5 * a_ * s_ / h_)),
    "tensor": (dict(tp=8, **PAPER_2022),
               s_ * b_ * h_ * (10 + 24 / t_ + 5 * a_ * s_ / (h_ * t_))),
    "tensor+sequence": (dict(tp=8, sequence_parallel=True, **PAPER_2022),
                        s_ * b_ * h_ / t_ * (34 + 5 * a_ * s_ / h_)),
    "tensor+sequence+selective": (dict(tp=8, sequence_parallel=True, recompute="selective",
                                       **PAPER_2022), 34 * s_ * b_ * h_ / t_),
    "full recompute": (dict(recompute="full", **PAPER_2022), 2 * s_ * b_ * h_),
}


@pytest.mark.parametrize("case", KORTHIKANTI)
def test_korthikanti_per_layer_symbolically(case):
    """The general per-layer expression, at the paper's GPT layer (4h GeLU MLP, MHA, two
    LayerNorms, dropout, 2-byte activations), is the paper's formula exactly."""
    options, expected = KORTHIKANTI[case]
    opts = TrainingMemory(**options)
    S = SYMBOLS
    gpt = {S["i_glu"]: 0, S["d_ff"]: 4 * S["d"], S["h_kv"]: S["h"], S["h_t"]: S["h"] / opts.tp,
           S["d_qk"]: S["d"] / S["h"], S["i_gate"]: 0,
           S["d_v"]: S["d"] / S["h"], S["n_norm"]: 2, S["i_mla"]: 0, S["i_dsa"]: 0, S["q_a"]: 2,
           S["i_diff"]: 0, S["i_hc"]: 0, S["n_hc"]: 0, S["i_hcm"]: 0,
           S["i_hg"]: 0, S["r_hc"]: 0,
           S["i_au"]: 0, S["n_au"]: 0,  # no AltUp streams
           S["i_qlora"]: 0, S["i_og"]: 0,  # no query latent; W_O one matrix
           S["d_rl"]: 0, S["k_rc"]: 0,  # no relative bias or residual convolutions
           S["q_l"]: 2, S["q_lo"]: 2, S["i_rnu"]: 0, S["i_swr"]: 0, S["i_hf"]: 0,
           S["i_drop"]: int(opts.dropout), S["n_tp"]: opts.tp,
           S["i_sp"]: int(opts.sequence_parallel),
           S["i_scores"]: int(opts.recompute == "none" and not opts.flash_attention),
           S["i_full"]: int(opts.recompute == "full"), S["n_cp"]: 1,
           # full training: every projection's input is kept for its weight gradient
           **{S[f"i_keep_{x}"]: 1 for x in ("qkv", "o", "up", "down", "head")}}
    ours = M.ACTIVATIONS_PER_LAYER.subs(gpt).subs({S["T"]: s_, S["b"]: b_, S["d"]: h_,
                                                   S["h"]: a_})
    assert sympy.simplify(ours - expected.subs(t_, opts.tp)) == 0


@pytest.mark.parametrize("case", KORTHIKANTI)
def test_korthikanti_per_layer_gpt3_175b(case):
    """The same, through calc.memory on GPT-3 175B (h 12,288, a 96, s 2,048), whose layer is the
    paper's; biases do not store activations."""
    options, expected = KORTHIKANTI[case]
    report = calc.memory("gpt3-175b", micro_batch=1, **options)
    value = expected.subs({s_: 2048, b_: 1, h_: 12_288, a_: 96, t_: options.get("tp", 1)})
    assert report.memory.activations_per_layer_bytes == int(value)


def test_activations_scale_with_layers_and_micro_batch():
    one = calc.memory("gpt3-175b", micro_batch=1, **PAPER_2022).memory
    four = calc.memory("gpt3-175b", micro_batch=4, **PAPER_2022).memory
    assert one.activations["layers"] == 96 * one.activations_per_layer_bytes
    assert four.activations_bytes == 4 * one.activations_bytes
    assert four.weights_bytes == one.weights_bytes


def test_flash_attention_equals_selective_in_memory():
    flash = calc.memory("llama2-7b", flash_attention=True).memory.activations_bytes
    selective = calc.memory("llama2-7b", recompute="selective",
                            flash_attention=False).memory.activations_bytes
    eager = calc.memory("llama2-7b", flash_attention=False).memory.activations_bytes
    assert flash == selective < eager


def test_pipeline_most_loaded_stage():
    """Megatron-LM: the first stage holds 1/p of the layers plus the embedding, split t ways."""
    counts = calc.count_params(LLAMA2_7B)
    head = counts.components["lm_head"]
    m = calc.memory("llama2-7b", pp=4, tp=2).memory
    layers = counts.total - counts.embedding - head
    assert m.params_per_gpu == (layers / 4 + counts.embedding) / 2
    assert m.weights_bytes == 2 * m.params_per_gpu


@pytest.mark.parametrize("model, options", [
    ("llama2-7b", dict(gpu="a100", zero=3, dp=8, flash_attention=True)),
    ("gpt3-175b", dict(gpu="h100", zero=1, dp=64, tp=8, pp=8, sequence_parallel=True,
                       recompute="selective")),
    ("mixtral-8x7b", dict(gpu="h200", zero=2, dp=16, tp=4, recompute="full")),
    # DeepSeek's own stack ('other'): Megatron-LM refuses 61 layers over 16 stages
    ("deepseek-v3", dict(gpu="b200", zero=3, dp=1024, tp=8, pp=16, flash_attention=True,
                         framework="other")),
])
def test_largest_micro_batch_is_the_largest_that_fits(model, options):
    m = calc.memory(model, **options).memory
    assert m.max_micro_batch >= 1
    fits = calc.memory(model, micro_batch=m.max_micro_batch, **options).memory
    over = calc.memory(model, micro_batch=m.max_micro_batch + 1, **options).memory
    assert fits.fits and fits.total_bytes <= fits.gpu_bytes
    assert not over.fits and over.total_bytes > over.gpu_bytes


def test_a_model_that_does_not_fit_says_so():
    m = calc.memory("llama3.1-405b", gpu="a100").memory
    assert m.fits is False and m.max_micro_batch == 0 and m.headroom_bytes < 0
    assert m.total_bytes > 16 * 405e9


@pytest.mark.parametrize("dp, seq_len", [(1, 1), (100_000, 1), (100_000, 1_000_000)])
def test_extreme_inputs_stay_finite(dp, seq_len):
    m = calc.memory("llama3-8b", gpu="h100", zero=3, dp=dp, seq_len=seq_len,
                    flash_attention=True).memory
    assert 0 < m.total_bytes < float("inf") and m.max_micro_batch >= 0


def test_without_a_gpu_there_is_no_verdict():
    m = calc.memory("gpt2").memory
    assert m.gpu is None and m.fits is None and m.max_micro_batch is None


@pytest.mark.parametrize("model, options, message", [
    ("llama2-7b", dict(recipe="fp32"), "recipe='fp32' does not go with dtype='bf16'"),
    ("llama2-7b", dict(dtype="fp32", recipe="mixed"), "recipe='mixed'"),
    ("llama2-7b", dict(tp=3), "tp=3 does not divide the 32 attention heads of llama2-7b: "
                              "megatron refuses it"),
    ("llama2-7b", dict(pp=33), "pp × vpp = 33 × 1 does not divide the 32 layers"),
    ("llama2-7b", dict(pp=33, framework="other"), "pp=33 exceeds n_layers=32"),
    ("llama2-7b", dict(zero=4), "zero"),
    ("llama2-7b", dict(dp=0), "dp"),
    ("gpt2", dict(seq_len=4096), "learned position table of 1024"),
    ("llama2-7b", dict(gpu="a1000"), "did you mean a100"),
])
def test_bad_options_name_the_field(model, options, message):
    with pytest.raises(calc.CalcError) as error:
        calc.memory(model, **options)
    assert message in str(error.value)


@settings(max_examples=examples(40), deadline=None)
@given(spec=model_specs(), seq_len=st.integers(1, 64), micro_batch=st.integers(1, 4),
       zero=st.sampled_from([0, 1, 2, 3]), tp=st.sampled_from([1, 2, 4]),
       recompute=st.sampled_from(["none", "selective", "full"]), sp=st.booleans(),
       dropout=st.booleans())
def test_compiled_memory_equals_sympy(spec, seq_len, micro_batch, zero, tp, recompute, sp,
                                      dropout):
    """The compiled functions against sympy's own substitution, on random specs and options."""
    opts = TrainingMemory(seq_len=seq_len, micro_batch=micro_batch, zero=zero, dp=4, tp=tp,
                          recompute=recompute, sequence_parallel=sp, dropout=dropout)
    opts = opts.model_copy(update={"recipe": opts.recipe_name})
    values = memory_values(spec, opts, calc.get_gpu("a100").memory_gib)
    subs = {SYMBOLS[k]: v for k, v in values.items()}
    for group, exprs in (("memory_states", M.MODEL_STATES),
                         ("memory_activations", M.ACTIVATIONS), ("memory", M.MEMORY)):
        compiled = getattr(_compiled, group)(values)
        for key, expr in exprs.items():
            assert compiled[key] == pytest.approx(float(expr.xreplace(subs)), rel=1e-12), key


# ---- issue 12: defaults, what does not fit, the most loaded GPU -------------------------------
def _cells(report) -> list[str]:
    """Every text cell the report prints, unwrapped."""
    from calc.views import view

    return [cell for table in view(report).tables for row in table.rows for cell in row
            if isinstance(cell, str)]


def test_defaults_are_current_training(cli):
    """Flash attention and no dropout by default; the paper's setting one flag away, and the
    old flags still accepted."""
    default = calc.memory("llama2-70b", gpu="h100", zero=3, dp=64, recipe="mixed").memory
    assert default.options.flash_attention and not default.options.dropout
    # states + activations under the ZeRO paper's recipe: 542.7 GB per GPU under 2022's eager
    # attention with dropout; 107.8 GB today (buffers and margin apart)
    assert round((default.states_bytes + default.activations_bytes) / 1e9, 1) == 107.8
    paper = calc.memory("llama2-70b", gpu="h100", zero=3, dp=64, recipe="mixed",
                        **PAPER_2022).memory
    assert round((paper.states_bytes + paper.activations_bytes) / 1e9, 1) == 542.7
    base = ("memory", "llama2-70b", "--gpu", "h100", "--zero", "3", "--dp", "64",
            "--recipe", "mixed", "--format", "json")
    total = [cli(*base, *flags).json()["memory"]["total_bytes"] for flags in (
        [], ["--flash-attention", "--no-dropout"], ["--paper-2022"],
        ["--no-flash-attention", "--dropout"], ["--paper-2022", "--flash-attention"])]
    assert total[0] == total[1] == default.total_bytes
    assert total[2] == total[3] == paper.total_bytes
    flash_dropout = calc.memory("llama2-70b", gpu="h100", zero=3, dp=64, dropout=True,
                                recipe="mixed")
    assert total[4] == flash_dropout.memory.total_bytes  # an explicit flag beats the switch


def test_it_says_what_does_not_fit_and_what_would():
    """Issue 12: 'model states alone do not fit' when 17 GB of states fit and one micro-batch of
    activations (90.6 GB) did not."""
    m = calc.memory("llama2-70b", gpu="h100", zero=3, dp=64, recipe="mixed").memory
    assert m.short == "activations" and round(m.states_bytes / 1e9, 1) == 17.2
    assert round(m.activations_bytes / 1e9, 1) == 90.6 and m.max_micro_batch == 0
    cells = _cells(calc.memory("llama2-70b", gpu="h100", zero=3, dp=64))
    assert not any("model states alone" in cell for cell in cells)
    assert any("one micro-batch of activations (84.4 GiB) does not" in cell for cell in cells)
    assert "--recompute full" in cells and "--tp 2" in cells
    options = dict(gpu="h100", zero=3, dp=64, recipe="mixed")
    for fix in m.fixes:
        assert calc.memory("llama2-70b", **options, **fix.changes).memory.fits
    assert {tuple(f.changes.items()) for f in m.fixes} >= {(("recompute", "full"),),
                                                            (("tp", 2),)}
    assert not calc.memory("llama2-70b", **options, recompute="selective").memory.fits
    states = calc.memory("llama3.1-405b", gpu="a100").memory
    assert states.short == "model states" and states.states_bytes > states.gpu_bytes
    cells = _cells(calc.memory("llama3.1-405b", gpu="a100"))
    assert any("the model states alone" in cell for cell in cells)
    assert calc.memory("gpt2", gpu="h100").memory.short is None


def test_zero_3_over_more_ranks_is_offered_for_states():
    m = calc.memory("llama2-70b", gpu="h100", recompute="full").memory
    assert m.short == "model states"
    fix = next(f for f in m.fixes if set(f.changes) == {"zero", "dp"})
    assert calc.memory("llama2-70b", gpu="h100", recompute="full", **fix.changes).memory.fits
    smaller = {"zero": 3, "dp": fix.changes["dp"] // 2}
    assert not calc.memory("llama2-70b", gpu="h100", recompute="full", **smaller).memory.fits


def test_uneven_pipeline_holds_whole_layers():
    """Issue 12: pp 3 on 32 layers: the most loaded GPU holds the 11-layer stage, not 10⅔."""
    counts = calc.count_params(LLAMA2_7B)
    head = counts.components["lm_head"]
    layers = counts.total - counts.embedding - head
    m = calc.memory("llama2-7b", pp=3, framework="other").memory  # Megatron-LM refuses it
    assert m.stage_layers == 11
    assert m.params_per_gpu == pytest.approx(layers * 11 / 32 + counts.embedding, rel=1e-15)
    one = calc.memory("llama2-7b", framework="other").memory
    # 3 micro-batches in flight through 11 layers: 33 layers' worth, not 32
    assert m.activations["layers"] == pytest.approx(one.activations["layers"] * 33 / 32,
                                                    rel=1e-12)


def test_kv_heads_are_replicated_when_tp_exceeds_them():
    """Issue 12: tp 16 on Llama 2 70B's 8 KV heads: each rank holds one whole head."""
    spec = calc.load_preset("llama2-70b").spec
    counts = calc.count_params(spec)
    even = (counts.total - counts.embedding - counts.components["lm_head"]
            + counts.embedding + counts.components["lm_head"]) / 16
    m16 = calc.memory("llama2-70b", tp=16).memory
    width = spec.head_dim_qk + spec.head_dim_v
    extra = 80 * (1 - 8 / 16) * width * spec.d_model  # K, V weights beyond 1/16 of 8 heads
    assert m16.params_per_gpu == pytest.approx(even + extra, rel=1e-12)
    m8 = calc.memory("llama2-70b", tp=8).memory
    assert m8.params_per_gpu == pytest.approx(counts.total / 8, rel=1e-12)
    assert "replicated t/8 = 2 times" in " ".join(calc.memory("llama2-70b",
                                                             tp=16).conventions)


def test_tp_must_split_or_replicate_whole_kv_heads():
    spec = calc.ModelSpec(name="six-kv", vocab_size=1000, d_model=768, n_layers=2,
                          context_length=128, attention={"n_heads": 48, "n_kv_heads": 6},
                          ffn={"activation": "swiglu", "d_ff": 2048},
                          norm={"kind": "rmsnorm"}, position={"kind": "rope"})
    with pytest.raises(calc.CalcError, match="tp=4 and the 6 KV groups of six-kv"):
        calc.memory(spec, tp=4)
    assert calc.memory(spec, tp=12).memory.kv_heads == 6


@pytest.mark.parametrize("model", ["llama2-70b", "starcoderbase-15.5b"])
def test_the_layout_search_prices_memory_as_calc_memory_does(model):
    """The search's memory of a layout is calc.memory's for the same options, also where the
    most loaded GPU's share depends on the layout: a pipeline (⌈L/p⌉ layers) and tp beyond the
    KV heads (StarCoderBase's one KV head, replicated). A search that kept one layout's share
    for all put every pp > 1 layout of Llama 2 70B at p times its activations."""
    from calc.plan.search import search_layouts

    spec = calc.load_preset(model).spec
    setup, found = search_layouts(spec, gpu="a100", gpus=64, global_batch=64, dropout=False)
    candidates = [c for c in found.ranked + found.rejected
                  if c.layout.pp > 1 or c.layout.tp > spec.n_kv_heads]
    assert any(c.layout.pp > 1 for c in candidates)
    assert model == "llama2-70b" or any(c.layout.tp > 1 for c in candidates)
    for candidate in candidates[::max(1, len(candidates) // 30)]:
        o = candidate.layout
        own = calc.memory(spec, gpu="a100", seq_len=setup.seq_len, tp=o.tp, pp=o.pp, dp=o.dp,
                          cp=o.cp, ep=o.ep, vpp=o.vpp, micro_batch=o.micro_batch,
                          split_embedding_loss=o.split_embedding_loss,
                          recompute=o.recompute, zero=o.zero,
                          sequence_parallel=o.sequence_parallel,
                          flash_attention=o.flash_attention, dropout=o.dropout).memory
        assert candidate.memory_bytes == pytest.approx(own.total_bytes, rel=1e-9), o


def test_a_long_context_is_made_to_fit_by_context_parallelism():
    """At 131,072 tokens Llama 3 8B's activations do not fit an H100; splitting the sequence
    (cp) is the change that does, and the smallest such cp is offered."""
    options = dict(gpu="h100", seq_len=131_072, zero=3, dp=64)
    m = calc.memory("llama3-8b", **options).memory
    assert m.short == "activations"
    fix = next(f for f in m.fixes if set(f.changes) == {"cp"})
    assert calc.memory("llama3-8b", **options, **fix.changes).memory.fits
    assert not calc.memory("llama3-8b", **options, cp=fix.changes["cp"] // 2).memory.fits


def test_per_layer_embeddings_table_has_states_on_the_first_stage():
    """Gemma 4 E2B (tests/data/hf_configs/gemma-4-e2b.json): its per-layer table (262,144 ×
    35·256) is an embedding: weights, gradients and optimizer states on the stage that holds
    the token embedding (the first), none of it on the layers' mean share. Two stages:
    the first GPU's parameters are the embeddings, tied head included, plus its 18 layers'
    share (ceil(35/2)) of the rest."""
    from calc.hf import spec_from_hf_config
    from tests.hf_released import CONFIGS

    spec = spec_from_hf_config(CONFIGS / "gemma-4-e2b.json")
    counts = calc.count_params(spec)
    table = counts.components["per_layer_embeddings/table"]
    assert table == 262_144 * 35 * 256
    assert counts.embedding == 262_144 * 1536 + table
    opts = TrainingMemory(pp=2, seq_len=64).model_copy(update={"recipe": "mixed-fp32-grads"})
    states = _compiled.memory_states(memory_values(spec, opts))
    rest = counts.total - counts.embedding  # the head is tied
    assert states["params_per_gpu"] == counts.embedding + rest * 18 / 35


def test_zaya_parts_keep_what_calc_s_convention_says():
    """ZAYA1's kept tensors beside a GQA + MoE layer's (calc.formulas.memory, not measured):
    the biased residual and branch at both adds (2·2·d), CCA's conv and norm inputs with a norm
    per head and the normed keys (3·C + h + h_kv + h_kv·d_h), the router's 7·r, and the
    embedding's biased copy (d), per token at 2 bytes, one micro-batch, no recomputation."""
    spec = calc.spec_from_hf_config("tests/data/hf_configs/zaya1-8b.json")
    plain = spec.updated(**{"attention.cca": None, "moe.router_mlp": None,
                            "residual_scales": None, "attention.v_head_dim": None})
    t = 256
    options = dict(micro_batch=1, seq_len=t, recompute="none", flash_attention=True)
    ours, theirs = (calc.memory(s, **options).memory.activations for s in (spec, plain))
    d, r, layers, (h, kv, width) = 2048, 256, 40, (8, 2, 128)
    channels = (h + kv) * width
    per_layer = 2 * 2 * d + 3 * channels + h + kv + kv * width + 7 * r
    assert ours["layers"] - theirs["layers"] == t * layers * per_layer * 2
    assert ours["embedding"] - theirs["embedding"] == t * d * 2
