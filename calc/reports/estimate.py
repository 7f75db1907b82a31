"""The main report: parameters, FLOPs per token and training cost of one model.

`estimate()` is the library's front door (`calc.estimate("llama2-7b", tokens=2e12, gpu="a100")`);
the CLI renders what it returns. `Report.to_dict()` is the JSON contract of DESIGN.md.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from calc import counting
from calc.counting import DEFAULT_MFU, DEFAULT_PUE, DEFAULT_PUE_NOTE, TOKENS_PER_PARAMETER
from calc.document import Document
from calc.errors import CalcError, one_line
from calc.evaluate import (
    count_flops,
    count_params,
    effective_peak,
    run_cost,
    finetune_train_flops,
    low_precision_train_flops,
    rule_flops,
    training_cost,
)
from calc.presets import Preset, PublishedRun, get_gpu, resolve, sequence_length
from calc.reports._finetune import (
    FineTuneBlock,
    finetune_block,
    finetune_options,
    finetune_sentences,
)
from calc.spec import BYTES_PER_ELEMENT, GPU, ModelSpec, Workload
from calc.spec.finetune import FineTune
from calc.spec.gemm_precision import GEMM_PRECISIONS, gemm_peaks, precision_sentence
from calc.spec.model import Frozen

MFUSource = str  # "default", "flag", or a measurement's description


class ParamsReport(Frozen):
    total: int
    embedding: int = Field(description="token + learned position embeddings")
    non_embedding: int = Field(description="Kaplan's N: total − embeddings − untied LM head")
    active: int = Field(description="per token: top-k routed + shared experts + router")
    mtp: int = Field(0, description="multi-token-prediction modules, reported apart from total")
    components: dict[str, int] = Field(description="whole-model count per component (non-zero)")
    per_layer: dict[str, int] = Field(description="one layer's count per component; an MoE "
                                                  "layer's FFN and a dense layer's both listed")
    layers: dict[str, int] = Field(description="how many layers each per-layer component has")
    published: float | None = None
    published_buffers: int = Field(0, description="non-parameter values in the published total")
    published_source: str | None = None
    chinchilla_tokens: int = Field(
        description=f"compute-optimal training tokens at {TOKENS_PER_PARAMETER} per parameter "
                    f"(Hoffmann et al. 2022 Table 3: 70B → 1.4T)")


class FlopsReport(Frozen):
    seq_len: int
    attention: str = Field(description="'causal' or 'full' attention counting")
    forward: int | float
    adapters_forward: int | float = Field(0, description="LoRA adapters' forward FLOPs per token")
    backward: int | float
    train: int | float = Field(description="one training step per token: forward + backward "
                                           "(frozen weights: input gradients only)")
    inference: int = Field(description="forward FLOPs of one generated token at context seq_len")
    attention_share: float = Field(description="QKᵀ and A·V share of the forward FLOPs")
    components: dict[str, int | float] = Field(description="forward FLOPs per token (non-zero)")
    six_n: int = Field(description="6N, N = active parameters")
    two_n: int = Field(description="2N, N = active parameters")
    rules: dict[str, float] = Field(description="training FLOPs per token by published rule")


class PublishedComparison(Frozen):
    gpu_hours: float | None
    flops: float | None
    mfu: float | None
    tokens: float
    gpu: str | None
    gpus: int | None
    scope: str
    source: str
    ratio: float | None = Field(description="calc's GPU-hours / the published GPU-hours")
    implied_mfu: float | None = Field(
        description="the MFU at which calc's exact FLOPs take the published GPU-hours")
    implied_mfu_6nd: float | None = Field(
        None, description="the MFU at which 6·N·D takes the published GPU-hours")


class TrainingReport(Frozen):
    tokens: float
    flops: float = Field(description="training FLOPs: tokens × train FLOPs per token")
    flops_6nd: float = Field(description="6·N·D, N = active parameters")
    gpu: str | None
    gpu_title: str | None = None
    dtype: str
    peak_flops: float | None = Field(description="dense peak FLOP/s of one GPU at dtype "
                                                  "(with fp8/fp4 GEMMs: the effective peak)")
    precision: str = Field("bf16", description="GEMM precision recipe (calc.spec.gemm_precision)")
    low_precision_share: float | None = Field(
        None, description="share of the training FLOPs in the FP8/FP4 GEMMs")
    low_precision_peak: float | None = Field(None, description="their dense peak, FLOP/s")
    mfu: float
    mfu_source: MFUSource
    gpus: int
    gpu_hours: float | None
    gpu_hours_6nd: float | None
    days: float | None = Field(description="wall-clock days on `gpus` GPUs")
    price: float | None = Field(None, description="price of one GPU-hour (given; no defaults)")
    cost: float | None = Field(None, description="GPU-hours × price, in the price's currency")
    pue: float | None = Field(None, description="power usage effectiveness the energy assumes")
    pue_source: str | None = None
    energy_kwh: float | None = Field(None, description="GPU-hours × TDP × PUE, kWh")
    grid_intensity: float | None = Field(None, description="grid carbon intensity, g CO2e/kWh")
    co2e_kg: float | None = Field(None, description="energy × grid intensity, kg CO2e")
    published: PublishedComparison | None = None


class Report(Document):
    model: str
    title: str
    source: str
    spec: ModelSpec
    params: ParamsReport
    flops_per_token: FlopsReport
    training: TrainingReport | None = None
    finetune: FineTuneBlock | None = Field(None, description="LoRA/QLoRA: what trains")
    conventions: list[str]


def _params_report(preset: Preset) -> ParamsReport:
    spec = preset.spec
    counts = count_params(spec)
    layers = {key: spec.n_layers for key in counts.per_layer}
    layers |= {key: spec.n_layers - spec.n_moe_layers for key in counts.per_dense_ffn}
    layers |= {key: spec.n_moe_layers for key in counts.per_moe_ffn}
    per_layer = {**counts.per_layer, **counts.per_dense_ffn, **counts.per_moe_ffn}
    published = preset.published_params
    return ParamsReport(
        total=counts.total, embedding=counts.embedding, non_embedding=counts.non_embedding,
        active=counts.active, mtp=counts.mtp,
        components={k: v for k, v in counts.components.items() if v},
        per_layer={k: v for k, v in per_layer.items() if v and layers[k]},
        layers={k: n for k, n in layers.items() if per_layer[k] and n},
        published=published.value if published else None,
        published_buffers=published.buffers if published else 0,
        published_source=published.source if published else None,
        chinchilla_tokens=TOKENS_PER_PARAMETER * counts.total,
    )


def _flops_report(spec: ModelSpec, seq_len: int, attention: str, active: int,
                  finetune: FineTune, targets: tuple[str, ...]) -> FlopsReport:
    flops = count_flops(spec, seq_len, attention)
    adapters, train = 0, flops.train
    if finetune.frozen_base:  # calc.formulas.finetune: frozen weights skip weight gradients
        adapters, train = finetune_train_flops(spec, seq_len, attention, finetune, targets)
    return FlopsReport(
        seq_len=seq_len, attention=attention, forward=flops.forward, adapters_forward=adapters,
        backward=train - flops.forward - adapters, train=train,
        inference=flops.inference_per_token, attention_share=flops.attention_share,
        components={k: v for k, v in flops.components.items() if v},
        six_n=counting.FLOPS_PER_MULTIPLY_ADD * counting.TRAIN_PER_FORWARD * active,
        two_n=counting.FLOPS_PER_MULTIPLY_ADD * active,
        rules=rule_flops(spec, seq_len),
    )


def implied_mfu(flops: float, gpu_hours: float, peak_flops: float) -> float:
    """The MFU at which `flops` take `gpu_hours` on GPUs of dense peak `peak_flops` FLOP/s:
    GPU-hours = FLOPs / (peak × MFU) / 3600 (calc.formulas.training) solved for MFU."""
    return flops / (gpu_hours * 3600 * peak_flops)


def _published(run: PublishedRun | None, gpu: str | None, tokens: float, flops: float,
               flops_6nd: float, gpu_hours: float | None,
               peak: float | None) -> PublishedComparison | None:
    """The published run beside the estimate; a ratio only when tokens and GPU are the same."""
    if run is None:
        return None
    same = gpu is not None and gpu == run.gpu and tokens == run.tokens
    ratio = gpu_hours / run.gpu_hours if same and gpu_hours and run.gpu_hours else None
    priced = same and run.gpu_hours and peak
    return PublishedComparison(
        gpu_hours=run.gpu_hours, flops=run.flops, mfu=run.mfu, tokens=run.tokens, gpu=run.gpu,
        gpus=run.gpus, scope=run.scope, source=run.source, ratio=ratio,
        implied_mfu=implied_mfu(flops, run.gpu_hours, peak) if priced else None,
        implied_mfu_6nd=implied_mfu(flops_6nd, run.gpu_hours, peak) if priced else None)


def _training_report(preset: Preset, workload: Workload, flops: FlopsReport,
                     mfu_source: MFUSource, precision: str = "bf16",
                     low_precision: float = 0, costing: Costing | None = None) -> TrainingReport:
    assert workload.tokens is not None
    gpu = get_gpu(workload.gpu) if workload.gpu else None
    peak = gpu.peak_flops(workload.dtype) if gpu else None
    low_peak = None
    if gpu is not None and precision != "bf16":  # calc.formulas.precision
        low_peak, base = gemm_peaks(gpu, precision, workload.dtype)
        peak = effective_peak(flops.train, low_precision, base, low_peak)
    exact = training_cost(flops.train, workload.tokens, peak, workload.mfu, workload.gpus)
    rule = training_cost(flops.six_n, workload.tokens, peak, workload.mfu, workload.gpus)
    priced = _priced(costing, gpu, exact.gpu_hours)
    return TrainingReport(
        **priced, tokens=workload.tokens, flops=exact.flops, flops_6nd=rule.flops,
        gpu=gpu.name if gpu else None, gpu_title=gpu.title if gpu else None,
        dtype=workload.dtype, peak_flops=peak, mfu=workload.mfu, mfu_source=mfu_source,
        precision=precision, low_precision_peak=low_peak,
        low_precision_share=low_precision / flops.train if low_peak else None,
        gpus=workload.gpus, gpu_hours=exact.gpu_hours, gpu_hours_6nd=rule.gpu_hours,
        days=exact.days,
        published=_published(preset.training, gpu.name if gpu else None, workload.tokens,
                              exact.flops, rule.flops, exact.gpu_hours, peak),
    )


class Costing(Frozen):
    """What a run's cost and footprint are asked for: a price, a PUE, a grid intensity."""

    price: float | None = Field(None, gt=0, description="price of one GPU-hour")
    pue: float | None = Field(None, ge=1, le=10, description="power usage effectiveness")
    grid_intensity: float | None = Field(None, ge=0, le=10_000, description="g CO2e per kWh")
    energy: bool = Field(False, description="show energy even without pue or grid_intensity")


