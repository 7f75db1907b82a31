"""LoRA and QLoRA: exact adapter counts, a frozen base's memory and a step's FLOPs, against the
papers' own figures (Hu et al. 2021; Dettmers et al. 2023), PEFT's published memory table, and
torch (adapters on the reference model, counted by numel and FlopCounterMode)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
import sympy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import calc
from calc.counting import FINETUNE_PASSES, GIB
from calc.errors import CalcError
from calc.evaluate import count_adapters, count_flops, finetune_train_flops
from calc.formulas import finetune as FT
from calc.formulas import memory as M
from calc.spec.finetune import QUANTS, FineTune, target_shapes
from calc.symbols import SYMBOLS
from tests.draws import examples, one_feature
from tests.strategies import model_specs

DATA = Path(__file__).parent / "data"
GPT3 = calc.load_preset("gpt3-175b").spec


def test_gpt3_rank_4_on_q_and_v():
    """Hu et al. 2021 §4.2: GPT-3 175B, r = 4 on W_q and W_v: 96 layers × 2 matrices ×
    r·(d + d) = 96·2·2·4·12288; the checkpoint "from 350GB to 35MB" at 16 bits."""
    counts = count_adapters(GPT3, FineTune(method="lora", rank=4, targets="q,v"))
    assert counts.trainable == 96 * 2 * 2 * 4 * 12288 == 18_874_368
    assert counts.by_target == {"lora/q": 9_437_184, "lora/v": 9_437_184}
    assert counts.frozen == calc.count_params(GPT3).total
    block = calc.memory("gpt3-175b", finetune="lora", lora_rank=4,
                        lora_targets="q,v").memory.finetune
    # 37.7 MB (36.0 MiB) against the paper's rounded "35MB": within 8 %
    assert block.checkpoint_bytes == 2 * 18_874_368
    assert block.checkpoint_bytes == pytest.approx(35e6, rel=0.08)


def test_gpt3_lora_vram_350gb():
    """Hu et al. 2021 §4.2: LoRA on GPT-3 175B needs 350 GB of VRAM (the 16-bit frozen weights;
    the paper does not give the batch). calc's model states: within 0.5 %."""
    m = calc.memory("gpt3-175b", finetune="lora", lora_rank=4, lora_targets="q,v").memory
    states = m.frozen_bytes + m.weights_bytes + m.gradients_bytes + m.optimizer_bytes
    assert m.frozen_bytes == 2 * calc.count_params(GPT3).total
    assert states == pytest.approx(350e9, rel=0.005)


def test_nf4_bits_per_weight():
    """Dettmers et al. 2023 §3: constants cost 32/64 = 0.5 bits per weight, 8/64 + 32/(64·256)
    = 0.127 with double quantisation."""
    nf4 = QUANTS["nf4"]
    assert 8 * nf4.bytes_per_weight(False) == Fraction(9, 2)
    assert 8 * nf4.bytes_per_weight(True) - 4 == Fraction(8, 64) + Fraction(32, 64 * 256)
    assert round(float(8 * nf4.bytes_per_weight(True) - 4), 3) == 0.127


def test_qlora_65b_on_one_48gb_gpu():
    """Dettmers et al. 2023 (abstract, §1): QLoRA fine-tunes a 65B model on one 48 GB GPU, with
    r = 64 adapters on every linear layer (§4, "QLoRA ... all linear layers"); gradient
    checkpointing on. calc: LLaMA 65B, sequence 512, micro-batch 1, full recomputation, on a
    48 GiB L40S: fits without paging; the frozen base is its projections at 4.127 bits and the
    rest at 16."""
    # recipe 'mixed' (16 bytes per trained parameter): the paper trained with transformers and
    # PEFT, not under Megatron-LM's default recipe with fp32 main gradients (issue 19)
    m = calc.memory("llama1-65b", gpu="l40s", finetune="qlora", lora_rank=64, recipe="mixed",
                    lora_targets="all-linear", seq_len=512, recompute="full").memory
    ft = m.finetune
    # the run's own bytes under the catalogue's 48 GiB of the L40S, and with the margin too;
    # counted as transformers' modules keep them (the fine-tuning default, --framework hf)
    assert m.options.framework == "hf"
    assert m.fits and m.allocated_bytes < 48 * GIB
    bits = QUANTS["nf4"].bytes_per_weight(True)
    assert m.frozen_bytes == pytest.approx(
        float(ft.quantised * bits + 2 * (ft.frozen - ft.quantised)), rel=1e-12)
    assert ft.trainable == 80 * 64 * (4 * 2 * 8192 + 3 * (8192 + 22016))


