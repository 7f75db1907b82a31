"""Every published training run calc knows, reproduced: calc's FLOPs and GPU-hours beside the
published ones, and the MFU the published GPU-hours imply.

`reproduce()` walks the presets with a published run (`[published.training]`) and prices each
one with `calc.estimate` at the run's own tokens, GPU and dtype, at the model's pre-training
context with causal attention: once at the default MFU, once at the run's published MFU where
there is one. A run tagged `unconfirmed`, or with neither GPU-hours nor total FLOPs to compare
with, is listed among the excluded runs with its reason, beside the published runs that have no
preset (presets/unreproduced.toml).

The implied MFU is the MFU at which calc's FLOPs take the published GPU-hours: FLOPs ÷ (GPU-hours
× 3600 × dense peak). It comes in two conventions, calc's exact count (every matmul, causal
attention) and 6·N·D, and inherits the scope of the published hours: hours that include
restarts, evaluation or long-context stages make it a lower bound on the MFU inside the run.
"""

from __future__ import annotations

from pydantic import Field

from calc.counting import (
    DEFAULT_MFU,
    DEFAULT_MFU_NOTE,
    FLOPS_PER_MULTIPLY_ADD,
    HOURS_PER_DAY,
    SECONDS_PER_HOUR,
    TRAIN_PER_FORWARD,
    UNITS,
)
from calc.document import Document
from calc.evaluate import count_params
from calc.presets import Preset, PublishedRun, list_presets, load_preset, load_unreproduced
from calc.reports.estimate import estimate
from calc.spec.model import Frozen

ATTENTION = "causal"  # the convention every row is counted under (calc.counting.ATTENTION)


class ReproducedRun(Frozen):
    """One published run beside calc's estimate of it. Keys of `reproduce --format json`."""

    model: str = Field(description="preset name")
    title: str = Field(description="the model as its source names it")
    tokens: float = Field(description="training tokens as published")
    gpu: str | None = Field(description="catalogue GPU whose dense peak prices the run; None "
                                        "when the source does not name the accelerator")
    accelerator: str = Field(description="the accelerator as published")
    gpus: int | None = Field(description="accelerators as published; None when not published")
    dtype: str = Field(description="training dtype whose dense peak is used")
    peak_flops: float | None = Field(description="dense peak FLOP/s of one GPU at dtype")
    seq_len: int = Field(description="pre-training context T the FLOPs are counted at")
    attention: str = Field(description="attention counting convention ('causal')")
    published_gpu_hours: float | None = Field(description="GPU-hours as published")
    gpu_hours_scope: str = Field(description="what the published GPU-hours cover")
    published_flops: float | None = Field(description="total training FLOPs as published")
    published_mfu: float | None = Field(description="MFU as published")
    published_mfu_convention: str = Field(description="how the published MFU was counted")
    flops: float = Field(description=f"calc's exact training FLOPs: tokens × "
                                     f"{TRAIN_PER_FORWARD} × forward FLOPs per token at seq_len")
    flops_6nd: float = Field(description="6·N·D, N = active parameters")
    flops_ratio: float | None = Field(description="flops / published_flops")
    flops_6nd_ratio: float | None = Field(description="flops_6nd / published_flops")
    default_mfu: float = Field(description="the MFU gpu_hours assumes (calc's default)")
    gpu_hours: float | None = Field(description="calc's GPU-hours at default_mfu")
    ratio: float | None = Field(description="gpu_hours / published_gpu_hours")
    gpu_hours_at_published_mfu: float | None = Field(
        description="calc's GPU-hours at published_mfu")
    ratio_at_published_mfu: float | None = Field(
        description="gpu_hours_at_published_mfu / published_gpu_hours")
    implied_mfu: float | None = Field(
        description=f"flops / (published_gpu_hours × {SECONDS_PER_HOUR} × peak_flops)")
    implied_mfu_6nd: float | None = Field(
        description=f"flops_6nd / (published_gpu_hours × {SECONDS_PER_HOUR} × peak_flops)")
    confidence: str | None = Field(description="how well the published figures are confirmed "
                                               "(calc.presets.Confidence)")
    source: str = Field(description="where the published figures come from")


class ExcludedRun(Frozen):
    """A published run the table leaves out."""

    run: str = Field(description="the run (a preset name, or the run as published)")
    reason: str = Field(description="why it is left out")
    source: str = Field(description="where its figures come from or were looked for")


class ReproduceReport(Document):
    """The reproduction table: `runs`, `excluded` and the `conventions` they are counted under."""

    default_mfu: float = Field(description="the MFU of the gpu_hours column")
    runs: list[ReproducedRun]
    excluded: list[ExcludedRun]
    conventions: list[str]

    def run(self, model: str) -> ReproducedRun:
        """The row of preset `model`; KeyError when it has none."""
        for row in self.runs:
            if row.model == model:
                return row
        raise KeyError(model)