def _costing(price: float | None, pue: float | None, grid_intensity: float | None,
             energy: bool) -> Costing | None:
    try:
        costing = Costing(price=price, pue=pue, grid_intensity=grid_intensity, energy=energy)
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    asked = energy or price is not None or pue is not None or grid_intensity is not None
    return costing if asked else None


def _priced(costing: Costing | None, gpu: GPU | None, gpu_hours: float | None) -> dict[str, Any]:
    """The cost, energy and emissions fields of a TrainingReport (empty when not asked)."""
    if costing is None or gpu is None or gpu_hours is None:
        return {}
    wants_energy = costing.energy or costing.pue is not None or costing.grid_intensity is not None
    if wants_energy and gpu.tdp_w is None:
        raise CalcError(f"energy: {gpu.name} has no tdp_w in the GPU catalogue, so its energy "
                        f"is unknown; leave out pue/grid_intensity/energy")
    pue = DEFAULT_PUE if costing.pue is None else costing.pue
    money = run_cost(gpu_hours, costing.price, gpu.tdp_w if wants_energy else None, pue,
                     costing.grid_intensity)
    return {"price": costing.price, **money, "grid_intensity": costing.grid_intensity,
            "pue": pue if wants_energy else None,
            "pue_source": (DEFAULT_PUE_NOTE if costing.pue is None else "given")
            if wants_energy else None}