def test_peft_table_bloomz_7b1():
    """PEFT README, "High performance on consumer hardware": bigscience/bloomz-7b1 with
    PEFT-LoRA in plain PyTorch peaks at "32GB GPU" (torch.cuda.max_memory_allocated) in
    examples/causal_language_modeling/peft_lora_clm_accelerate_ds_zero3_offload.py: fp32
    weights (from_pretrained's default), r = 8 on query_key_value, batch 8, max_length 64, AdamW.
    calc within 10 % (separate q, k, v adapters; the peak also holds the logits' gradient)."""
    config = json.loads((DATA / "hf_configs" / "bloom-560m.json").read_text())
    # bigscience/bloom-7b1 (and bloomz-7b1) config.json: n_embed 4096, n_layer 30, 32 heads
    config.update(n_embed=4096, n_layer=30, num_attention_heads=32)
    spec = calc.spec_from_hf_config(config)
    assert calc.count_params(spec).total == 7_069_016_064  # the model card's count
    m = calc.memory(spec, finetune="lora", lora_rank=8, lora_targets="q,k,v", dtype="fp32",
                    micro_batch=8, seq_len=64, dropout=False).memory
    assert m.total_bytes == pytest.approx(32e9, rel=0.10)


def test_full_training_states_are_the_memory_formula():
    """With nothing frozen, calc.formulas.finetune's states are calc.formulas.memory's."""
    full = {SYMBOLS["i_frozen"]: 0}
    for key in ("weights", "gradients", "optimizer"):
        assert sympy.simplify(FT.STATES[key].subs(full) - M.MODEL_STATES[key]) == 0
    assert FT.STATES["frozen"].subs(full) == 0


def test_lora_drops_the_inputs_of_frozen_projections():
    """Korthikanti et al.'s 34·s·b·h per GPT-3 layer keeps the W_O input (2sbh), the MLP's up
    input (2sbh) and down input (8sbh) for weight gradients; with adapters on q and v only they
    go, and each adapter keeps x·A (2 bytes × r per token). Megatron-LM's accounting, as the
    paper's (a fine-tune's default stack is transformers')."""
    full = calc.memory("gpt3-175b", flash_attention=True, dropout=True).memory
    lora = calc.memory("gpt3-175b", flash_attention=True, dropout=True, finetune="lora",
                       lora_rank=4, lora_targets="q,v", seq_len=2048, recompute="none",
                       framework="megatron").memory
    s, h = 2048, 12288
    assert full.activations_per_layer_bytes == 34 * s * h
    assert lora.activations_per_layer_bytes == 22 * s * h
    assert lora.activations["adapters"] == 96 * s * 2 * 2 * 4


def test_a_finetune_defaults_to_the_sft_recipe_and_says_so():
    """--finetune without --seq-len, --recompute or --framework: TRL SFTConfig's 1024 tokens,
    gradient checkpointing on, transformers' models and their loss; given ones win."""
    report = calc.memory("gpt3-175b", finetune="lora")
    options = report.memory.options
    assert (options.seq_len, options.recompute, options.framework) == (1024, "full", "hf")
    assert report.memory.finetune.loss == "hf"
    assert any("TRL SFTConfig" in note for note in report.conventions)
    given = calc.memory("gpt3-175b", finetune="lora", seq_len=512, recompute="none",
                        framework="megatron")
    options = given.memory.options
    assert (options.seq_len, options.recompute, options.framework) == (512, "none", "megatron")
    assert given.memory.finetune.loss == "fp32"
    assert not any("TRL SFTConfig" in note for note in given.conventions)
    plain = calc.memory("gpt3-175b")  # pre-training keeps the model's context
    assert plain.memory.options.seq_len == 2048


