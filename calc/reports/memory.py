"""Training memory of the most loaded GPU: `calc.memory("llama2-7b", gpu="a100", zero=3, dp=8)`.

Model states by precision recipe and ZeRO stage, activations after Korthikanti et al. 2022, the
total against the GPU's memory and the largest micro-batch that fits. The formulas are in
calc.formulas.memory; this module maps the options onto their symbols and labels the result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError

from calc import _compiled
from calc.counting import Bytes, whole
from calc.document import Document
from calc.errors import CalcError, one_line
from calc.evaluate import (
    count_params,
    finetune_values,
    gemm_values,
    stage_values,
    symbol_values,
)
from calc.presets import Preset, context_note, get_gpu, resolve, sequence_length
from calc.reports._finetune import FineTuneBlock, finetune_block, finetune_sentences
from calc.reports._memory_options import ConfigEcho, split_options
from calc.reports._offload import OffloadBlock, offload_block, offload_sentence
from calc.spec import BYTES_PER_ELEMENT, GPU, OPTIMIZERS, RECIPES, ModelSpec, TrainingMemory
from calc.spec.finetune import FineTune
from calc.spec.gemm_precision import gemm_peaks, precision_sentence
from calc.spec.layers import MIXER_NAMES
from calc.spec.layout import check_splits
from calc.spec.model import Frozen
from calc.spec.offload import Offload


class Fix(Frozen):
    """A change of the options that makes the run fit: the smallest of its kind (FIXES)."""

    changes: dict[str, int | str] = Field(description="TrainingMemory fields and new values")
    total_bytes: Bytes
    max_micro_batch: int


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
    activations_per_layer_bytes: Bytes | None = Field(
        description="one attention layer with a dense FFN, one micro-batch (None without "
                    "attention layers)")
    activations_per_mixer_bytes: dict[str, Bytes] = Field(
        default_factory=dict, description="one Mamba, gated DeltaNet or short-convolution "
                                          "mixer (the kinds the model has), one micro-batch")
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
                                                    "not even one does")
    states_bytes: Bytes = Field(description="weights (frozen ones too) + gradients + "
                                            "optimizer states, on the GPU")
    layers: int = Field(description="the model's layers L")
    stage_layers: int = Field(description="layers on the most loaded GPU: ⌈L/p⌉")
    kv_heads: int = Field(description="the model's key/value heads (MLA: its query heads)")
    short: Literal["model states", "activations"] | None = Field(
        None, description="what does not fit: the model states alone, or the activations of "
                          "one micro-batch beside them; None when it fits or without a GPU")
    fixes: list[Fix] = Field(
        default_factory=list,
        description="when it does not fit: for each kind of change (FIXES: recompute, tp, pp, "
                    "cp, ZeRO, ZeRO-3 over more dp ranks) the smallest that fits")


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
    check_splits(spec, parsed.tp, parsed.cp, ffn=False)
    if parsed.pp > spec.n_layers:
        raise CalcError(f"pp={parsed.pp} exceeds n_layers={spec.n_layers} of {spec.name} "
                        f"(each pipeline stage needs a layer)")
    if parsed.vpp > 1 and parsed.pp == 1:
        raise CalcError(f"vpp={parsed.vpp} needs pp > 1 (virtual stages interleave a pipeline)")
    if parsed.split_embedding_loss and parsed.pp == 1:
        raise CalcError("split_embedding_loss needs pp > 1 (it balances pipeline stages)")
    if parsed.ep > 1:
        experts = spec.moe.n_experts if spec.moe else 0
        if experts % parsed.ep or not experts:
            raise CalcError(f"ep={parsed.ep} must divide moe.n_experts={experts} of {spec.name}")
        if parsed.dp % parsed.ep:
            raise CalcError(f"ep={parsed.ep} must divide dp={parsed.dp} (expert parallelism is "
                            f"carved out of the data-parallel ranks)")
    seq_len = sequence_length(spec, parsed.seq_len)
    if seq_len % parsed.cp:
        raise CalcError(f"cp={parsed.cp} must divide seq_len={seq_len} (each GPU holds s/cp "
                        f"tokens of a sequence)")
    return parsed.model_copy(update={"recipe": parsed.recipe_name, "seq_len": seq_len})


def symbol_values_for(spec: ModelSpec, options: TrainingMemory, gpu: GPU | None,
                      finetune: FineTune | None = None,
                      targets: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every symbol calc.formulas.memory (and .finetune, .precision, .offload) uses, for `spec`
    trained with resolved `options`, fully or as `finetune` with adapters on `targets`."""
    counts = count_params(spec)
    recipe, optimizer = RECIPES[options.recipe_name], OPTIMIZERS[options.optimizer]
    finetune = finetune or FineTune()
    values = {
        **finetune_values(finetune, targets, recipe.weights),
        **gemm_values(options.precision, BYTES_PER_ELEMENT[options.dtype]),
        **symbol_values(spec), "T": options.seq_len, "b": options.micro_batch,
        **stage_values(spec, options.tp, options.pp, options.split_embedding_loss),
        "N": counts.total, "N_emb": counts.embedding, "N_head": counts.components["lm_head"],
        "N_e": counts.components["moe/experts"],
        "n_tp": options.tp, "n_pp": options.pp, "n_dp": options.dp, "n_cp": options.cp,
        "n_ep": options.ep, "n_vp": options.vpp, "i_vp": int(options.vpp > 1),
        "i_z1": int(options.zero >= 1), "i_z2": int(options.zero >= 2),
        "i_z3": int(options.zero >= 3), "i_pp1": int(options.pp == 1),
        "q_w": recipe.weights, "q_g": recipe.gradients, "q_gc": recipe.gradient_copy,
        "q_m": recipe.master, "q_o": optimizer.state_bytes,
        "q_a": BYTES_PER_ELEMENT[options.dtype], "i_drop": int(options.dropout),
        "i_sp": int(options.sequence_parallel),
        "i_scores": int(not options.flash_attention and options.recompute == "none"),
        "i_full": int(options.recompute == "full"),
        "M_gib": gpu.memory_gib if gpu else 0,
    }
    if optimizer.shaped:  # bytes per trained parameter from the shapes (calc.formulas.optimizer)
        frozen = finetune.frozen_base
        key = optimizer.shaped + ("_adapters" if frozen else "")
        trained = _compiled.finetune_counts(values)["adapters"] if frozen else counts.total
        values["q_o"] = _compiled.optimizer_states(values)[key] / trained
    return values


