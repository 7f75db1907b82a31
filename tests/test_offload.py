"""Offload (ZeRO-Offload, ZeRO-Infinity): what leaves the GPU, what the host must hold, and the
host-link traffic, against the papers' headline figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import calc

DATA = Path(__file__).parent / "data"
GPT3_13B = calc.count_params(calc.load_preset("gpt3-13b").spec).total


def test_zero_offload_13b_on_one_v100():
    """Ren et al. 2021 (ZeRO-Offload), abstract and §6: a 13B model trains on a single 32 GB
    V100 (10× what PyTorch fits); the host keeps 16 bytes per parameter (fp32 weights, fp32
    gradients, Adam's m and v), the GPU the fp16 weights. Here with full recomputation at
    s = 1024, micro-batch 1, as one DGX-2 GPU with its node's 1.5 TB of host memory."""
    options = dict(gpu="v100", dtype="fp16", zero=2, recompute="full", seq_len=1024)
    plain = calc.memory("gpt3-13b", **options).memory
    offloaded = calc.memory("gpt3-13b", offload_optimizer="cpu", host_memory_gib=1536,
                            gpus_per_node=1, **options).memory
    assert not plain.fits and offloaded.fits
    assert offloaded.offload.host_bytes_per_gpu == 16 * GPT3_13B
    # on the GPU: the fp16 weights, the activations and DeepSpeed's buffers (issue 19)
    assert offloaded.allocated_bytes == pytest.approx(
        2 * GPT3_13B + offloaded.activations_bytes + offloaded.buffers_bytes, rel=1e-12)
    # weights: the updated fp16 weights up, the fp16 gradients down, once per step over PCIe
    assert offloaded.offload.transfer_per_step_bytes == 4 * GPT3_13B


def test_no_host_memory_left_is_one_line():
    """Sixteen such GPUs on one DGX-2 (1.5 TB) would need 3.3 TB of host memory."""
    with pytest.raises(calc.CalcError, match="exceed the host memory") as error:
        calc.memory("gpt3-13b", gpu="v100", dtype="fp16", zero=2, offload_optimizer="cpu",
                    host_memory_gib=1536, gpus_per_node=16)
    assert "\n" not in str(error.value)
    nvme = calc.memory("gpt3-13b", gpu="v100", dtype="fp16", zero=2, offload_optimizer="nvme",
                       host_memory_gib=1536, gpus_per_node=16).memory.offload
    assert nvme.host_bytes_per_gpu == 0 and nvme.nvme_bytes_per_gpu == 16 * GPT3_13B


def test_host_memory_from_the_gpus_system():
    m = calc.memory("llama2-7b", gpu="h100", zero=1, dp=8, offload_optimizer="cpu").memory
    system = calc.presets.get_system("dgx-h100")
    assert m.offload.host_memory_bytes == system.host_memory_gib * 2**30
    assert m.offload.gpus_per_node == system.gpus_per_node
    assert m.offload.transfer_per_step_seconds == pytest.approx(
        m.offload.transfer_per_step_bytes / (calc.get_gpu("h100").pcie_gb_s * 1e9))


def test_peft_table_deepspeed_cpu_offload_host_side():
    """PEFT README: bloomz-7b1, PEFT-LoRA with DeepSpeed ZeRO-3 CPU offload of parameters and
    optimizer, fp32: "35GB CPU". calc's offloaded states plus the 3.8 GB the same script's
    process takes without offload (the table's PEFT-LoRA PyTorch column) within 10 %."""
    config = json.loads((DATA / "hf_configs" / "bloom-560m.json").read_text())
    config.update(n_embed=4096, n_layer=30, num_attention_heads=32)  # bloom-7b1's shape
    m = calc.memory(calc.spec_from_hf_config(config), finetune="lora", lora_rank=8,
                    lora_targets="q,k,v", dtype="fp32", micro_batch=8, seq_len=64,
                    dropout=False, zero=3, offload_optimizer="cpu", offload_params="cpu",
                    host_memory_gib=64, gpus_per_node=1).memory
    assert m.offload.host_bytes_per_gpu + 3.8e9 == pytest.approx(35e9, rel=0.10)


@pytest.mark.parametrize("options, message", [
    (dict(offload_params="cpu", zero=2), "needs zero=3"),
    (dict(offload_optimizer="cpu", zero=0), "needs zero >= 1"),
    (dict(offload_optimizer="disk", zero=1), "offload"),
])
def test_bad_offload_input(options, message):
    with pytest.raises(calc.CalcError, match=message):
        calc.memory("llama2-7b", **options)


def test_cli(cli):
    result = cli("memory", "llama2-70b", "--gpu", "a100", "--zero", "3", "--dp", "8",
                 "--offload-optimizer", "cpu", "--offload-params", "cpu")
    assert result.code == 0 and "Offload: host memory" in result.out