def test_the_loss_holds_the_logits_as_the_stack_does():
    """q_L bytes per logit in the output activations: transformers' upcast 14, fp32 4."""
    hf = calc.memory("llama3.1-8b", seq_len=1024, loss="hf").memory.activations["output"]
    fp32 = calc.memory("llama3.1-8b", seq_len=1024).memory.activations["output"]
    fused = calc.memory("llama3.1-8b", seq_len=1024, loss="fused").memory.activations["output"]
    logits = 1024 * 128_256
    assert hf - fp32 == (14 - 4) * logits and fp32 - fused == 4 * logits


def test_step_flops_two_forwards_plus_adapters():
    """A frozen weight's backward is its input gradient only: step = 2 × weights + 3 ×
    (attention + adapters), against 3 × everything in full training."""
    ft = FineTune(method="lora", rank=4, targets="q,v")
    flops = count_flops(GPT3, 2048)
    attention = flops.components["attention/scores"]
    weights = flops.forward - attention
    adapters, train = finetune_train_flops(GPT3, 2048, "causal", ft, ("q", "v"))
    assert adapters == 2 * 18_874_368
    assert train == 2 * weights + 3 * (attention + adapters)
    assert 0.67 < train / flops.train < 0.68
    report = calc.estimate("gpt3-175b", finetune="lora", lora_rank=4, lora_targets="q,v",
                           tokens=1e9, gpu="a100")
    assert report.flops_per_token.train == train
    assert report.training.flops == pytest.approx(1e9 * train)
    assert FINETUNE_PASSES in report.conventions


@pytest.mark.parametrize("options, message", [
    (dict(finetune="lora", lora_rank=20_000), "lora_rank=20000 exceeds the 'q' projection"),
    (dict(finetune="lora", lora_targets="q,gate"), "has no 'gate' projection"),
    (dict(finetune="qlora", base_dtype="int8"), "QLoRA stores the frozen weights in 4 bits"),
    (dict(finetune="lora", base_dtype="nf4"), "only QLoRA stores the frozen weights"),
    (dict(finetune="lora", lora_targets="q,x"), "lora_targets"),
    (dict(finetune="full", lora_rank=8), "need finetune='lora' or 'qlora'"),
])
def test_bad_fine_tuning_input_is_one_line(options, message):
    with pytest.raises(calc.CalcError, match=message) as error:
        calc.memory("gpt3-175b", **options)
    assert "\n" not in str(error.value)


def test_mla_models_take_no_qkv_adapters():
    with pytest.raises(calc.CalcError, match="multi-head latent attention"):
        calc.memory("deepseek-v3", finetune="lora", lora_targets="all-linear")
    m = calc.memory("deepseek-v3", finetune="lora", lora_targets="o,down").memory
    assert m.finetune.adapters["lora/down"] > 0


def test_cli_flags(cli):
    result = cli("memory", "llama2-7b", "--finetune", "qlora", "--lora-rank", "16",
                 "--lora-targets", "all-linear", "--paged", "--gpu", "l4", "--format", "json")
    data = json.loads(result.out)["memory"]
    assert data["finetune"]["method"] == "qlora" and data["paged_bytes"] > 0
    assert data["finetune"]["targets"] == ["q", "k", "v", "o", "up", "gate", "down"]
    bad = cli("memory", "gpt3-175b", "--finetune", "qlora", "--base-dtype", "bf16")
    assert bad.code == 2 and "4 bits" in bad.err


# ---- torch: adapters on the reference model ----------------------------------------------------
@pytest.mark.parametrize("name, method, rank, targets", [
    ("gpt2", "lora", 4, "q,v"),
    ("pythia-160m", "lora", 8, "all-linear"),
    ("smollm3-3b", "qlora", 16, "k,o,gate,down"),
    ("mixtral-8x7b", "lora", 8, "q,k,v,o"),
])
def test_torch_counts_adapters_and_step_flops(name, method, rank, targets):
    """numel of the trainable and frozen parameters, and FlopCounterMode's forward and backward
    with every base weight frozen (full T×T attention, torch's count), exactly."""
    pytest.importorskip("torch")
    from calc.verify.finetune import count_finetune

    spec = calc.load_preset(name).spec
    ft = FineTune(method=method, rank=rank, targets=targets)
    torch_count = count_finetune(spec, ft, 16)
    ours = count_adapters(spec, ft)
    forward = count_flops(spec, 16, "full").forward
    adapters, train = finetune_train_flops(spec, 16, "full", ft, ours.targets)
    assert (torch_count.trainable, torch_count.frozen) == (ours.trainable, ours.frozen)
    assert torch_count.forward == 16 * (forward + adapters)
    assert torch_count.backward == 16 * (train - forward - adapters)


