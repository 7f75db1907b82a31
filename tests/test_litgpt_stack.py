"""The litgpt stack (calc.spec.memory.STACKS['litgpt'], LITGPT_SOURCE): LitGPT's head built
apart from the embedding, and under QLoRA its 4-bit head, the inputs bitsandbytes 0.42's
MatMul4Bit keeps, the head's dequantised copies; and the published LitGPT rows priced with it
(calc.calibration.finetune)."""

from __future__ import annotations

import pytest

import calc
from calc.calibration.finetune import framework_of, run_options
from calc.presets import load_finetune_runs
from calc.spec.finetune import QUANTS

RUNS = load_finetune_runs()
# meta-llama/Llama-2-7b-hf config.json: V = 32,000, d = 4,096, d_ff = 11,008, 32 layers, MHA
V, D, D_FF, LAYERS = 32_000, 4_096, 11_008, 32
# meta-llama/Llama-3.2-1B config.json: V = 128,256, d = 2,048, tied embeddings
V_1B, D_1B = 128_256, 2_048
QLORA = dict(finetune="qlora", lora_rank=32, lora_targets="q,v", double_quant=False,
             seq_len=512, micro_batch=2, recompute="none", recipe="pure-bf16")


def _block(model: str, framework: str, **options):
    return calc.memory(model, framework=framework, **options).memory


def test_a_tied_model_keeps_a_second_head_under_litgpt():
    """litgpt/model.py builds lm_head and wte apart; fine-tuning refuses tie_embeddings."""
    full = dict(seq_len=512, micro_batch=1, recompute="none", recipe="pure-bf16",
                optimizer="adamw-bf16")
    lit, plain = _block("llama3.2-1b", "litgpt", **full), _block("llama3.2-1b", "fsdp", **full)
    # weights, gradients and bf16 AdamW states: 2 + 2 + 4 bytes a head weight
    held = [b.weights_bytes + b.gradients_bytes + b.optimizer_bytes for b in (lit, plain)]
    assert held[0] - held[1] == 8 * V_1B * D_1B
    # an untied model is held alike
    assert (_block("llama2-7b", "litgpt", **full).allocated_bytes
            == _block("llama2-7b", "fsdp", **full).allocated_bytes)


def test_qlora_stores_the_head_in_four_bits():
    lit, plain = _block("llama2-7b", "litgpt", **QLORA), _block("llama2-7b", "fsdp", **QLORA)
    # no double quantisation (Fabric's 'nf4': compress_statistics False): 4 bits and an fp32
    # constant per 64 weights
    nf4 = QUANTS["nf4"].bytes_per_weight(False)
    assert nf4 == 0.5625
    assert lit.frozen_bytes - plain.frozen_bytes == pytest.approx(-(2 - nf4) * V * D, abs=1)


def test_qlora_keeps_every_four_bit_projections_input():
    """bitsandbytes 0.42.0 MatMul4Bit: ctx.tensors = (A, B): with q,v adapters, W_O's input,
    the MLP's input and the down projection's input are kept too, as in full training."""
    lit, plain = _block("llama2-7b", "litgpt", **QLORA), _block("llama2-7b", "fsdp", **QLORA)
    tokens = 2 * 512
    layers = lit.activations["layers"] - plain.activations["layers"]
    assert layers == LAYERS * tokens * (D + D + D_FF) * 2
    assert lit.activations["output"] - plain.activations["output"] == tokens * 4 * D
    # LoRA keeps no extra input: the frozen bf16 projections are torch's own
    lora = {**QLORA, "finetune": "lora"}
    assert (_block("llama2-7b", "litgpt", **lora).activations
            == _block("llama2-7b", "fsdp", **lora).activations)


def test_qlora_dequantises_the_head_to_fp16_then_bf16():
    lit = _block("llama2-7b", "litgpt", **QLORA)
    assert lit.buffers["dequantised_weight"] == (2 + 2) * V * D
    assert _block("llama2-7b", "fsdp", **QLORA).buffers["dequantised_weight"] == 0
    lora = {**QLORA, "finetune": "lora"}
    assert _block("llama2-7b", "litgpt", **lora).buffers["dequantised_weight"] == 0


