"""The main report: parameters, FLOPs per token and training cost of one model.

`estimate()` is the library's front door (`calc.estimate("llama2-7b", tokens=2e12, gpu="a100")`);
the CLI renders what it returns. `Report.to_dict()` is the JSON contract of DESIGN.md.
"""

from __future__ import annotations

from pydantic import Field, ValidationError

from calc import counting
from calc.counting import DEFAULT_MFU, TOKENS_PER_PARAMETER
from calc.document import Document
from calc.errors import CalcError, one_line
from calc.evaluate import count_flops, count_params, rule_flops, training_cost
from calc.presets import Preset, PublishedRun, get_gpu, resolve, sequence_length
from calc.spec import ModelSpec, Workload
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
    backward: int | float
    train: int | float
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
    peak_flops: float | None = Field(description="dense peak FLOP/s of one GPU at dtype")
    mfu: float
    mfu_source: MFUSource
    gpus: int
    gpu_hours: float | None
    gpu_hours_6nd: float | None
    days: float | None = Field(description="wall-clock days on `gpus` GPUs")
    published: PublishedComparison | None = None


class Report(Document):
    model: str
    title: str
    source: str
    spec: ModelSpec
    params: ParamsReport
    flops_per_token: FlopsReport
    training: TrainingReport | None = None
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


def _flops_report(spec: ModelSpec, seq_len: int, attention: str, active: int) -> FlopsReport:
    flops = count_flops(spec, seq_len, attention)
    return FlopsReport(
        seq_len=seq_len, attention=attention,
        forward=flops.forward, backward=flops.backward, train=flops.train,
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
                     mfu_source: MFUSource) -> TrainingReport:
    assert workload.tokens is not None
    gpu = get_gpu(workload.gpu) if workload.gpu else None
    peak = gpu.peak_flops(workload.dtype) if gpu else None
    exact = training_cost(flops.train, workload.tokens, peak, workload.mfu, workload.gpus)
    rule = training_cost(flops.six_n, workload.tokens, peak, workload.mfu, workload.gpus)
    return TrainingReport(
        tokens=workload.tokens, flops=exact.flops, flops_6nd=rule.flops,
        gpu=gpu.name if gpu else None, gpu_title=gpu.title if gpu else None,
        dtype=workload.dtype, peak_flops=peak, mfu=workload.mfu, mfu_source=mfu_source,
        gpus=workload.gpus, gpu_hours=exact.gpu_hours, gpu_hours_6nd=rule.gpu_hours,
        days=exact.days,
        published=_published(preset.training, gpu.name if gpu else None, workload.tokens,
                              exact.flops, rule.flops, exact.gpu_hours, peak),
    )


def estimate(model: str | ModelSpec | Preset, *, tokens: float | None = None,
             gpu: str | None = None, seq_len: int | None = None, attention: str = "causal",
             dtype: str = "bf16", mfu: float | None = None, gpus: int = 1,
             mfu_source: MFUSource | None = None) -> Report:
    """The full report for a preset name, spec file path, ModelSpec or Preset.

    `mfu` defaults to calc.counting.DEFAULT_MFU (labelled "default"); `seq_len` to the model's
    training context. Bad input raises CalcError naming the field, value and what is allowed.
    """
    preset = resolve(model)
    spec = preset.spec
    try:
        workload = Workload(tokens=tokens, seq_len=seq_len, attention=attention, gpu=gpu,
                            dtype=dtype, mfu=DEFAULT_MFU if mfu is None else mfu, gpus=gpus)
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    t = sequence_length(spec, workload.seq_len)
    params = _params_report(preset)
    flops = _flops_report(spec, t, workload.attention, params.active)
    source = mfu_source or ("default" if mfu is None else "flag")
    training = (_training_report(preset, workload, flops, source)
                if workload.tokens is not None else None)
    if workload.gpu and training is None:
        get_gpu(workload.gpu)  # still reject an unknown GPU
    return Report(
        model=preset.name, title=preset.title, source=preset.source, spec=spec,
        params=params, flops_per_token=flops, training=training,
        conventions=[*_conventions(flops.attention, training), *preset.notes],
    )


def _conventions(attention: str, training: TrainingReport | None) -> list[str]:
    """The convention sentences of a report counted under `attention`."""
    lines = [counting.PARAMETERS, counting.FLOPS, counting.ATTENTION[attention], counting.PASSES]
    if training is not None and training.peak_flops is not None:
        assert training.gpu is not None
        lines.append(counting.gpu_hours_sentence(training.dtype, training.gpu,
                                                 training.peak_flops, training.mfu,
                                                 training.mfu_source, training.gpus))
    lines.append(counting.UNITS)
    return lines
