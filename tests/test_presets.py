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


# Presets whose count nobody published, and where their count is checked instead.
UNPUBLISHED = {"chapter-char-gpt": "a hand count in tests/test_worked_examples.py"}


def test_every_preset_but_the_unpublished_has_a_published_count():
    missing = {name for name in PRESETS if calc.load_preset(name).published_params is None}
    assert missing == set(UNPUBLISHED)


@pytest.mark.parametrize("name", [n for n in PRESETS if n not in UNPUBLISHED])
def test_parameter_count_matches_the_published_count(name):
    """Exact where the source is exact (checkpoint numel); within the source's rounding where
    it rounds (GPT-3 Table 2.1). Sources are in each preset file."""
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


# Rae et al. 2021 (Gopher) Table 1: (layers, heads, key/value size, d_model) and the size as
# printed. Every size is 13·L·d² + V·d: relative positions (Transformer-XL) add a d × d
# projection W_R (and biases u, v) to each layer; without them the 417M model would be 389M.
GOPHER_FAMILY = [(8, 16, 32, 512, "44M"), (12, 12, 64, 768, "117M"), (12, 12, 128, 1536, "417M"),
                 (24, 16, 128, 2048, "1.4B"), (32, 32, 128, 4096, "7.1B")]


@pytest.mark.parametrize("layers, heads, head_dim, width, printed", GOPHER_FAMILY)
def test_gopher_family_sizes_count_the_relative_position_projection(layers, heads, head_dim,
                                                                     width, printed):
    spec = calc.load_preset("gopher-280b").spec.updated(
        n_layers=layers, d_model=width, **{"attention.n_heads": heads,
                                           "attention.head_dim": head_dim, "ffn.d_ff": 4 * width})
    total = count_params(spec).total
    scale, digits = (1e6, 0) if printed.endswith("M") else (1e9, 1)
    assert f"{round(total / scale, digits):g}{printed[-1]}" == printed
    assert count_params(spec).components["attention/position"] == layers * (
        width * heads * head_dim + 2 * heads * head_dim)


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
    # 'a10' (NVIDIA's A10, not catalogued) suggests the AWS variant and the A100
    with pytest.raises(UnknownNameError, match="did you mean a10g, a100"):
        calc.get_gpu("a10")
    with pytest.raises(calc.CalcError, match="no dense bf16 peak"):
        calc.get_gpu("v100").peak_flops("bf16")