def test_only_litgpt_rows_take_the_litgpt_stack():
    for run in RUNS.values():
        assert (framework_of(run) == "litgpt") == (run.stack == "litgpt"), run.name


def test_litgpt_qlora_rows_run_bitsandbytes_paged_adamw():
    """litgpt/finetune/lora.py (00af8b0d) swaps in bnb.optim.PagedAdamW under
    BitsandbytesPrecision: fp32 states, paged; its LoRA rows keep torch's AdamW, bf16."""
    qlora, lora = RUNS["litgpt-llama2-7b-qlora-1xa10g"], RUNS["litgpt-llama2-7b-lora-1xa10g"]
    assert qlora.optimizer == "adamw"  # the row's own setting is left as recorded
    assert (run_options(qlora)["optimizer"], run_options(qlora)["paged"]) == ("adamw", True)
    assert (run_options(lora)["optimizer"], run_options(lora)["paged"]) == ("adamw-bf16", False)
    assert run_options(qlora)["framework"] == "litgpt"


def test_litgpt_loss_keeps_16_bit_logits_and_log_softmax_and_one_chunks_gradients():
    from calc.spec.finetune import LITGPT_CHUNK_TOKENS, LOSS_BYTES, loss_gradient_bytes

    assert LOSS_BYTES["litgpt"] == 2 + 2
    assert loss_gradient_bytes("litgpt", 512) == (2 + 2) * LITGPT_CHUNK_TOKENS / 512
    assert loss_gradient_bytes("litgpt", 100) == 2 + 2  # one chunk is the whole sequence
    assert loss_gradient_bytes("fp32", 512) == 4
    lora = {**QLORA, "finetune": "lora", "micro_batch": 1}
    litgpt = _block("llama2-7b", "litgpt", **lora, loss="litgpt")
    fp32 = _block("llama2-7b", "litgpt", **lora, loss="fp32")
    # 4 B a logit held either way: fp32's one copy, litgpt's bf16 logits and log-softmax
    assert fp32.activations["output"] == litgpt.activations["output"]
    assert fp32.buffers["logits_gradient"] == 4 * 512 * V
    assert litgpt.buffers["logits_gradient"] == 4 * 128 * V


def test_cross_entropy_of_a_16_bit_chunk_saves_its_16_bit_log_softmax_only():
    """What LOSS_BYTES['litgpt'] stands on: F.cross_entropy of a bf16 chunk (litgpt/utils.py
    chunked_cross_entropy, no upcast) saves the bf16 log-softmax output, no fp32 copy; the
    chunk's logits stay alive in fit()'s list."""
    torch = pytest.importorskip("torch")
    logits = torch.randn(2 * 128, 64, dtype=torch.bfloat16, requires_grad=True)
    targets = torch.randint(0, 64, (2 * 128,))
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        torch.nn.functional.cross_entropy(logits, targets, reduction="none")
    # log_softmax keeps its output and nll_loss its input: one storage
    floats = {t.untyped_storage().data_ptr(): t.dtype for t in saved
              if t.is_floating_point() and t.numel() == logits.numel()}
    assert list(floats.values()) == [torch.bfloat16]
    assert logits.untyped_storage().data_ptr() not in floats
    assert not any(t.dtype == torch.float32 and t.numel() == logits.numel() for t in saved)


def test_litgpt_lora_rows_take_its_loss_and_its_full_rows_list_theirs_unmodelled():
    from calc.calibration.finetune import unmodelled

    qlora, full = RUNS["litgpt-llama2-7b-qlora-1xa10g"], RUNS["litgpt-tinyllama-1.1b-full-1xa10g"]
    assert run_options(qlora)["loss"] == "litgpt" and "litgpt's loss" not in unmodelled(qlora)
    assert run_options(full)["loss"] == "fp32" and "litgpt's loss" in unmodelled(full)
