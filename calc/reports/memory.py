"""Training memory of the most loaded GPU: `calc.memory("llama2-7b", gpu="a100", zero=3, dp=8)`.

Model states by precision recipe and ZeRO stage, activations after Korthikanti et al. 2022, the
total against the GPU's memory and the largest micro-batch that fits. The formulas are in
calc.formulas.memory; this module maps the options onto their symbols and labels the result.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field, ValidationError

from calc import _compiled
from calc.counting import Bytes, whole
from calc.document import Document
from calc.errors import CalcError, one_line
from calc.evaluate import count_params, finetune_values, gemm_values, symbol_values
from calc.presets import Preset, get_gpu, resolve, sequence_length
from calc.reports._offload import (
    OffloadBlock,
    offload_block,
    offload_options,
    offload_sentence,
)
from calc.reports._finetune import (
    FineTuneBlock,
    finetune_block,
    finetune_options,
    finetune_sentences,
)
from calc.spec import BYTES_PER_ELEMENT, GPU, OPTIMIZERS, RECIPES, ModelSpec, TrainingMemory
from calc.spec.gemm_precision import gemm_peaks, precision_sentence
from calc.spec.finetune import FineTune
from calc.spec.model import Frozen
from calc.trainers import read_trainer_config


class MemoryBlock(Frozen):
    options: TrainingMemory = Field(description="the options, recipe and seq_len resolved")
    params: int = Field(description="all parameters of the model")
    params_per_gpu: float = Field(description="parameters on the most loaded GPU (after t, p)")
    bytes_per_param: dict[str, int | float] = Field(
        description="model-state bytes per (trained) parameter by piece, before ZeRO sharding")
    weights_bytes: Bytes = Field(description="weights that train (all, or the adapters)")
    frozen_bytes: Bytes = Field(0, description="the frozen base (LoRA, QLoRA)")
    weight_copies_bytes: Bytes = Field(0, description="FP8/FP4 casts of the projection weights")
    gradients_bytes: Bytes = Field(description="gradients, and their fp32 copy if any")
    optimizer_bytes: Bytes = Field(description="optimizer states and fp32 master weights "
                                               "(ZeRO's K)")
    activations_bytes: Bytes = Field(description="stored for the backward pass, first stage")
    activations: dict[str, Bytes] = Field(description="layers, embedding, output layer")
    activations_per_layer_bytes: Bytes = Field(description="one dense layer, one micro-batch")
    total_bytes: Bytes
    paged_bytes: Bytes = Field(0, description="optimizer states a paged optimizer may move "
                                              "to the host; not counted against the GPU")
    finetune: FineTuneBlock = Field(description="what trains: trainable and frozen parameters")
    offload: OffloadBlock | None = Field(None, description="ZeRO-Offload/Infinity: what left "
                                                           "the GPU and where it went")
    gpu: str | None
    gpu_title: str | None = None
    gpu_bytes: int | None = Field(description="memory_gib × 2^30")
    fits: bool | None
    headroom_bytes: Bytes | None = Field(description="gpu_bytes − total_bytes (< 0: short)")
    max_micro_batch: int | None = Field(description="largest micro-batch that fits; 0 when "
                                                    "the model states alone do not")


class ConfigEcho(Frozen):
    """A trainer config read with --from: every setting read and what it became, every one
    ignored (calc.trainers)."""

    format: str
    path: str
    read: list[dict[str, Any]] = Field(description="key, value and what calc took from it")
    ignored: list[str] = Field(description="settings calc does not model")


class MemoryReport(Document):
    model: str
    title: str
    source: str
    memory: MemoryBlock
    config: ConfigEcho | None = Field(None, description="the trainer config read (--from)")
    conventions: list[str]


def _options(spec: ModelSpec, gpu: str | None, options: dict[str, Any]) -> TrainingMemory:
    """The validated options with their defaults resolved (recipe, seq_len)."""
    try:
        parsed = TrainingMemory(gpu=gpu, **options)
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    heads = spec.attention.n_heads
    if heads % parsed.tp:
        raise CalcError(f"tp={parsed.tp} must divide attention.n_heads={heads} of {spec.name} "
                        f"(tensor parallelism splits the heads)")
    if parsed.pp > spec.n_layers:
        raise CalcError(f"pp={parsed.pp} exceeds n_layers={spec.n_layers} of {spec.name} "
                        f"(each pipeline stage needs a layer)")
    seq_len = sequence_length(spec, parsed.seq_len)
    return parsed.model_copy(update={"recipe": parsed.recipe_name, "seq_len": seq_len})


def symbol_values_for(spec: ModelSpec, options: TrainingMemory, gpu: GPU | None,
                      finetune: FineTune | None = None,
                      targets: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every symbol calc.formulas.memory (and .finetune) uses, for `spec` trained with resolved
    `options`, fully or as `finetune` with adapters on the resolved `targets`."""
    counts = count_params(spec)
    recipe, optimizer = RECIPES[options.recipe_name], OPTIMIZERS[options.optimizer]
    finetune = finetune or FineTune()
    values = {
        **finetune_values(finetune, targets, recipe.weights),
        **symbol_values(spec), "T": options.seq_len, "b": options.micro_batch,
        "N": counts.total, "N_emb": counts.embedding, "N_head": counts.components["lm_head"],
        "n_tp": options.tp, "n_pp": options.pp, "n_dp": options.dp,
        "i_z1": int(options.zero >= 1), "i_z2": int(options.zero >= 2),
        "i_z3": int(options.zero >= 3), "i_pp1": int(options.pp == 1),
        "q_w": recipe.weights, "q_g": recipe.gradients, "q_gc": recipe.gradient_copy,
        "q_m": recipe.master, "q_o": optimizer.state_bytes,
        "q_a": BYTES_PER_ELEMENT[options.dtype], "i_drop": int(options.dropout),
        "i_sp": int(options.sequence_parallel),
        "i_scores": int(not options.flash_attention and options.recompute == "none"),
        "i_full": int(options.recompute == "full"),
        "M_gib": gpu.memory_gib if gpu else 0,
        **gemm_values(options.precision, BYTES_PER_ELEMENT[options.dtype]),
    }
    if optimizer.shaped:  # bytes per trained parameter from the shapes (calc.formulas.optimizer)
        frozen = finetune.frozen_base
        key = optimizer.shaped + ("_adapters" if frozen else "")
        trained = _compiled.finetune_counts(values)["adapters"] if frozen else counts.total
        values["q_o"] = _compiled.optimizer_states(values)[key] / trained
    return values