def estimate(model: str | ModelSpec | Preset, *, tokens: float | None = None,
             gpu: str | None = None, seq_len: int | None = None, attention: str = "causal",
             dtype: str = "bf16", mfu: float | None = None, gpus: int = 1,
             mfu_source: MFUSource | None = None, finetune: str | FineTune = "full",
             lora_rank: int | None = None, lora_targets: str | tuple[str, ...] | None = None,
             precision: str = "bf16", price: float | None = None, pue: float | None = None,
             grid_intensity: float | None = None, energy: bool = False,
             **finetune_extra: Any) -> Report:
    """The full report for a preset name, spec file path, ModelSpec or Preset.

    `mfu` defaults to calc.counting.DEFAULT_MFU (labelled "default"); `seq_len` to the model's
    training context. `finetune` 'lora' or 'qlora' trains adapters of `lora_rank` on
    `lora_targets` beside a frozen base, which changes the step's FLOPs (calc.memory takes the
    same options for memory). `precision` fp8, mxfp8 or nvfp4 runs the layers' projections at
    that peak (calc.spec.gemm_precision). `price` per GPU-hour gives the cost; `energy` (or a
    `pue`, default calc.counting.DEFAULT_PUE, or a `grid_intensity` in g CO2e/kWh) the energy from
    the GPU's TDP, and emissions (calc.formulas.cost). Bad input raises CalcError naming the
    field, value and what is allowed.
    """
    preset = resolve(model)
    spec = preset.spec
    try:
        workload = Workload(tokens=tokens, seq_len=seq_len, attention=attention, gpu=gpu,
                            dtype=dtype, mfu=DEFAULT_MFU if mfu is None else mfu, gpus=gpus)
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    t = sequence_length(spec, workload.seq_len)
    given = {"lora_rank": lora_rank, "lora_targets": lora_targets, **finetune_extra}
    ft = finetune_options(finetune, **{k: v for k, v in given.items() if v is not None})
    ft_block, adapters = finetune_block(spec, ft, dtype if dtype in BYTES_PER_ELEMENT else "bf16")
    params = _params_report(preset)
    flops = _flops_report(spec, t, workload.attention, params.active, ft, adapters.targets)
    source = mfu_source or ("default" if mfu is None else "flag")
    if precision not in GEMM_PRECISIONS:
        raise CalcError(f"precision={precision!r}: allowed {', '.join(GEMM_PRECISIONS)}")
    low = low_precision_train_flops(spec, ft, adapters.targets) if precision != "bf16" else 0
    costing = _costing(price, pue, grid_intensity, energy)
    training = (_training_report(preset, workload, flops, source, precision, low, costing)
                if workload.tokens is not None else None)
    if workload.gpu and training is None:
        get_gpu(workload.gpu)  # still reject an unknown GPU
    return Report(
        model=preset.name, title=preset.title, source=preset.source, spec=spec,
        params=params, flops_per_token=flops, training=training,
        finetune=ft_block if ft.frozen_base else None,
        conventions=_conventions(flops.attention, training,
                                 ft_block if ft.frozen_base else None),
    )


