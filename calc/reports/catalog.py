"""The catalogues as report objects: every preset with its size, every GPU with its peaks."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from calc.counting import UNITS
from calc.document import Document
from calc.evaluate import count_params
from calc.presets import list_presets, load_gpus, load_preset, load_systems
from calc.spec import DTYPES
from calc.spec.model import Frozen

PEAK_DTYPES = DTYPES  # every dtype a GPU's peak can be asked for (--dtype)


class PresetRow(Frozen):
    name: str
    title: str
    params: int
    active: int
    n_layers: int
    d_model: int
    context_length: int
    published_gpu_hours: float | None = None
    source: str


class PresetCatalogue(Document):
    presets: list[PresetRow]
    conventions: list[str] = Field(default_factory=lambda: [
        "params: exact total, a tied weight counted once; active: per token (MoE top-k).",
        UNITS])


class GPUCatalogue(Document):
    gpus: list[dict[str, Any]]
    systems: list[dict[str, Any]] = Field(default_factory=list)
    conventions: list[str] = Field(default_factory=lambda: [
        "Dense peaks in TFLOP/s (int8: TOP/s), never the 2× 'with sparsity' figures.",
        "memory in GiB as the vendor labels it; bandwidth in GB/s.",
        "Links per direction in GB/s (decimal), half the both-ways figure datasheets print; "
        "NVLink: the chip's scale-up link (AMD: Infinity Fabric); system: its reference "
        "platform below.",
        "Systems: a node is the scale-up domain (chips one NVLink, Infinity Fabric or ICI fabric "
        "joins all-to-all); across nodes = the GPU's NIC line rate in Gb/s ÷ 8; latency per "
        "ring step."])


def preset_catalogue() -> PresetCatalogue:
    rows = []
    for name in list_presets():
        preset = load_preset(name)
        counts = count_params(preset.spec)
        run = preset.training
        rows.append(PresetRow(
            name=name, title=preset.title, params=counts.total, active=counts.active,
            n_layers=preset.spec.n_layers, d_model=preset.spec.d_model,
            context_length=preset.spec.context_length,
            published_gpu_hours=run.gpu_hours if run else None, source=preset.source))
    rows.sort(key=lambda row: (row.params, row.name))
    return PresetCatalogue(presets=rows)


def gpu_catalogue() -> GPUCatalogue:
    return GPUCatalogue(
        gpus=[gpu.model_dump(mode="json") for gpu in load_gpus().values()],
        systems=[system.model_dump(mode="json") for system in load_systems().values()])
