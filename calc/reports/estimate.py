"""The main report: parameters, FLOPs per token and training cost of one model.

`estimate()` is the library's front door (`calc.estimate("llama2-7b", tokens=2e12, gpu="a100")`);
the CLI renders what it returns. `Report.to_dict()` is the JSON contract (tests/test_cli.py).
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
    finetune_train_flops,
    low_precision_train_flops,
    rule_flops,
)
from calc.plan.finetune import FineTuneBlock, finetune_block, finetune_of
from calc.plan.options import RunConfig, run_config
from calc.plan.training import (
    SEARCH_SETTINGS,
    MFUSource,
    TrainingReport,
    predicted_training,
    training_block,
)
from calc.presets import (
    Preset,
    context_note,
    get_gpu,
    resolve,
    sequence_length,
)
from calc.spec import BYTES_PER_ELEMENT, ModelSpec, Workload
from calc.spec.base import per_instance, per_instance_keyed
from calc.spec.costing import NOTHING_ASKED, Costing
from calc.spec.finetune import FULL_TRAINING, FineTune
from calc.spec.gemm_precision import precision_sentence
from calc.spec.model import Frozen
from calc.spec.trusted import checked

# The report's parts hold calc's own numbers: built unchecked (calc.spec.base.Frozen.unchecked),
# which is faster than validating, and builds no validator on the main command's start
# (bench/startup.py); tests/test_trusted.py validates the reports the tests build and compares.


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


class Report(Document):
    model: str
    title: str
    source: str
    spec: ModelSpec
    params: ParamsReport
    flops_per_token: FlopsReport
    training: TrainingReport | None = None
    finetune: FineTuneBlock | None = Field(None, description="LoRA/QLoRA: what trains")
    notes: list[str] = Field(
        default_factory=list,
        description="what this report assumes beyond the conventions: how the model's source "
                    "was read (context, defaulted fields), a context past the trained one, "
                    "options given that changed nothing")
    conventions: list[str]


@per_instance  # kept with the preset, as its counts are with the spec
def _params_report(preset: Preset) -> ParamsReport:
    spec = preset.spec
    counts = count_params(spec)
    n = spec.layer_counts  # layers of each kind: a key's per-layer count × its layers
    layers = {key: n["attention"] for key in counts.per_layer}
    layers["norms"] = spec.n_layers
    layers |= {key: n["dense"] for key in counts.per_dense_ffn}
    layers |= {key: n["moe"] for key in counts.per_moe_ffn}
    layers |= {key: n[key.split("/")[0]] for key in counts.per_mixer}
    layers |= dict.fromkeys(counts.per_indexer, spec.n_indexer_layers)
    per_layer = {**counts.per_layer, **counts.per_dense_ffn, **counts.per_moe_ffn,
                 **counts.per_mixer, **counts.per_indexer}
    if spec.shaped_kind:  # a component whose layers differ by kind has no one per-layer count
        other = count_params(spec.for_kind(spec.shaped_kind)).per_layer
        per_layer |= {key: 0 for key, value in other.items() if per_layer[key] != value}
    published = preset.published_params
    return ParamsReport.unchecked(
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


def _flops_report(spec: ModelSpec, seq_len: int, attention: str, finetune: FineTune,
                  targets: tuple[str, ...]) -> FlopsReport:
    if not finetune.frozen_base:
        return _trained_flops_report(spec, seq_len, attention)
    # calc.formulas.finetune: frozen weights skip weight gradients
    adapters, train = finetune_train_flops(spec, seq_len, attention, finetune, targets)
    return _flops_labelled(spec, seq_len, attention, adapters, train)


@per_instance_keyed  # every weight trains: what the spec and the sequence determine, kept
def _trained_flops_report(spec: ModelSpec, seq_len: int, attention: str) -> FlopsReport:
    return _flops_labelled(spec, seq_len, attention, 0,
                           count_flops(spec, seq_len, attention).train)


def _flops_labelled(spec: ModelSpec, seq_len: int, attention: str, adapters: int | float,
                    train: int | float) -> FlopsReport:
    flops = count_flops(spec, seq_len, attention)
    active = count_params(spec).active
    return FlopsReport.unchecked(
        seq_len=seq_len, attention=attention, forward=flops.forward, adapters_forward=adapters,
        backward=train - flops.forward - adapters, train=train,
        inference=flops.inference_per_token, attention_share=flops.attention_share,
        components={k: v for k, v in flops.components.items() if v},
        six_n=counting.FLOPS_PER_MULTIPLY_ADD * counting.TRAIN_PER_FORWARD * active,
        two_n=counting.FLOPS_PER_MULTIPLY_ADD * active,
        rules=rule_flops(spec, seq_len),
    )


# The options the main report takes (calc.plan.options): a layout prices the tokens at a
# predicted MFU; the fine-tuning changes the FLOPs; the GEMM precision the peak; the costing
# prices the GPU-hours. Its workload (tokens, context, dtype, GPUs) are its own arguments.
OPTIONS = ("layout", "finetune", "costing")


def estimate(model: str | ModelSpec | Preset, *, tokens: float | None = None,
             gpu: str | None = None, gpus: int = 1, seq_len: int | None = None,
             attention: str = "causal", dtype: str = "bf16", mfu: float | None = None,
             mfu_source: MFUSource | None = None, system: str | None = None,
             search_layout: bool = False, run: RunConfig | None = None,
             **options: Any) -> Report:
    """The full report for a preset name, spec file path, ModelSpec or Preset.

    `mfu` defaults to calc.counting.DEFAULT_MFU (labelled "default"); `seq_len` to the model's
    training context. The run's options (a calc.plan.options.RunConfig `run`, or its options as
    keywords over it): a layout's fields (tp, pp, dp, micro_batch, global_batch, ...) or
    `search_layout` price the tokens at the MFU calc.step predicts (`training.predicted`);
    `finetune` 'lora' or 'qlora' trains adapters of `lora_rank` on `lora_targets` beside a
    frozen base, which changes the step's FLOPs (calc.memory takes the same options for memory);
    `precision` fp8, mxfp8 or nvfp4 runs the layers' projections at that peak
    (calc.spec.gemm_precision); `price` per GPU-hour gives the cost, `energy` (or a `pue`,
    default calc.counting.DEFAULT_PUE, or a `grid_intensity` in g CO2e/kWh) the energy from the
    GPU's TDP and the emissions (calc.formulas.cost). Bad input raises CalcError naming the
    field, value and what is allowed.
    """
    given = run_config(run, **options)
    plain = given.empty  # the hot path: no option to read (bench/estimate.py)
    unused = [] if plain else sorted(
        set(given.given()) - set(given.given(*OPTIONS)) - {"precision"})
    if unused:
        raise CalcError(f"estimate: {', '.join(unused)} change a run's memory, not its FLOPs "
                        f"or GPU-hours (python -m calc memory takes them)")
    preset = resolve(model)
    spec = preset.spec
    try:  # checked as Workload validates, without building its validator (calc.spec.trusted)
        workload = checked(Workload, {
            "tokens": tokens, "seq_len": seq_len, "attention": attention, "gpu": gpu,
            "dtype": dtype, "mfu": DEFAULT_MFU if mfu is None else mfu, "gpus": gpus})
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    t = sequence_length(spec, workload.seq_len)
    ft = FULL_TRAINING if plain else finetune_of(given)
    ft_block, adapters = (finetune_block(spec, ft, dtype if dtype in BYTES_PER_ELEMENT
                                         else "bf16") if ft.frozen_base else (None, None))
    targets = adapters.targets if adapters else ()
    params = _params_report(preset)
    flops = _flops_report(spec, t, workload.attention, ft, targets)
    source = mfu_source or ("default" if mfu is None else "flag")
    precision = "bf16" if plain else given.get("precision") or "bf16"
    low = low_precision_train_flops(spec, ft, targets) if precision != "bf16" else 0
    costing = {} if plain else given.given("costing")
    asked = checked(Costing, costing) if costing else NOTHING_ASKED
    training = (training_block(preset, workload, flops, source, precision, low, asked)
                if workload.tokens is not None else None)
    if workload.gpu and training is None:
        get_gpu(workload.gpu)  # still reject an unknown GPU
    parallel = {} if plain else given.given("layout")
    if parallel or search_layout:
        if training is None or workload.gpu is None:
            raise CalcError("a layout (or --search-layout) prices GPU-hours: give --tokens and "
                            "--gpu too")
        chosen = set(parallel) - set(SEARCH_SETTINGS)
        if search_layout and chosen:
            raise CalcError(f"layout fields {', '.join(sorted(chosen))} and search_layout: the "
                            f"search chooses every degree; only "
                            f"{', '.join(SEARCH_SETTINGS)} go with it")
        predicted = predicted_training(
            preset, tokens=training.tokens, gpu=workload.gpu, gpus=workload.gpus, seq_len=t,
            dtype=workload.dtype, system=system, parallel=parallel,
            search_layout=search_layout)
        training = training.model_copy(update={"predicted": predicted})
    notes = [*preset.notes, *filter(None, [context_note(spec, t)])]
    if (kind := spec.shaped_kind) is not None:
        notes.append(counting.kind_shapes_sentence(
            kind, spec.shaped_layers, (spec.heads_of(kind), spec.sinks_of(kind)),
            (spec.heads_of(""), spec.sinks_of(""))))
    as_values = tuple(kind for kind in sorted(set(spec.attention_kinds) - {""})
                      if spec.keys_are_values(kind))
    if spec.attention.kv_shared_layers or as_values:
        notes.append(counting.kv_sharing_sentence(spec.attention.kv_shared_layers, as_values,
                                                  spec.double_wide_layers))
    if (moe := spec.moe) is not None and (moe.n_zero_experts or moe.shortcut):
        notes.append(counting.zero_experts_sentence(moe.top_k, moe.n_experts,
                                                    moe.n_zero_experts, moe.experts_per_token,
                                                    moe.shortcut))
    unused_workload = [f"{name}={value!r}" for name, value, given_ in (
        ("gpu", gpu, gpu), ("gpus", gpus, gpus != 1), ("mfu", mfu, mfu is not None)) if given_]
    if training is None and unused_workload:
        notes.append(f"{', '.join(unused_workload)} given without tokens: they price a "
                     f"training run, so nothing used them; give tokens (--tokens 2e12) for "
                     f"GPU-hours and days.")
    return Report.unchecked(
        model=preset.name, title=preset.title, source=preset.source, spec=spec,
        params=params, flops_per_token=flops, training=training, notes=notes,
        finetune=ft_block,
        conventions=_conventions(flops.attention, training, ft_block, _part_sentences(spec)),
    )


def _part_sentences(spec: ModelSpec) -> list[str]:
    """The convention sentences of the parts `spec` has beyond attention and FFNs: DSA's
    indexer or MiniMax-M3's block-sparse one, DeepSeek-V4's compressed layers, differential
    attention, Doge's dynamic mask and product-key experts, Inkling's relative bias and
    residual convolutions, ZAYA1's CCA and MLP router, residual scales, a shared block, looped
    layers, nGPT's scales, per-layer embeddings, Gemma 3n's AltUp or LAuReL, cross-attention
    layers, hyper-connections, and the scans (Mamba, gated DeltaNet, short convolutions and the
    other recurrent mixers)."""
    att = spec.attention
    parts = ((att.indexer is not None and att.mla is not None, counting.SPARSE_ATTENTION),
             (att.indexer is not None and att.mla is None and not att.indexer.pooled,
              counting.BLOCK_SPARSE_ATTENTION),
             (att.indexer is not None and att.indexer.pooled, counting.QSA_ATTENTION),
             (att.compression is not None, counting.COMPRESSED_ATTENTION),
             (att.differential, counting.DIFFERENTIAL_ATTENTION),
             (att.dynamic_mask is not None, counting.DYNAMIC_MASK),
             (spec.moe is not None and spec.moe.product_keys, counting.PRODUCT_KEYS),
             (spec.residual_scales is not None, counting.RESIDUAL_SCALES),
             (att.relative_logits is not None, counting.RELATIVE_LOGITS),
             (att.sink_proj, counting.SINK_PROJ),
             (spec.residual_conv is not None, counting.RESIDUAL_CONVS),
             (bool(spec.residual_conv_taps), counting.CONV_TAPS),
             (spec.block_residual is not None, counting.BLOCK_RESIDUAL),
             (spec.shared_block is not None, counting.SHARED_BLOCK),
             (spec.loop is not None, counting.LOOP),
             (spec.ngpt, counting.NGPT),
             (spec.per_layer_embeddings is not None, counting.PER_LAYER_EMBEDDINGS),
             (spec.altup is not None or spec.laurel is not None, counting.ALTUP_LAUREL),
             (spec.cross_attention is not None, counting.CROSS_ATTENTION),
             (att.cca is not None, counting.CCA),
             (spec.hyper_connections is not None, counting.HYPER_CONNECTIONS),
             (spec.moe is not None and spec.moe.router_mlp is not None, counting.ROUTER_MLP),
             (spec.residual_scales is not None, counting.RESIDUAL_SCALES),
             (bool(set(spec.mixer_kinds) - {"attention", "cross_attention"}), counting.SCANS))
    return [sentence for has, sentence in parts if has]


def _conventions(attention: str, training: TrainingReport | None,
                 finetune: FineTuneBlock | None, parts: list[str]) -> list[str]:
    """The convention sentences of a report counted under `attention`, with its model's
    `parts` (_part_sentences)."""
    lines = [counting.PARAMETERS, counting.FLOPS, counting.ATTENTION[attention], *parts]
    lines += ([counting.lora_sentence(finetune.method, finetune.rank, finetune.targets),
               counting.FINETUNE_PASSES] if finetune else [counting.PASSES])
    if training is not None and training.peak_flops is not None:
        assert training.gpu is not None
        dtype = (training.dtype if training.precision == "bf16" else
                 f"{training.dtype} + {training.precision} effective")
        lines.append(counting.gpu_hours_sentence(dtype, training.gpu, training.peak_flops,
                                                 training.mfu, training.mfu_source,
                                                 training.gpus))
        if training.energy_kwh is not None or training.cost is not None:
            gpu = get_gpu(training.gpu)
            lines.append(counting.energy_sentence(
                gpu.name, gpu.tdp_w or 0, training.pue or DEFAULT_PUE,
                training.pue_source or DEFAULT_PUE_NOTE, training.grid_intensity))
        if training.precision != "bf16":
            lines.append(precision_sentence(training.precision) + " The peak above is the "
                         "effective one: training FLOPs / (FP8/FP4 FLOPs / their peak + the "
                         f"rest / the {training.dtype} peak).")
    if training is not None and training.predicted is not None:
        lines.append(counting.PREDICTED_MFU)
    lines.append(counting.UNITS)
    return lines