@dataclass(frozen=True)
class _Evaluated:
    """The memory of one set of options, fine-tuning, precision and offload folded in."""

    s: dict[str, Any]
    states: dict[str, Any]  # weights, frozen, gradients, optimizer
    activations: dict[str, Any]
    per_layer: float
    per_mixer: dict[str, float]  # 'mamba', 'deltanet', 'conv' -> one mixer, one micro-batch
    copies: float  # FP8/FP4 weight casts
    moved: OffloadBlock | None
    paged: float  # optimizer states a paged optimizer may move to the host
    total: float  # everything on the GPU, paged states included
    gpu: float
    room: float  # micro-batches the memory holds (paged states evicted)

    @property
    def on_gpu(self) -> float:
        return self.total - self.paged


def _evaluate(spec: ModelSpec, opts: TrainingMemory, device: GPU | None, ft: FineTune,
              targets: tuple[str, ...], off: Offload) -> _Evaluated:
    s = symbol_values_for(spec, opts, device, ft, targets)
    activations = _compiled.memory_activations(s)
    totals = _compiled.memory(s)
    if ft.frozen_base:  # adapters train, the base is frozen (calc.formulas.finetune)
        states = _compiled.finetune_states(s)
        tuned = _compiled.finetune_memory(s)
        activations = {**activations, "adapters": tuned["adapter_activations"]}
        total, room = tuned["total"], tuned["micro_batch_room"]
    else:
        states = {**_compiled.memory_states(s), "frozen": 0}
        total, room = totals["total"], totals["micro_batch_room"]
    copies = _compiled.precision_memory(s)["weight_copies"]
    moved = offload_block(off, opts, device, s) if off.active else None
    change = copies + (moved.gpu_live_bytes - moved.gpu_freed_bytes if moved else 0)
    paged = states["optimizer"] if ft.paged else 0
    per_micro_batch = sum(activations.values()) / opts.micro_batch
    per_mixer = {key.removeprefix("activations_per_"): value for key, value in totals.items()
                 if key.startswith("activations_per_") and key != "activations_per_layer"}
    return _Evaluated(s, states, activations, totals["activations_per_layer"], per_mixer,
                      copies, moved,
                      paged, total + change, totals["gpu"],
                      room + (paged - change) / per_micro_batch)