def _conventions(attention: str, training: TrainingReport | None,
                 finetune: FineTuneBlock | None = None) -> list[str]:
    """The convention sentences of a report counted under `attention`."""
    lines = [counting.PARAMETERS, counting.FLOPS, counting.ATTENTION[attention]]
    lines += finetune_sentences(finetune)[:2] if finetune else [counting.PASSES]
    if training is not None and training.peak_flops is not None:
        assert training.gpu is not None
        dtype = (training.dtype if training.precision == "bf16" else
                 f"{training.dtype} + {training.precision} effective")
        lines.append(counting.gpu_hours_sentence(dtype, training.gpu,
                                                 training.peak_flops, training.mfu,
                                                 training.mfu_source, training.gpus))
        if training.energy_kwh is not None or training.cost is not None:
            gpu = get_gpu(training.gpu)
            lines.append(counting.energy_sentence(
                gpu.name, gpu.tdp_w or 0, training.pue or DEFAULT_PUE,
                training.pue_source or DEFAULT_PUE_NOTE, training.grid_intensity))
        if training.precision != "bf16":
            lines.append(precision_sentence(training.precision) + f" The peak above is the "
                         f"effective one: training FLOPs / (FP8/FP4 FLOPs / their peak + the "
                         f"rest / the {training.dtype} peak).")
    lines.append(counting.UNITS)
    return lines
