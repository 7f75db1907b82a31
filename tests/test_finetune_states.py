"""How a published fine-tune's optimizer states are priced: paged states off the GPU whatever
the method (calc.reports.finetune_runs.compare), and the hf stack's AdamW states in the dtype
the model was loaded in (calc.spec.memory.STACKS['hf'].states_like_parameters)."""

from __future__ import annotations

import pytest

import calc
from calc.calibration.finetune import run_options
from calc.evaluate import count_params
from calc.presets import load_finetune_runs
from calc.reports.finetune_runs import compare

RUNS = load_finetune_runs()
# recipes/configs/llama3_1/8B_full_single_device.yaml (torchtune 30b8519e8): PagedAdamW8bit
PAGED_FULL = "torchtune-llama3.1-8b-full-rtx4090"


def test_paged_states_of_a_full_fine_tune_are_off_the_gpu():
    run = RUNS[PAGED_FULL]
    options = run_options(run)
    assert run.method == "full" and options["paged"] is True
    block = calc.memory(run.model, **options).memory
    n = count_params(calc.load_preset(run.model).spec).total
    # 8-bit AdamW: 2 bytes a parameter, all of them paged
    assert block.paged_bytes == 2 * n
    assert compare(run).calc_memory_bytes == block.total_bytes - block.paged_bytes


def test_unpaged_rows_compare_their_whole_total():
    run = next(r for r in RUNS.values() if r.optimizer == "adamw" and r.peak_memory_bytes
               and r.seq_len and r.method == "full")
    assert run_options(run)["paged"] is False
    block = calc.memory(run.model, **run_options(run)).memory
    assert block.paged_bytes == 0 and compare(run).calc_memory_bytes == block.total_bytes


def test_torch_adamw_states_follow_a_bf16_parameter_and_an_fp32_one():
    """What the hf stack stands on: torch.optim.AdamW's m and v are zeros_like(param)."""
    torch = pytest.importorskip("torch")
    for dtype in (torch.bfloat16, torch.float32):
        param = torch.nn.Parameter(torch.zeros(4, dtype=dtype))
        param.grad = torch.zeros_like(param)
        optimizer = torch.optim.AdamW([param])
        optimizer.step()
        states = [t for t in optimizer.state[param].values() if t.numel() > 1]
        assert {t.dtype for t in states} == {dtype}


def _states(**options):
    block = calc.memory("llama3.2-1b", seq_len=512, **options).memory
    return block.bytes_per_param["optimizer_states"] + block.bytes_per_param["master"]


def test_hf_stack_keeps_adamw_states_in_the_loaded_dtype():
    # loaded in bf16 (the stack's recipe pure-bf16): 16-bit m and v, no master copy
    assert _states(framework="hf") == 4
    # loaded in fp32: fp32 states
    assert _states(framework="hf", dtype="fp32") == 8
    # an fp32 master copy (the mixed recipe, fp16 under accelerate's scaler): fp32 states
    assert _states(framework="hf", dtype="fp16") == 4 + 8
    # another stack's table row, and another optimizer, unchanged
    assert _states(framework="fsdp", recipe="pure-bf16") == 8
    assert _states(framework="hf", optimizer="adam8bit") == 2


def test_peft_adapters_keep_fp32_states_under_the_hf_stack():
    """PEFT upcasts the adapters to fp32 (get_peft_model autocast_adapter_dtype=True), so their
    AdamW states are fp32 whatever the base's dtype."""
    assert _states(framework="hf", finetune="lora") == 8


def test_peft_adapters_weights_and_gradients_are_fp32_under_the_hf_stack():
    """PEFT 0.21.2 get_peft_model(autocast_adapter_dtype=True) casts lora_A/lora_B to float32 on
    a bf16 base, so each adapter parameter holds 4 bytes of weight and 4 of gradient; the frozen
    base stays at the recipe's 2 bytes. Llama 3.1 8B, r = 8 on q and v: 32 layers × 8 ×
    ((4096 + 4096) + (4096 + 1024)) = 3,407,872 adapter parameters (calc.formulas.finetune)."""
    options = dict(seq_len=512, finetune="lora", lora_rank=8, lora_targets="q,v")
    adapters = 32 * 8 * ((4096 + 4096) + (4096 + 1024))
    hf = calc.memory("llama3.1-8b", framework="hf", **options).memory
    assert sum(hf.finetune.adapters.values()) == adapters
    assert hf.weights_bytes == 4 * adapters and hf.gradients_bytes == 4 * adapters
    assert hf.optimizer_bytes == 8 * adapters
    assert hf.bytes_per_param["weights"] == hf.bytes_per_param["gradients"] == 4
    n = count_params(calc.load_preset("llama3.1-8b").spec).total
    assert hf.frozen_bytes == 2 * n
    # another stack's adapters follow its recipe, unchanged (pure-bf16: 2 bytes each)
    other = calc.memory("llama3.1-8b", framework="fsdp", recipe="pure-bf16", **options).memory
    assert other.weights_bytes == other.gradients_bytes == 2 * adapters
    # full fine-tuning under hf keeps the recipe's 16-bit weights and gradients
    full = calc.memory("llama3.2-1b", framework="hf", seq_len=512).memory
    assert full.bytes_per_param["weights"] == full.bytes_per_param["gradients"] == 2