def memory(model: str | ModelSpec | Preset | None = None, *, gpu: str | None = None,
           from_file: str | None = None, **options: Any) -> MemoryReport:
    """Training memory of the most loaded GPU for a preset name, spec file, ModelSpec or Preset.

    `options` are the fields of calc.spec.TrainingMemory (seq_len, micro_batch, dtype, recipe,
    optimizer, zero, dp, tp, pp, cp, ep, vpp, split_embedding_loss, recompute,
    sequence_parallel, flash_attention, dropout, precision); `finetune` 'full', 'lora' or
    'qlora' (or a calc.spec.finetune.FineTune) with the adapters' `lora_rank` and
    `lora_targets` ('q,v', 'all-linear'), QLoRA's `base_dtype` (nf4, fp4) and `double_quant`,
    and `paged` optimizer states;
    `offload_optimizer` / `offload_params` ('cpu' or 'nvme': ZeRO-Offload, ZeRO-Infinity),
    checked against a node's host memory (`system`, default the GPU's own, or
    `host_memory_gib` with `gpus_per_node`). `from_file` reads a trainer config (DeepSpeed,
    Megatron-LM, torchtitan, axolotl, transformers; calc.trainers) whose settings the options
    given here override, and whose model is used when `model` is None. Bad input raises
    CalcError naming the field, the value and what is allowed.
    """
    model, options, ft, off, echo = split_options(model, from_file, options)
    preset = resolve(model)
    spec = preset.spec
    opts = _options(spec, gpu, options)
    ft_block, adapters = finetune_block(spec, ft, opts.dtype)
    device = get_gpu(gpu) if gpu else None
    if device is not None:
        gemm_peaks(device, opts.precision, opts.dtype)  # the GPU runs these GEMMs at all
    e = _evaluate(spec, opts, device, ft, adapters.targets, off)
    recipe = RECIPES[opts.recipe_name]
    states = e.states
    states_total = e.on_gpu - sum(e.activations.values())  # offload, copies, paging folded in
    fits = e.on_gpu <= e.gpu if device else None
    short = None if fits is not False else (
        "model states" if states_total > e.gpu else "activations")
    block = MemoryBlock(
        options=opts, params=e.s["N"],
        params_per_gpu=_compiled.memory_states(e.s)["params_per_gpu"],
        bytes_per_param={"weights": recipe.weights, "gradients": recipe.gradients,
                         "gradient_copy": recipe.gradient_copy, "master": recipe.master,
                         "optimizer_states": e.s["q_o"]},
        weights_bytes=whole(states["weights"]), frozen_bytes=whole(states["frozen"]),
        weight_copies_bytes=whole(e.copies), gradients_bytes=whole(states["gradients"]),
        optimizer_bytes=whole(states["optimizer"]),
        activations_bytes=whole(sum(e.activations.values())),
        activations={key: whole(value) for key, value in e.activations.items()},
        activations_per_layer_bytes=whole(e.per_layer) if spec.n_attention_layers else None,
        activations_per_mixer_bytes={kind: whole(value) for kind, value in e.per_mixer.items()
                                     if spec.layer_counts[kind]},
        total_bytes=whole(e.total), paged_bytes=whole(e.paged), finetune=ft_block,
        offload=e.moved,
        gpu=device.name if device else None, gpu_title=device.title if device else None,
        gpu_bytes=whole(e.gpu) if device else None,
        fits=fits, headroom_bytes=whole(e.gpu - e.on_gpu) if device else None,
        max_micro_batch=max(0, math.floor(e.room)) if device else None,
        states_bytes=whole(states_total), short=short, layers=spec.n_layers,
        stage_layers=e.s["L_s"], kv_heads=spec.n_kv_heads,
        fixes=_fixes(spec, opts, device, ft, adapters.targets, off) if device and not fits
        else [],
    )
    notes = [*preset.notes, *filter(None, [context_note(spec, opts.seq_len, "s")])]
    return MemoryReport(model=preset.name, title=preset.title, source=preset.source,
                        memory=block, config=echo, conventions=[*notes, *conventions(block)])


