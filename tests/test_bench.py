"""Measured throughput: sane figures from a tiny CPU run, and the MFU fed back into estimates."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import calc  # noqa: E402
from calc.reports.bench import BenchReport, bench  # noqa: E402
from calc.verify.bench import catalogue_name  # noqa: E402


@pytest.fixture(scope="module")
def cpu_bench() -> BenchReport:
    return bench("cpu", "fp32", "chapter-char-gpt", batch=2, seq_len=32, matmul_size=512)


def test_cpu_figures_are_sane(cpu_bench):
    m, s = cpu_bench.matmul, cpu_bench.step
    assert cpu_bench.device.kind == "cpu" and cpu_bench.device.cores >= 1
    assert m.flops == 2 * 512**3 and m.flops_per_second > 0
    assert s.median_seconds > 0 and s.tokens_per_second == pytest.approx(64 / s.median_seconds)
    spec = calc.load_preset("chapter-char-gpt").spec
    assert s.model_flops == calc.count_flops(spec, 32).train * 64  # calc's own causal count
    assert s.executed_flops >= s.model_flops
    achieved = s.model_flops / s.median_seconds
    assert s.mfu_vs_ceiling == pytest.approx(achieved / m.flops_per_second)
    assert s.mfu_vs_ceiling > 0
    assert s.mfu_vs_peak is None and cpu_bench.peak_flops is None  # no CPU peak in the catalogue
    # The ceiling and the step are timed apart on a shared machine, so a step may beat a noisy
    # ceiling: only the identity between the two figures is checked, not their order.
    assert s.predicted_seconds_at_ceiling == pytest.approx(s.model_flops / m.flops_per_second)


def test_saved_bench_feeds_the_report(cli, cpu_bench, tmp_path):
    """A bench measured on an A100 prices an A100 run (the file says where it was measured)."""
    path = tmp_path / "bench.json"
    # An MFU of 0.37 as an A100 would measure it: the CPU's own figure can pass 1 (see above).
    on_a100 = cpu_bench.model_copy(update={
        "device": cpu_bench.device.model_copy(
            update={"kind": "cuda", "name": "NVIDIA A100-SXM4-80GB", "gpu": "a100"}),
        "step": cpu_bench.step.model_copy(update={"mfu_vs_ceiling": 0.37})})
    path.write_text(on_a100.model_dump_json())
    data = cli("llama2-7b", "--tokens", "2e12", "--gpu", "A100", "--mfu-from", str(path),
               "--format", "json").json()
    assert data["training"]["mfu"] == pytest.approx(0.37)
    assert data["training"]["mfu_source"].startswith("measured ")


def test_a_cpu_bench_does_not_price_a_gpu(cli, cpu_bench, tmp_path):
    """Issue 12: a CPU's MFU silently became an H100 estimate (171,873 GPU-hours)."""
    path = tmp_path / "bench.json"
    path.write_text(cpu_bench.model_dump_json())
    result = cli("llama2-7b", "--tokens", "2e12", "--gpu", "h100", "--mfu-from", str(path))
    assert result.code == 2 and "measured on cpu" in result.err and "not on h100" in result.err
    assert result.err.count("\n") == 1


@pytest.mark.parametrize("text", ['{"device": {}}', "[1, 2]", "{", ""])
def test_a_malformed_bench_file_is_one_line(cli, tmp_path, text):
    path = tmp_path / "bench.json"
    path.write_text(text)
    result = cli("llama2-7b", "--tokens", "2e12", "--gpu", "a100", "--mfu-from", str(path))
    assert result.code == 2 and "not a saved bench result" in result.err
    assert result.err.count("\n") == 1


def test_bench_command_json_and_bad_input(cli, tmp_path):
    saved = tmp_path / "b.json"
    result = cli("bench", "--device", "cpu", "--batch", "1", "--seq-len", "16",
                 "--matmul-size", "256", "--format", "json", "--save", str(saved))
    assert result.code == 0 and BenchReport.model_validate_json(saved.read_text())
    assert result.json()["step"]["tokens_per_second"] > 0
    assert cli("llama2-7b", "--mfu-from", str(tmp_path / "none.json")).code == 2
    assert cli("llama2-7b", "--mfu", "0.5", "--mfu-from", str(saved)).code == 2
    if not torch.cuda.is_available():
        assert "not available" in cli("bench", "--device", "cuda").err


@pytest.mark.parametrize("name, expected", [
    ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA A100-SXM4-40GB", "a100-40gb"), ("NVIDIA A100-SXM4-80GB", "a100"),
    ("NVIDIA H200", "h200"), ("NVIDIA L4", "l4"), ("NVIDIA L40S", "l40s"),
    ("NVIDIA GeForce RTX 4090", "rtx4090"), ("AMD Instinct MI300X", "mi300x"),
    ("NVIDIA GeForce GTX 1080", None),
])
def test_cuda_names_map_to_the_catalogue(name, expected):
    assert catalogue_name(name) == expected


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_bench():
    report = bench("cuda", "bf16", "gpt2", batch=4, seq_len=512)
    assert report.matmul.flops_per_second > 1e12
    if report.step.mfu_vs_peak is not None:
        assert 0 < report.step.mfu_vs_peak <= 1
