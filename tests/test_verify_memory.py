"""verify --memory: what transformers' model keeps for the backward against calc's activation
bytes under --framework hf, exact for the types whose modules calc's accounting reads."""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")
pytest.importorskip("transformers")

from calc.errors import CalcError
from calc.hf import spec_from_hf_config
from calc.presets import load_model
from calc.reports.memory_check import verify_memory
from tests.draws import examples

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
TINY = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100,
        "pad_token_id": None}
# Released configs whose types run transformers' Llama-style modules (RMSNorm, RoPE, gated MLP,
# grouped-query attention; Qwen 3 and EXAONE 4 with QK-norms, SmolLM3 with layers without
# RoPE, LLaVA's language model): calc's hf accounting must equal them, tensor for tensor.
EXACT = ("llama-3.1-8b", "mistral-7b-v0.1", "qwen2.5-3b", "qwen3-4b", "smollm3-3b",
         "granite-3.3-8b-instruct", "exaone-4.0-32b", "internlm3-8b-instruct",
         "llava-1.5-7b-hf")


def tiny(name: str, **sizes: int) -> dict:
    """A released config at TINY's sizes (`sizes` over them), its per-layer lists cut to the
    layers kept."""
    config = json.loads((CONFIGS / f"{name}.json").read_text())
    text = config.get("text_config", config)
    layers = text.get("num_hidden_layers")
    text.update(TINY, **sizes)
    for key, value in list(text.items()):
        if isinstance(value, list) and len(value) == layers:
            text[key] = value[:text["num_hidden_layers"]]
    return config


def inexact(report) -> list[tuple]:
    return [(c.attention, c.recompute, c.part, c.saved_bytes, c.calc_bytes)
            for c in report.memory_check if not c.exact]


@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize(("dtype", "batch"), [("bf16", 2), ("fp32", 1)])
def test_transformers_modules_keep_what_calc_counts(name, dtype, batch):
    """Every part of every run (eager, and SDPA as the flash kernel in 16 bits; each with and
    without checkpointed layers, whose checkpoints under eager also hold the float mask)
    equals calc's bytes."""
    config = tiny(name)
    report = verify_memory(spec_from_hf_config(config), config, 16, batch=batch, dtype=dtype,
                           adapters=False)  # the adapters: the test below
    assert inexact(report) == []
    runs = {(c.attention, c.recompute) for c in report.memory_check}
    assert len(runs) == (4 if dtype == "bf16" else 2)
    assert all(c.saved_bytes > 0 for c in report.memory_check if c.part == "layers")


@pytest.mark.parametrize("gate", [False, True])
def test_an_output_gate_keeps_both_factors_of_its_product(gate):
    """LFM3's attention on every layer, without sandwich norms, is Qwen 3's with a sigmoid gate
    of one value per head (g_proj): the product keeps the attention's output before the gate
    and the gate's values, and W_O's input is then the product, no longer flash's output
    (kept only where W_O or its adapter trains: LoRA q,v). Every run's layers equal calc's."""
    config = {"model_type": "lfm3", **TINY, "bos_token_id": None, "eos_token_id": None,
              "layer_types": ["full_attention"] * TINY["num_hidden_layers"],
              "use_sandwich_norm": False, "use_attention_gate": gate}
    report = verify_memory(spec_from_hf_config(config), config, 16, batch=2, qlora=False)
    layers = [c for c in report.memory_check if c.part == "layers"]
    assert len(layers) == (8 if find_spec("peft") else 4)
    assert [c for c in layers if not c.exact] == []


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen3-4b"])
def test_peft_adapters_keep_what_calc_counts(name):
    """PEFT's LoRA on q,v and on every projection, in every run: each fp32 adapter keeps its
    own fp32 copy of its input and its x·A, the frozen projections keep nothing, flash still
    keeps W_O's input."""
    pytest.importorskip("peft")
    config = tiny(name)
    report = verify_memory(spec_from_hf_config(config), config, 16, batch=2, qlora=False)
    finetunes = {c.finetune for c in report.memory_check}
    assert finetunes == {"full", "lora q,v", "lora all-linear"}
    assert inexact(report) == []
    layers = {c.finetune: c.saved_bytes for c in report.memory_check
              if c.part == "layers" and c.attention == "sdpa" and c.recompute == "none"}
    assert layers["lora q,v"] < layers["full"] < layers["lora all-linear"]


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kv=st.sampled_from([1, 2, 4]), groups=st.sampled_from([1, 3]),
       head_dim=st.sampled_from([8, 16, 32]), per_head=st.sampled_from([4, 8]),
       ffn=st.integers(8, 80), seq_len=st.integers(3, 40), batch=st.integers(1, 3),
       name=st.sampled_from(["llama-3.1-8b", "qwen3-4b"]))