MIXERS_SENTENCE = (
    "{kinds} layers keep what their fused kernels save for the backward pass (the scan's "
    "states are recomputed from the saved inputs: Gu & Dao 2023 §3.3.2; Dao & Gu 2024 §6): "
    "Mamba-1 xz, the scan output, x_dbl and B, C (state-spaces/mamba MambaInnerFn); Mamba-2 "
    "zxbcdt and the scan output (MambaSplitConv1dScanCombinedFn); gated DeltaNet the conv "
    "input, q, k, v, β, g, the 64-token chunks' WY matrices and the gated norm's inputs "
    "(flash-linear-attention chunk_gated_delta_rule); a short convolution B, C, x, B⊙x, the "
    "conv output and out_proj's input; split t ways by heads or channels as Megatron-LM's "
    "MambaMixer and GatedDeltaNet and vLLM's MambaMixer and ShortConv split them "
    "(calc.formulas.mixers).")


# What a run that does not fit could change, in the order tried; each group's candidates from
# the least change to the most (degrees by powers of two, as layouts are chosen). The last group
# shards the model states over more data-parallel ranks, which only ZeRO-3 does fully.
_POWERS = tuple(2**i for i in range(1, 17))
FIXES: dict[str, tuple[dict[str, int | str], ...]] = {
    "recompute": ({"recompute": "selective"}, {"recompute": "full"}),
    "tp": tuple({"tp": n} for n in _POWERS[:6]),
    "pp": tuple({"pp": n} for n in _POWERS[:7]),
    "cp": tuple({"cp": n} for n in _POWERS[:6]),
    "zero": tuple({"zero": n} for n in (1, 2, 3)),
    "zero-3 dp": tuple({"zero": 3, "dp": n} for n in _POWERS),
}
_RECOMPUTE = ("none", "selective", "full")


def _beyond(current: dict[str, Any], changes: dict[str, int | str]) -> bool:
    """Whether `changes` go further than `current` in every option they name."""
    def rank(key: str, value: int | str) -> int:
        return _RECOMPUTE.index(value) if key == "recompute" else int(value)
    return all(rank(k, v) >= rank(k, current[k]) for k, v in changes.items()) and any(
        v != current[k] for k, v in changes.items())


