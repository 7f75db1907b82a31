"""step --finetune (calc.timing.finetune), GPUs without a named system (calc.plan.system) and
a user's GPU file (calc.presets.gpu_from_file)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import calc
from calc.counting import SECONDS_PER_HOUR
from calc.errors import CalcError
from calc.evaluate import count_adapters
from calc.plan.system import PCIE_STEP_US, system_of
from calc.presets import get_gpu, load_preset
from calc.spec.finetune import FineTune
from calc.timing.finetune import adapter_terms

LLAMA = load_preset("llama3.1-8b").spec
RUN = dict(gpu="rtx4090", gpus=1, seq_len=2048, micro_batch=2, recompute="full")
ALL = dict(lora_rank=16, lora_targets="all-linear")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "calc", *args], capture_output=True,
                          text=True, check=False)


@pytest.mark.parametrize("model,targets", [("llama3.1-8b", "all-linear"),
                                           ("mixtral-8x7b", "q,v,experts")])
def test_adapter_widths_times_rank_are_the_exact_adapter_counts(model, targets):
    """Σ r·(n_in + n_out) over the matrices a token runs through is the adapter count (routed
    experts: the top-k of n_experts)."""
    spec = load_preset(model).spec
    ft = FineTune(finetune="lora", lora_rank=8, lora_targets=targets)
    counts = count_adapters(spec, ft)
    for term in adapter_terms(spec, counts.targets):
        params = 8 * (term.inputs + term.outputs)
        if term.name == "experts":
            params *= spec.moe.n_experts / spec.moe.top_k
        assert params == counts.by_target[f"lora/{term.name}"], term.name


def test_a_frozen_base_drops_the_weight_gradients():
    full = calc.step("llama3.1-8b", framework="hf", **RUN)  # the fine-tune's stack
    lora = calc.step("llama3.1-8b", finetune="lora", **ALL, **RUN)
    # frozen products: 2 × forward instead of 3 ×, adapters added: between 2/3 and 1 of full
    assert 2 / 3 * full.step_time_s < lora.step_time_s < full.step_time_s
    assert lora.finetune_parts["adapters"] > 0 and "dequantisation" not in lora.finetune_parts
    assert lora.breakdown["optimizer"] == pytest.approx(
        full.breakdown["optimizer"] * lora.finetune.trainable / 8_030_261_248)
    assert lora.model_flops_per_step < full.model_flops_per_step


def test_qlora_adds_the_dequantisation_of_each_4bit_weight_per_pass():
    lora = calc.step("llama3.1-8b", finetune="lora", **ALL, **RUN)
    qlora = calc.step("llama3.1-8b", finetune="qlora", **ALL, **RUN)
    gpu = get_gpu("rtx4090")
    block = qlora.finetune
    hbm = gpu.bandwidth_gb_s * 1e9 * 0.80  # presets/timing.toml [memory] hbm_fraction
    per_pass = block.quantised * (block.bytes_per_frozen_weight + 2) / hbm
    assert qlora.finetune_parts["dequantisation"] == pytest.approx(3 * per_pass)  # fwd, re, bwd
    assert qlora.step_time_s == pytest.approx(lora.step_time_s + 3 * per_pass)
    no_recompute = calc.step("llama3.1-8b", finetune="qlora", **ALL,
                             **{**RUN, "recompute": "none", "micro_batch": 1})
    assert no_recompute.finetune_parts["dequantisation"] == pytest.approx(2 * per_pass)


def test_dataset_tokens_times_epochs_price_the_gpu_hours():
    report = calc.step("llama3.1-8b", finetune="qlora", **RUN, dataset_tokens=5e7, epochs=3)
    assert report.tokens == 1.5e8
    assert report.gpu_hours == pytest.approx(
        1.5e8 / report.tokens_per_s_per_gpu / SECONDS_PER_HOUR)
    with pytest.raises(CalcError, match="give one"):
        calc.step("llama3.1-8b", **RUN, tokens=1e9, dataset_tokens=1e8)
    with pytest.raises(CalcError, match="dataset_tokens"):
        calc.step("llama3.1-8b", **RUN, epochs=2)


def test_a_box_is_derived_from_the_cards_links():
    assert system_of(get_gpu("rtx4090"), None, 2).intra_node_gb_s == 32  # PCIe Gen4 x16
    bridged = system_of(get_gpu("rtx-a6000"), None, 2)
    assert bridged.intra_node_gb_s == 56.25 and bridged.intra_node_latency_us == 3.4
    four = system_of(get_gpu("rtx-a6000"), None, 4)  # pairs bridged, the ring crosses PCIe
    assert four.intra_node_gb_s == 32 and four.intra_node_latency_us == PCIE_STEP_US
    assert system_of(get_gpu("h100"), None, 8).name == "dgx-h100"  # its reference system
    two = calc.step("llama3.1-8b", gpu="rtx4090", gpus=2, seq_len=2048, micro_batch=1,
                    finetune="lora")
    assert two.links == {"dp": "intra-node"} and two.system == "rtx4090-box-2"


def test_more_gpus_than_one_box_holds_is_refused():
    with pytest.raises(CalcError, match="no inter-node bandwidth"):
        calc.step("llama3.1-8b", gpu="rtx4090", gpus=8, gpus_per_node=4, seq_len=2048,
                  micro_batch=1, finetune="lora")


@pytest.mark.parametrize("args,message", [
    (["--gpu", "l40s", "--system", "dgx-h100"], "holds h100 GPUs, not l40s"),
    (["--gpu", "rtx4090", "--finetune", "lora", "--lora-targets", "experts"],
     "has no 'experts' projection"),
    (["--gpu", "rtx4090", "--finetune", "lora", "--lora-rank", "0"], "--lora-rank"),
    (["--gpu", "tpu-v4", "--finetune", "qlora"], "4-bit"),
    (["--gpu", "rtx4090", "--dataset-tokens", "1e8", "--tokens", "1e9"], "give one"),
])
def test_bad_input_is_one_line_exit_2(cli, args, message):
    """In this process (calc.cli.main, the exit code `python -m calc` exits with); the test
    below runs the command in its own process."""
    done = cli("step", "llama3.1-8b", "--gpus", "1", "--seq-len", "2048", *args)
    assert done.code == 2, done.err
    assert message in done.err and done.err.count("\n") == 1, done.err


GPU_FILE = """title = "My RTX 4090"
peak_tflops = { bf16 = 165.2, fp16 = 165.2, fp32 = 82.6 }
memory_gib = 24
bandwidth_gb_s = 1008
pcie_gb_s = 32
generation = "ada"
source = "NVIDIA Ada GPU Architecture whitepaper v2.1, Appendix A"
"""


def test_a_users_gpu_file_prices_like_the_catalogue_entry(tmp_path):
    path = tmp_path / "my_gpu.toml"
    path.write_text(GPU_FILE)
    mine = calc.step("llama3.1-8b", gpu=str(path), finetune="qlora", **ALL,
                     **{k: v for k, v in RUN.items() if k != "gpu"})
    ours = calc.step("llama3.1-8b", finetune="qlora", **ALL, **RUN)
    assert mine.gpu == "my_gpu" and mine.step_time_s == pytest.approx(ours.step_time_s)


@pytest.mark.parametrize("drop,message", [("memory_gib", "memory_gib"),
                                          ("source", "source")])
def test_a_gpu_file_missing_a_field_is_one_line(tmp_path, drop, message):
    path = tmp_path / "bad.toml"
    path.write_text("\n".join(line for line in GPU_FILE.splitlines()
                              if not line.startswith(drop)))
    done = run("step", "llama3.1-8b", "--gpu", str(path), "--gpus", "1")
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1
    assert "cannot read" in run("memory", "llama3.1-8b", "--gpu", "none.toml").stderr


def test_memory_needs_no_compute_peak():
    """The RTX 5090's tensor rates are not catalogued: memory still answers, step refuses."""
    report = calc.memory("llama3.1-8b", gpu="rtx5090", finetune="qlora")
    assert report.memory.fits
    with pytest.raises(CalcError, match="rtx5090"):  # no constants, no peak: refused
        calc.step("llama3.1-8b", gpu="rtx5090", gpus=1, finetune="qlora")


@pytest.mark.parametrize("gpu", ["l40", "t4", "mi325x", "rtx-a6000"])
def test_added_cards_price_a_fine_tune(gpu):
    dtype = "fp16" if gpu == "t4" else "bf16"
    report = calc.step("llama3.2-1b", gpu=gpu, gpus=1, finetune="lora", dtype=dtype)
    assert report.tokens_per_s_per_gpu > 0 and report.generation


def test_the_layout_search_runs_on_a_workstation():
    """Two RTX 4090s in one host: every searched layout stays in the derived box, and a dense
    model asks no link of an expert group it does not have."""
    report = calc.layout("llama3.2-1b", gpu="rtx4090", gpus=2, global_batch=8, seq_len=1024)
    assert report.system == "rtx4090-box-2" and report.best and report.fitting > 0