FINETUNE_OPTIONS = ("finetune", "lora_rank", "lora_targets", "base_dtype", "double_quant",
                    "paged")
OFFLOAD_OPTIONS = {"offload_optimizer": "optimizer", "offload_params": "params",
                   "system": "system", "host_memory_gib": "host_memory_gib",
                   "gpus_per_node": "gpus_per_node"}


def memory(model: str | ModelSpec | Preset | None = None, *, gpu: str | None = None,
           from_file: str | None = None, **options: Any) -> MemoryReport:
    """Training memory of the most loaded GPU for a preset name, spec file, ModelSpec or Preset.

    `options` are the fields of calc.spec.TrainingMemory (seq_len, micro_batch, dtype, recipe,
    optimizer, zero, dp, tp, pp, recompute, sequence_parallel, flash_attention, dropout,
    precision); `finetune` 'full', 'lora' or 'qlora' (or a calc.spec.finetune.FineTune), with
    the adapters' `lora_rank` and `lora_targets` ('q,v', 'all-linear'), QLoRA's `base_dtype`
    (nf4, fp4) and `double_quant`, and `paged` optimizer states; `offload_optimizer` /
    `offload_params` ('cpu' or 'nvme': DeepSpeed's ZeRO-Offload and ZeRO-Infinity), checked
    against a node's host memory (`system` from the catalogue, default the GPU's own, or
    `host_memory_gib` with `gpus_per_node`). `from_file` reads a trainer config (DeepSpeed,
    Megatron-LM, torchtitan, axolotl, transformers; calc.trainers) whose settings the options
    given here override, and whose model is used when `model` is None. Bad input raises
    CalcError naming the field, the value and what is allowed.
    """
    given = {key: value for key, value in options.items() if value is not None}
    echo = None
    if from_file is not None:
        config = read_trainer_config(from_file)
        given = {**config.options, **given}
        model = model if model is not None else config.model
        echo = ConfigEcho(format=config.format, path=config.path, ignored=config.ignored,
                          read=[{"key": x.key, "value": x.value, "meaning": x.meaning}
                                for x in config.read])
    if model is None:
        raise CalcError(f"model: {from_file} names no model calc knows; give a preset name, "
                        f"spec file or config.json as MODEL")
    finetune = given.pop("finetune", "full")
    ft = finetune_options(finetune, **{k: given.pop(k) for k in FINETUNE_OPTIONS[1:]
                                       if k in given})
    off = offload_options(**{OFFLOAD_OPTIONS[k]: given.pop(k) for k in list(given)
                             if k in OFFLOAD_OPTIONS})
    options = given
    preset = resolve(model)
    spec = preset.spec
    opts = _options(spec, gpu, options)
    ft_block, adapters = finetune_block(spec, ft, opts.dtype)
    device = get_gpu(gpu) if gpu else None
    if device is not None:
        gemm_peaks(device, opts.precision, opts.dtype)  # the GPU runs these GEMMs at all
    s = symbol_values_for(spec, opts, device, ft, adapters.targets)
    activations = _compiled.memory_activations(s)
    totals = _compiled.memory(s)
    params_per_gpu = _compiled.memory_states(s)["params_per_gpu"]
    if ft.frozen_base:  # adapters train, the base is frozen (calc.formulas.finetune)
        states = _compiled.finetune_states(s)
        tuned = _compiled.finetune_memory(s)
        activations = {**activations, "adapters": tuned["adapter_activations"]}
        totals = {**totals, "total": tuned["total"], "micro_batch_room": tuned["micro_batch_room"]}
    else:
        states = {**_compiled.memory_states(s), "frozen": 0}
    copies = _compiled.precision_memory(s)["weight_copies"]
    moved = offload_block(off, opts, device, s) if off.active else None
    change = copies + (moved.gpu_live_bytes - moved.gpu_freed_bytes if moved else 0)
    totals = {**totals, "total": totals["total"] + change}
    paged_bytes = states["optimizer"] if ft.paged else 0
    per_micro_batch = sum(activations.values()) / opts.micro_batch
    room = totals["micro_batch_room"] + (paged_bytes - change) / per_micro_batch
    on_gpu = totals["total"] - paged_bytes
    recipe = RECIPES[opts.recipe_name]
    block = MemoryBlock(
        options=opts, params=s["N"], params_per_gpu=params_per_gpu,
        bytes_per_param={"weights": recipe.weights, "gradients": recipe.gradients,
                         "gradient_copy": recipe.gradient_copy, "master": recipe.master,
                         "optimizer_states": s["q_o"]},
        weights_bytes=whole(states["weights"]), frozen_bytes=whole(states["frozen"]),
        weight_copies_bytes=whole(copies),
        gradients_bytes=whole(states["gradients"]),
        optimizer_bytes=whole(states["optimizer"]),
        activations_bytes=whole(sum(activations.values())),
        activations={key: whole(value) for key, value in activations.items()},
        activations_per_layer_bytes=whole(totals["activations_per_layer"]),
        total_bytes=whole(totals["total"]), paged_bytes=whole(paged_bytes), finetune=ft_block,
        offload=moved,
        gpu=device.name if device else None, gpu_title=device.title if device else None,
        gpu_bytes=whole(totals["gpu"]) if device else None,
        fits=on_gpu <= totals["gpu"] if device else None,
        headroom_bytes=whole(totals["gpu"] - on_gpu) if device else None,
        max_micro_batch=max(0, math.floor(room)) if device else None,
    )
    return MemoryReport(model=preset.name, title=preset.title, source=preset.source,
                        memory=block, config=echo, conventions=conventions(block))