def test_exact_on_random_shapes(kv, groups, head_dim, per_head, ffn, seq_len, batch, name):
    """Query heads in groups over the KV heads (repeat_kv copies them, except over a single KV
    head), head widths apart from d / h, any sequence and micro-batch: still exact."""
    heads = kv * groups
    config = tiny(name, num_key_value_heads=kv, num_attention_heads=heads, head_dim=head_dim,
                  hidden_size=heads * per_head, intermediate_size=ffn)
    report = verify_memory(spec_from_hf_config(config), config, seq_len, batch=batch,
                           adapters=False)
    assert inexact(report) == []


def test_differences_are_reported_not_hidden():
    """GPT-2's modules (LayerNorm, Conv1D, its own GELU, dropout) are not the ones calc's hf
    accounting reads: the check says so, part by part, and lists the tensors."""
    config = {**json.loads((CONFIGS / "gpt2.json").read_text()), "n_embd": 64, "n_head": 4,
              "n_layer": 2, "n_positions": 64, "vocab_size": 100}
    report = verify_memory(spec_from_hf_config(config), config, 16, qlora=False)
    assert not report.ok
    assert ("eager", "none", "layers") in {row[:3] for row in inexact(report)}
    assert {row.part for row in report.saved} >= {"layer 1", "output"}


def test_the_loss_keeps_the_fp32_log_softmax_and_a_scalar():
    """Llama 3.2 1B's loss: the fp32 log-softmax, 4 × V × tokens, and cross-entropy's total
    weight, one fp32 scalar; the int64 labels are left out."""
    preset = load_model("llama3.2-1b")
    report = verify_memory(preset.spec, preset.hf_config, seq_len=32, batch=2, adapters=False)
    loss = sorted(r.bytes for r in report.saved
                  if r.module == "(loss)" and (r.attention, r.recompute) == ("eager", "none"))
    assert loss == [4, 4 * 128_256 * 64]
    assert report.ok


def test_moe_layers_in_fp32_are_refused_in_one_line():
    preset = load_model("mixtral-8x7b")
    with pytest.raises(CalcError, match="compared in bf16 only"):
        verify_memory(preset.spec, preset.hf_config, seq_len=16, dtype="fp32")


MOE = {"num_local_experts": 8, "num_experts": 8, "num_experts_per_tok": 2,
       "moe_intermediate_size": 32}


def moe_tensors(name: str, device: str = "meta", seed: int = 0) -> list:
    """The floating-point tensors one MoE block (layer 1's mlp) of a tiny `name` keeps,
    2 × 16 tokens, 8 experts, top 2, bf16, as the memory verifier's runs build it."""
    import torch

    from calc.verify.memory import Run, count_saved

    torch.manual_seed(seed)  # on the CPU: the router's weights, and so the routing
    counted = count_saved(tiny(name, num_hidden_layers=2, **MOE), 2, 16,
                          Run("sdpa", "none"), "bf16", device)
    return sorted((t.scope.split(".mlp")[1], t.dtype, t.nbytes)
                  for t in counted.in_part("layer 1") if ".mlp" in t.scope)


def test_moe_experts_keep_tokens_times_top_k_rows_whatever_the_routing():
    """transformers' default grouped_mm experts (calc.verify.memory.EXPERTS) keep tensors of
    T·k rows: a seeded CPU model, routing its real values (two seeds, two routings), keeps
    what the meta device shows."""
    meta = moe_tensors("mixtral-8x7b-v0.1")
    assert moe_tensors("mixtral-8x7b-v0.1", "cpu", 0) == meta
    assert moe_tensors("mixtral-8x7b-v0.1", "cpu", 1) == meta


@pytest.mark.parametrize(("name", "d_e", "weights", "renormalised"), [
    ("mixtral-8x7b-v0.1", 96, 4, True),  # experts as wide as intermediate_size; fp32 weights
    ("qwen3-30b-a3b", 32, 2, True),  # norm_topk_prob true; weights cast .to(logits' dtype)
    ("olmoe-1b-7b-0924", 96, 2, False)])  # norm_topk_prob false