@settings(max_examples=examples(8), deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=model_specs(), rank=st.integers(1, 4), data=st.data())
def test_torch_random_specs(spec, rank, data):
    _check_adapters(spec, rank, data)


@one_feature
@given(spec=model_specs().filter(lambda s: s.loop is not None), rank=st.integers(1, 4),
       data=st.data())
def test_torch_random_looped_specs(spec, rank, data):
    """Looped layers (calc.spec.loop): an adapter once per stored layer, its products once per
    pass."""
    _check_adapters(spec, rank, data)


def _check_adapters(spec, rank, data):
    pytest.importorskip("torch")
    from calc.verify.finetune import count_finetune

    shapes = target_shapes(spec)
    # the reference model keeps the experts apart and Qwen3-Next's output gate beside W_Q
    # (transformers fuses it into q_proj: tests/test_finetune_mixers.py checks that); a
    # per-head gate is its own g_proj in both
    possible = [t for t in shapes
                if (spec.moe is None or t not in ("up", "gate", "down", "experts",
                                                  "shared_expert_gate"))
                and not (t == "q" and spec.attention.output_gate
                         and spec.attention.output_gate_per == "channel"
                         and not spec.attention.output_gate_own)
                # the reference model adapts the mLSTM's q, k, v beside plain attention only
                # (a gap of calc.verify.finetune: beside MLA, whose layers have none of them)
                and not (t in ("q", "k", "v") and spec.attention.mla is not None
                         and spec.layer_counts["mlstm"])]
    assume(possible)  # a drawn spec without one (hypothesis draws another, not a pass)
    targets = data.draw(st.lists(st.sampled_from(possible), min_size=1, unique=True))
    ft = FineTune(method="lora", rank=rank, targets=tuple(targets))
    try:
        ours = count_adapters(spec, ft)
    except calc.CalcError:  # r larger than a matrix of this small spec
        assume(False)
    torch_count = count_finetune(spec, ft, 8)
    forward = count_flops(spec, 8, "full").forward
    adapters, train = finetune_train_flops(spec, 8, "full", ft, ours.targets)
    assert torch_count.trainable == ours.trainable
    assert torch_count.forward == 8 * (forward + adapters)
    # FlopCounterMode sees no scan's backward; and no gradient reaches DSA's or CSA's indexer
    # through its top-k (calc.reports.verify leaves their products out of its backward check
    # too), while calc's training FLOPs count them trained
    att = spec.attention
    if (set(spec.mixer_kinds) == {"attention"} and att.indexer is None
            and att.compression is None):
        assert torch_count.backward == 8 * (train - forward - adapters)


def test_lora_on_a_mamba_model_adapts_its_projections():
    """Without attention, the default targets q,v are refused in one line; the Mamba mixer's
    own projections take adapters (exact against transformers: test_finetune_mixers.py)."""
    spec = calc.spec_from_hf_config("tests/data/hf_configs/mamba-130m-hf.json")
    with pytest.raises(calc.CalcError, match="has no 'q' projection"):
        count_adapters(spec, FineTune(method="lora", rank=8))
    counts = count_adapters(spec, FineTune(method="lora", rank=8, targets="all-linear"))
    assert counts.targets == ("in_proj", "x_proj", "dt_proj", "out_proj")
    assert count_adapters(spec, FineTune()).trainable == calc.count_params(spec).total


def test_transformers_stack_recomputes_whole_layers_only():
    """--framework hf checkpoints whole decoder layers: selective recomputation is refused in
    one line, and recompute auto goes from none to full."""
    with pytest.raises(CalcError, match="checkpoints whole layers"):
        calc.memory("llama3.2-1b", framework="hf", recompute="selective")
    report = calc.memory("llama3.1-8b", gpu="rtx4090", finetune="lora", seq_len=2048,
                         recompute="auto")
    assert report.memory.options.recompute == "full"
    assert any("recompute auto: full" in note for note in report.conventions)