def _fixes(spec: ModelSpec, opts: TrainingMemory, device: GPU, ft: FineTune,
           targets: tuple[str, ...], off: Offload) -> list[Fix]:
    """For each group of FIXES, the smallest change in it that makes the run fit."""
    found = []
    current = opts.model_dump(exclude={"gpu"})
    for candidates in FIXES.values():
        for changes in (c for c in candidates if _beyond(current, c)):
            try:
                changed = _options(spec, device.name, {**current, **changes})
                e = _evaluate(spec, changed, device, ft, targets, off)
            except CalcError:  # e.g. a tp that does not divide the heads, or no host memory
                continue
            if e.on_gpu <= e.gpu:
                found.append(Fix(changes=changes, total_bytes=whole(e.total),
                                 max_micro_batch=math.floor(e.room)))
                break
    return found


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
    kv_heads = block.kv_heads
    kv = (f"with t > {kv_heads} KV heads each rank holds one whole KV head, each head "
          f"replicated t/{kv_heads} = {o.tp // kv_heads} times (as vLLM's QKVParallelLinear "
          f"does)" if o.tp > kv_heads else f"the {kv_heads} KV heads split t ways")
    sp = ("sequence parallelism splits norm inputs and dropout masks t ways"
          if o.sequence_parallel else
          "norm inputs and dropout masks are replicated on the t ranks (no sequence parallelism)")
    trained = ("" if block.finetune.method == "full" else
               " of each trained (adapter) parameter; the frozen base only its weights")
    k = block.bytes_per_param["master"] + block.bytes_per_param["optimizer_states"]
    return [
        f"Model states: recipe {o.recipe_name!r} ({recipe.label}) with {optimizer.label}: "
        f"{per_param:.4g} bytes per parameter before sharding{trained}. Sources: "
        f"{recipe.source}; {optimizer.source}.",
        f"optimizer_bytes holds the optimizer states and the fp32 master weights (ZeRO's "
        f"K = {k:.4g}); "
        f"{zero.format(dp=o.dp)} (Rajbhandari et al. 2020 §5, Fig. 1).",
        f"Parallelism: the most loaded GPU holds the first pipeline stage's "
        f"{block.stage_layers} = ⌈L/p⌉ of the {block.layers} layers and the embedding (and "
        f"an untied LM head when p = 1), split t = {o.tp} ways, routed experts e = {o.ep} ways "
        f"more (Megatron-LM theoretical_memory_usage.py); {kv}; ZeRO shards over the "
        f"N_d·c = {o.dp * o.cp} data- and context-parallel ranks (experts over N_d·c/e); "
        f"context parallelism keeps s/c = {o.seq_len // o.cp:,} tokens of each sequence per GPU"
        + (f"; the interleaved schedule (v = {o.vpp}) keeps 1 + (p − 1)/(p·v) times the "
           f"activations in flight" if o.vpp > 1 else "") + ".",
        f"Activations after Korthikanti et al. 2022 §4 (s·b·h·(34 + 5·a·s/h) per layer for "
        f"2-byte activations, 1-byte dropout masks, a 4h GeLU MLP), each tensor at this "
        f"model's widths: {kept[o.recompute]}; "
        f"{'dropout masks stored' if o.dropout else 'no dropout'}; {sp}. Defaults are current "
        f"practice (flash attention, no dropout); the paper's setting is --paper-2022. The "
        f"first pipeline stage holds its layers for p micro-batches in flight (1F1B); the "
        f"embedding and output layer as Megatron-LM counts them.",
        *([MIXERS_SENTENCE.format(kinds=", ".join(MIXER_NAMES[kind] for kind in
                                                  block.activations_per_mixer_bytes))]
          if block.activations_per_mixer_bytes else []),
        "Not counted: temporary buffers (communication buckets, the logits' gradient), memory "
        "fragmentation and the CUDA context, which take a few more GB in practice.",
        *(finetune_sentences(block.finetune) if block.finetune.method != "full" else []),
        *([precision_sentence(o.precision)] if o.precision != "bf16" else []),
        *([offload_sentence(block.offload)] if block.offload else []),
        "Units: bytes; GB = 1e9 bytes (the ZeRO paper's unit: 7.5B × 16 bytes = 120 GB), "
        "GiB = 2^30 bytes; a GPU's memory is its catalogue memory_gib × 2^30 (vendors' "
        "'80GB' of HBM is 80 GiB).",
    ]