def test_moe_blocks_keep_what_transformers_source_says(name, d_e, weights, renormalised):
    """Per MoE block, from transformers 5.24.0's source (the oracle calc's hf MoE terms are
    to meet; integrations/moe.py grouped_mm_experts_forward, _default_apply_gate and the
    types' TopKRouter.forward), T = 32 tokens, S = T·k = 64 assignments, E = 8, d = 64, bf16:
    the router's input and fp32 softmax; where renormalised its fp32 top-k and their sum; the
    gathered inputs (grouped_mm's), the gate-up output (SiLU's input, a 2·d_e view), SiLU's
    output and the product (the down grouped_mm's input), the expert outputs and the routing
    weights that multiply them."""
    T, S, E, d = 32, 64, 8, 64
    router = [(".gate", "bfloat16", T * d * 2), (".gate", "float32", T * E * 4)]
    if renormalised:
        router += [(".gate", "float32", T * 4), (".gate", "float32", T * 2 * 4)]
    experts = [(".experts", "bfloat16", S * d * 2),
               (".experts.act_fn", "bfloat16", S * 2 * d_e * 2),
               (".experts", "bfloat16", S * d_e * 2), (".experts", "bfloat16", S * d_e * 2),
               (".experts", "bfloat16", S * d * 2),
               (".experts", "float32" if weights == 4 else "bfloat16", S * weights)]
    assert moe_tensors(name) == sorted(router + experts)


def moe_report(name: str, adapters: bool):
    config = tiny(name, num_hidden_layers=2, **MOE, shared_expert_intermediate_size=48)
    return verify_memory(spec_from_hf_config(config), config, 16, batch=2, adapters=adapters,
                         qlora=False)


@pytest.mark.parametrize(("name", "adapters"), [("olmoe-1b-7b-0924", False),
                                                ("qwen1.5-moe-a2.7b", True)])
def test_moe_layers_keep_what_calc_counts(name, adapters):
    """OLMoE's router (softmax, no renormalised top-k, weights cast to bf16) and Qwen1.5-MoE's
    shared experts with their gate, LoRA on q,v and all-linear too: every run exact."""
    report = moe_report(name, adapters)
    assert inexact(report) == []
    assert len(report.memory_check) == 4 * (12 if adapters else 4)  # 3 parts and the total


@pytest.mark.parametrize(("name", "per_token"), [
    ("mixtral-8x7b-v0.1", 4 * 3 + 2 * 2),  # renormalised; weights left in fp32 (2 B more each)
    ("qwen3-30b-a3b", 4 * 3)])  # norm_topk_prob: renormalised, weights cast to bf16
def test_moe_routers_calc_leaves_out(name, per_token):
    """What calc's hf accounting leaves out (calc.formulas.memory, MLP_MOE_HF), and nothing
    else: the renormalised top-k's fp32 k values and their sum, 4·(k + 1) bytes a token, and
    Mixtral's fp32 routing weights, k·(4 - 2) bytes, in each of the 2 MoE layers at 32
    tokens; nothing with every layer checkpointed (each keeps its input alone)."""
    gap = 2 * 32 * per_token
    checks = moe_report(name, False).memory_check
    assert {(c.part, c.saved_bytes - c.calc_bytes) for c in checks if c.recompute == "none"
            } == {("layers", gap), ("embedding", 0), ("output", 0), ("total", gap)}
    assert all(c.exact for c in checks if c.recompute == "full")


def test_real_tensors_on_the_cpu_keep_the_same():
    """With real tensors (--device cpu) every run keeps what the meta device shows, SDPA
    through torch's CPU flash operator as through the GPU's on meta."""
    config = tiny("qwen3-4b")
    spec = spec_from_hf_config(config)
    cpu = verify_memory(spec, config, 16, batch=2, device="cpu", adapters=False)
    meta = verify_memory(spec, config, 16, batch=2, adapters=False)
    assert inexact(cpu) == []
    assert {(c.attention, c.recompute) for c in cpu.memory_check} == {
        ("eager", "none"), ("eager", "full"), ("sdpa", "none"), ("sdpa", "full")}
    assert [c.saved_bytes for c in cpu.memory_check] == [c.saved_bytes for c in meta.memory_check]


# QLoRA: transformers' model quantised by bitsandbytes on the CPU (calc.verify.memory.QLORA)
QLORA_CONFIG = {"num_hidden_layers": 2}


@pytest.fixture(scope="module")
def qlora_report():
    pytest.importorskip("peft")
    pytest.importorskip("bitsandbytes")
    config = tiny("llama-3.1-8b", **QLORA_CONFIG)
    return verify_memory(spec_from_hf_config(config), config, 16, batch=2)


