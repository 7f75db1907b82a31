"""Every preset against its published parameter count, and the GPU catalogue's datasheet peaks."""

from __future__ import annotations

import pytest

import calc
from calc.errors import UnknownNameError
from calc.evaluate import count_params

PRESETS = calc.list_presets()

# Presets the issue names; the catalogue may hold more, never fewer.
REQUIRED = {
    "gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "gpt3-125m", "gpt3-350m", "gpt3-760m",
    "gpt3-1.3b", "gpt3-2.7b", "gpt3-6.7b", "gpt3-13b", "gpt3-175b", "llama2-7b", "llama2-13b",
    "llama2-70b", "llama3-8b", "llama3-70b", "llama3.1-405b", "mistral-7b", "mixtral-8x7b",
    "deepseek-v3", "chapter-char-gpt", "chapter-gpt-1.3b",
}


def test_catalogue_has_the_required_presets():
    assert REQUIRED <= set(PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_parameter_count_matches_the_published_count(name):
    """Exact where the source is exact (checkpoint numel); within the source's rounding where
    it rounds (GPT-3 Table 2.1, the chapter's 'about 0.84M'). Sources are in each preset file."""
    preset = calc.load_preset(name)
    published = preset.published_params
    assert published is not None and published.source, f"{name} has no published count"
    total = count_params(preset.spec).total
    expected = published.value - published.buffers
    if published.tolerance == 0:
        assert total == expected
    else:
        assert abs(total / expected - 1) <= published.tolerance


@pytest.mark.parametrize("name, active_billions", [
    ("mixtral-8x7b", 12.9),  # Jiang et al. 2024: "13B active parameters" (12.9B, keras-hub)
    ("deepseek-v3", 37.6),  # DeepSeek-V3 README: "37B activated for each token"
])
def test_moe_active_parameters(name, active_billions):
    assert round(count_params(calc.load_preset(name).spec).active / 1e9, 1) == active_billions


@pytest.mark.parametrize("name", PRESETS)
def test_preset_reads_like_its_source(name):
    preset = calc.load_preset(name)
    assert preset.spec.name == name
    assert preset.title and preset.source
    if preset.training is not None:
        assert preset.training.source
        if preset.training.gpu is not None:  # None: the source does not name the hardware
            calc.get_gpu(preset.training.gpu).peak_flops(preset.training.dtype)


# Dense peaks (TFLOP/s) per dtype, from each datasheet (sources in presets/gpus.toml).
DATASHEET = [
    ("v100", "fp16", 125), ("a100", "bf16", 312), ("a100-40gb", "bf16", 312),
    ("h100", "bf16", 989.4), ("h100", "fp8", 1978.9), ("h100-pcie", "bf16", 756.5),
    ("h200", "bf16", 989.4), ("h800", "bf16", 989.4), ("b200", "bf16", 2250),
    ("gb200", "bf16", 2500), ("l4", "bf16", 121), ("l40s", "bf16", 362.05),
    ("rtx4090", "bf16", 165.2), ("mi250x", "bf16", 383.0), ("mi300x", "bf16", 1307.4),
    ("tpu-v4", "bf16", 275), ("tpu-v5e", "bf16", 197), ("tpu-v5p", "bf16", 459),
]


@pytest.mark.parametrize("gpu, dtype, tflops", DATASHEET)
def test_gpu_dense_peaks(gpu, dtype, tflops):
    spec = calc.get_gpu(gpu)
    assert spec.peak_flops(dtype) == tflops * 1e12
    assert spec.source


def test_sparse_figures_are_not_used():
    """Datasheets print BF16 'with sparsity' at 2× the dense peak (A100: 624, H100: 1,979)."""
    assert calc.get_gpu("a100").peak_flops("bf16") == 312e12
    assert calc.get_gpu("h100").peak_flops("bf16") < 1000e12


def test_unknown_gpu_and_dtype_are_errors_not_guesses():
    with pytest.raises(UnknownNameError, match="did you mean a100"):
        calc.get_gpu("a10")
    with pytest.raises(calc.CalcError, match="no dense bf16 peak"):
        calc.get_gpu("v100").peak_flops("bf16")