def conventions(block: MemoryBlock) -> list[str]:
    """The sentences printed under the memory tables."""
    o = block.options
    recipe, optimizer = RECIPES[o.recipe_name], OPTIMIZERS[o.optimizer]
    per_param = sum(block.bytes_per_param.values())
    zero = {0: "no ZeRO: every data-parallel rank holds all model states",
            1: "ZeRO stage 1: optimizer states, fp32 master weights and any fp32 gradient "
               "copy are split over the N_d = {dp} data-parallel ranks",
            2: "ZeRO stage 2: gradients too are split over the N_d = {dp} ranks",
            3: "ZeRO stage 3: weights too are split over the N_d = {dp} ranks"}[o.zero]
    scores = ("flash attention stores no s×s scores" if o.flash_attention else
              "eager attention stores the s×s scores (the 5·a·s/h term)")
    kept = {"none": scores,
            "selective": "selective recomputation recomputes the attention core (no s×s "
                         "scores kept)",
            "full": "full recomputation keeps only each layer's input, s·b·h·q_a bytes"}
    sp = ("sequence parallelism splits norm inputs and dropout masks t ways"
          if o.sequence_parallel else
          "norm inputs and dropout masks are replicated on the t ranks (no sequence parallelism)")
    trained = ("" if block.finetune.method == "full" else
               " of each trained (adapter) parameter; the frozen base only its weights")
    return [
        f"Model states: recipe {o.recipe_name!r} ({recipe.label}) with {optimizer.label}: "
        f"{per_param:.4g} bytes per parameter before sharding{trained}. Sources: {recipe.source}; "
        f"{optimizer.source}.",
        "optimizer_bytes holds the optimizer states and the fp32 master weights (ZeRO's "
        f"K = {block.bytes_per_param['master'] + block.bytes_per_param['optimizer_states']:.4g}); "
        f"{zero.format(dp=o.dp)} (Rajbhandari et al. 2020 §5, Fig. 1).",
        f"Parallelism: the most loaded GPU holds 1/p = 1/{o.pp} of the layers and the "
        f"embedding (and an untied LM head when p = 1), split t = {o.tp} ways (Megatron-LM "
        f"theoretical_memory_usage.py); expert parallelism is not modelled.",
        f"Activations after Korthikanti et al. 2022 §4 (s·b·h·(34 + 5·a·s/h) per layer for "
        f"2-byte activations, 1-byte dropout masks, a 4h GeLU MLP), each tensor at this "
        f"model's widths: {kept[o.recompute]}; "
        f"{'dropout masks stored' if o.dropout else 'no dropout'}; {sp}. The first pipeline "
        f"stage holds L/p layers for p micro-batches in flight (1F1B), L layers' worth; the "
        f"embedding and output layer as Megatron-LM counts them.",
        "Not counted: temporary buffers (communication buckets, the logits' gradient), memory "
        "fragmentation and the CUDA context, which take a few more GB in practice.",
        *(finetune_sentences(block.finetune) if block.finetune.method != "full" else []),
        *([precision_sentence(o.precision)] if o.precision != "bf16" else []),
        *([offload_sentence(block.offload)] if block.offload else []),
        "Units: bytes; GB = 1e9 bytes (the ZeRO paper's unit: 7.5B × 16 bytes = 120 GB), "
        "GiB = 2^30 bytes; a GPU's memory is its catalogue memory_gib × 2^30 (vendors' "
        "'80GB' of HBM is 80 GiB).",
    ]