def test_qlora_keeps_what_calc_counts(qlora_report):
    """bitsandbytes 0.50.2's 4-bit layers with PEFT's adapters on every projection, eager and
    SDPA, with and without checkpointed layers: every part equals calc's --finetune qlora
    under --framework hf, and a 4-bit projection keeps what a frozen 16-bit one keeps (the
    QLoRA rows equal the LoRA all-linear rows)."""
    rows = {(c.attention, c.recompute, c.part): c.saved_bytes for c in qlora_report.memory_check
            if c.finetune == "qlora all-linear"}
    assert {key[:2] for key in rows} == {("eager", "none"), ("eager", "full"),
                                         ("sdpa", "none"), ("sdpa", "full")}
    assert inexact(qlora_report) == []
    lora = {(c.attention, c.recompute, c.part): c.saved_bytes
            for c in qlora_report.memory_check if c.finetune == "lora all-linear"}
    assert rows == lora


def test_the_qlora_model_is_4_bit(tmp_path):
    """The compared model is bitsandbytes' nf4 (double-quantised, bf16 compute) in every
    projection, the LM head left at bf16, as transformers quantises it."""
    pytest.importorskip("bitsandbytes")
    import bitsandbytes as bnb
    import torch

    from calc.verify.memory import quantised_model

    model = quantised_model(tiny("llama-3.1-8b", **QLORA_CONFIG), "eager", str(tmp_path))
    quantised = [m for m in model.modules() if isinstance(m, bnb.nn.Linear4bit)]
    assert len(quantised) == 7 * QLORA_CONFIG["num_hidden_layers"]
    assert {m.weight.quant_type for m in quantised} == {"nf4"}
    assert all(m.weight.compress_statistics and m.compute_dtype == torch.bfloat16
               for m in quantised)
    assert not isinstance(model.lm_head, bnb.nn.Linear4bit)
    assert model.lm_head.weight.dtype == torch.bfloat16


def test_a_4_bit_layer_keeping_its_input_is_caught(tmp_path, monkeypatch):
    """bitsandbytes 0.42's MatMul4Bit also kept its input A (ctx.tensors = (A, B)): with that
    put back, every 4-bit projection's bf16 input is saved once more per storage (Q/K/V's
    shared norm output, W_O's input, up/gate's shared norm output, down's input) and the
    check fails by exactly those bytes, which calc's hf stack does not count."""
    pytest.importorskip("bitsandbytes")
    from bitsandbytes.autograd import _functions

    from calc.reports.memory_check import compare_run
    from calc.verify.memory import QLORA_TARGETS, Run, count_saved

    config = tiny("llama-3.1-8b", **QLORA_CONFIG)
    spec, run, batch, seq_len = spec_from_hf_config(config), Run("eager", "none",
                                                                 QLORA_TARGETS, True), 2, 16
    original = _functions.MatMul4Bit.forward

    def keeps_input(ctx, A, B, out=None, bias=None, quant_state=None):
        output = original(ctx, A, B, out, bias, quant_state)
        ctx.save_for_backward(A)
        return output

    monkeypatch.setattr(_functions.MatMul4Bit, "forward", staticmethod(keeps_input))
    counted = count_saved(config, batch, seq_len, run, checkpoint=str(tmp_path))
    checks = {c.part: c for c in compare_run(spec, run, counted, seq_len, batch, "bf16",
                                             8 * seq_len * batch, {})}
    d, d_o, d_ff = spec.d_model, spec.attention.n_heads * spec.head_dim_v, spec.ffn.d_ff
    extra = 2 * seq_len * batch * (d + d_o + d + d_ff) * spec.n_layers  # bf16 inputs
    assert checks["layers"].saved_bytes - checks["layers"].calc_bytes == extra
    assert not checks["total"].exact
    assert checks["output"].exact


@pytest.mark.parametrize(("kv", "groups", "head_dim", "seq_len", "batch", "dtype"), [
    (2, 1, 16, 16, 2, "bf16"), (2, 2, 16, 16, 2, "bf16"), (4, 2, 8, 7, 3, "fp32"),
    (2, 1, 8, 5, 1, "bf16")])
def test_differential_attention_keeps_what_calc_counts(kv, groups, head_dim, seq_len, batch,
                                                       dtype):
    """DiffLlama's two attention calls (shared Q and K, one per half of the values; their
    matmuls' own copies of Q and K over more than one sequence), the outputs side by side for
    λ's gradient, λ's exponentials and the head norm's fp32 input, in full training and (bf16)
    under PEFT's adapters, which freeze λ: every run exact."""
    config = {"model_type": "diffllama", **TINY, "num_key_value_heads": kv,
              "num_attention_heads": kv * groups, "head_dim": head_dim,
              "bos_token_id": None, "eos_token_id": None}
    report = verify_memory(spec_from_hf_config(config), config, seq_len, batch=batch,
                           dtype=dtype, qlora=False)
    assert inexact(report) == []