def _why_excluded(run: PublishedRun) -> str | None:
    if run.confidence == "unconfirmed":
        return "its published figures are tagged unconfirmed"
    if run.gpu_hours is None and run.flops is None:
        return "neither GPU-hours nor total FLOPs are published: nothing to compare with"
    return None


def _ratio(value: float | None, published: float | None) -> float | None:
    return value / published if value is not None and published else None


def reproduce_run(preset: Preset) -> ReproducedRun:
    """Preset's published run priced by calc.estimate (at the default and at the published
    MFU) and set beside the published figures."""
    run = preset.training
    if run is None:
        raise ValueError(f"preset {preset.name} has no published run")
    common = dict(tokens=run.tokens, gpu=run.gpu, dtype=run.dtype, gpus=run.gpus or 1,
                  attention=ATTENTION)
    training = estimate(preset, **common).training
    assert training is not None
    at_published = None
    if run.mfu is not None and run.gpu is not None:
        at_published = estimate(preset, **common, mfu=run.mfu,
                                mfu_source="published").training
    published = training.published
    assert published is not None
    return ReproducedRun(
        model=preset.name, title=preset.title, tokens=run.tokens, gpu=run.gpu,
        accelerator=run.accelerator or (training.gpu_title or ""), gpus=run.gpus,
        dtype=run.dtype, peak_flops=training.peak_flops, seq_len=preset.spec.context_length,
        attention=ATTENTION, published_gpu_hours=run.gpu_hours, gpu_hours_scope=run.scope,
        published_flops=run.flops, published_mfu=run.mfu,
        published_mfu_convention=run.mfu_convention,
        flops=training.flops, flops_6nd=training.flops_6nd,
        flops_ratio=_ratio(training.flops, run.flops),
        flops_6nd_ratio=_ratio(training.flops_6nd, run.flops),
        default_mfu=training.mfu, gpu_hours=training.gpu_hours, ratio=published.ratio,
        gpu_hours_at_published_mfu=at_published.gpu_hours if at_published else None,
        ratio_at_published_mfu=(at_published.published.ratio
                                if at_published and at_published.published else None),
        implied_mfu=published.implied_mfu, implied_mfu_6nd=published.implied_mfu_6nd,
        confidence=run.confidence, source=run.source,
    )


def _order(preset: Preset) -> tuple[str, int]:
    """Families together (the preset name before its size), smallest model first."""
    return preset.name.rsplit("-", 1)[0], count_params(preset.spec).total


CONVENTIONS = [
    "Tokens, GPUs, GPU-hours, FLOPs and MFU as published, each with its source and scope below; "
    f"GPU-hours 'derived' are GPUs × days × {HOURS_PER_DAY} from the source's own words.",
    f"calc's FLOPs: exact = tokens × {TRAIN_PER_FORWARD} × forward FLOPs per token (every "
    f"matrix product, a multiply-add = {FLOPS_PER_MULTIPLY_ADD} FLOPs, LM head included), "
    "counted at the model's pre-training context T with causal attention (query i scores i "
    "keys); 6ND = 6 × active parameters × tokens.",
    "GPU-hours = FLOPs / (dense peak of the catalogue GPU at the run's dtype × MFU) / "
    f"{SECONDS_PER_HOUR}: at calc's default MFU ({DEFAULT_MFU_NOTE}) and at the run's published "
    "MFU.",
    "ratio = calc's estimate / the published figure. Implied MFU = FLOPs / (published GPU-hours "
    f"× {SECONDS_PER_HOUR} × dense peak), exact and 6ND; it includes everything the published "
    "hours include (restarts, evaluation, long-context stages), so it is a lower bound on the "
    "MFU in the run.",
    UNITS,
]


def reproduce() -> ReproduceReport:
    """The reproduction table of every published run calc has a preset for."""
    runs, excluded = [], []
    presets = sorted((load_preset(name) for name in list_presets()), key=_order)
    for preset in presets:
        run = preset.training
        if run is None:
            continue
        reason = _why_excluded(run)
        if reason is None:
            runs.append(reproduce_run(preset))
        else:
            excluded.append(ExcludedRun(run=preset.name, reason=reason, source=run.source))
    excluded += [ExcludedRun(run=item.run, reason=item.reason, source=item.source)
                 for item in load_unreproduced()]
    return ReproduceReport(default_mfu=DEFAULT_MFU, runs=runs, excluded=excluded,
                           conventions=CONVENTIONS)