def test_a_norm_over_the_moe_output_keeps_what_calc_counts():
    """A.X-K1 is DeepSeek-V3 with post_mlp_layernorm on each MoE block (modeling_axk1.py):
    whatever calc's hf accounting leaves out of DeepSeek-V3's MLA and router, the axk1 model
    keeps that and exactly what calc adds for the norm (moe.output_norm: its RMSNorm's fp32
    input copy, reciprocal RMS and bf16 output), run for run."""
    base = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 100,
            "q_lora_rank": 16, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8,
            "v_head_dim": 16, "n_routed_experts": 4, "num_experts_per_tok": 2,
            "moe_intermediate_size": 32, "n_shared_experts": 1, "n_group": 1, "topk_group": 1,
            "first_k_dense_replace": 1, "pad_token_id": None, "bos_token_id": None,
            "eos_token_id": None}
    gaps, calc_bytes = {}, {}
    for model_type, extra in (("deepseek_v3", {"num_nextn_predict_layers": 0}), ("axk1", {})):
        config = {"model_type": model_type, **base, **extra}
        report = verify_memory(spec_from_hf_config(config), config, 16, batch=2, dtype="bf16",
                               adapters=False)
        gaps[model_type] = {(c.attention, c.recompute, c.part): c.saved_bytes - c.calc_bytes
                            for c in report.memory_check}
        calc_bytes[model_type] = {(c.attention, c.recompute, c.part): c.calc_bytes
                                  for c in report.memory_check}
    assert gaps["axk1"] == gaps["deepseek_v3"]
    # one MoE layer, 2 × 16 tokens: 4·d + 4 + 2·d bytes a token more without recomputation
    key = ("eager", "none", "layers")
    assert calc_bytes["axk1"][key] - calc_bytes["deepseek_v3"][key] == 32 * (6 * 64 + 4)


def test_the_latent_gate_and_gated_norms_keep_what_calc_counts():
    """A.X-K2 is DeepSeek-V3.2 with its output gate projected from the query latent
    (q_gate_proj) and gated pre-norms (modular_axk2.py): whatever calc's hf accounting leaves
    out of DeepSeek-V3.2's layers, the axk2 model keeps that and exactly what calc adds for the
    two features (the latent's second copy, the gate's attention output and fp32 sigmoid, each
    gated norm's y, SiLU input, fc2 input and fp32 sigmoid), run for run (full training: PEFT's
    q,v and all-linear are refused for MLA, so no LoRA run is made)."""
    base = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 100,
            "q_lora_rank": 16, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8,
            "v_head_dim": 16, "n_routed_experts": 4, "num_experts_per_tok": 2,
            "moe_intermediate_size": 32, "n_shared_experts": 1, "n_group": 1, "topk_group": 1,
            "first_k_dense_replace": 1, "index_n_heads": 2, "index_head_dim": 16,
            "index_topk": 8, "pad_token_id": None, "bos_token_id": None, "eos_token_id": None}
    gaps, calc_bytes = {}, {}
    for model_type, extra in (("deepseek_v32", {}), ("axk2", {"gated_norm_rank": 4})):
        config = {"model_type": model_type, **base, **extra}
        report = verify_memory(spec_from_hf_config(config), config, 16, batch=2, dtype="bf16",
                               adapters=False)
        gaps[model_type] = {(c.attention, c.recompute, c.finetune, c.part):
                            c.saved_bytes - c.calc_bytes for c in report.memory_check}
        calc_bytes[model_type] = {(c.attention, c.recompute, c.finetune, c.part): c.calc_bytes
                                  for c in report.memory_check}
    assert gaps["axk2"] == gaps["deepseek_v32"]
    # 2 × 16 tokens, without recomputation: per attention layer the latent's copy (16 × 2
    # bytes) and the gate's output before it and fp32 sigmoid (64 × 2 + 64 × 4); per gated
    # norm (3: two input norms, one MoE norm) y and the fp32 sigmoid (64 × (2 + 4)), the SiLU
    # input (4 × 2) and fc2's input (4 × 2)
    per_token = 2 * (32 + 64 * 6) + 3 * (64 * 6 + 8 + 8)
    for attention in ("eager", "sdpa"):
        key = (attention, "none", "full", "layers")
        assert calc_bytes["axk2"][key] - calc_bytes["deepseek_v32"][key] == 32 * per_token
