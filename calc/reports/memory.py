"""Training memory of the most loaded GPU: `calc.memory("llama2-7b", gpu="a100", zero=3, dp=8)`.

Model states by precision recipe and ZeRO stage, activations after Korthikanti et al. 2022, the
total against the GPU's memory and the largest micro-batch that fits. The formulas are in
calc.formulas.memory; this module maps the options onto their symbols and labels the result.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, ValidationError

from calc import _compiled
from calc.counting import Bytes, whole
from calc.document import Document
from calc.errors import CalcError, one_line
from calc.evaluate import count_params, symbol_values
from calc.presets import Preset, context_note, get_gpu, resolve, sequence_length
from calc.spec import BYTES_PER_ELEMENT, GPU, OPTIMIZERS, RECIPES, ModelSpec, TrainingMemory
from calc.spec.model import Frozen


class Fix(Frozen):
    """A change of the options that makes the run fit: the smallest of its kind (FIXES)."""

    changes: dict[str, int | str] = Field(description="TrainingMemory fields and new values")
    total_bytes: Bytes
    max_micro_batch: int


class MemoryBlock(Frozen):
    options: TrainingMemory = Field(description="the options, recipe and seq_len resolved")
    params: int = Field(description="all parameters of the model")
    params_per_gpu: float = Field(description="parameters on the most loaded GPU (after t, p)")
    bytes_per_param: dict[str, int] = Field(description="model-state bytes per parameter by "
                                                        "piece, before ZeRO sharding")
    weights_bytes: Bytes
    gradients_bytes: Bytes = Field(description="gradients, and their fp32 copy if any")
    optimizer_bytes: Bytes = Field(description="optimizer states and fp32 master weights "
                                               "(ZeRO's K)")
    activations_bytes: Bytes = Field(description="stored for the backward pass, first stage")
    activations: dict[str, Bytes] = Field(description="layers, embedding, output layer")
    activations_per_layer_bytes: Bytes = Field(description="one dense layer, one micro-batch")
    total_bytes: Bytes
    gpu: str | None
    gpu_title: str | None = None
    gpu_bytes: int | None = Field(description="memory_gib × 2^30")
    fits: bool | None
    headroom_bytes: Bytes | None = Field(description="gpu_bytes − total_bytes (< 0: short)")
    max_micro_batch: int | None = Field(description="largest micro-batch that fits; 0 when "
                                                    "not even one does")
    states_bytes: Bytes = Field(description="weights + gradients + optimizer states")
    layers: int = Field(description="the model's layers L")
    stage_layers: int = Field(description="layers on the most loaded GPU: ⌈L/p⌉")
    kv_heads: int = Field(description="the model's key/value heads (MLA: its query heads)")
    short: Literal["model states", "activations"] | None = Field(
        None, description="what does not fit: the model states alone, or the activations of "
                          "one micro-batch beside them; None when it fits or without a GPU")
    fixes: list[Fix] = Field(
        default_factory=list,
        description="when it does not fit: for each kind of change (FIXES: recompute, tp, pp, "
                    "ZeRO, ZeRO-3 over more dp ranks) the smallest that fits")


class MemoryReport(Document):
    model: str
    title: str
    source: str
    memory: MemoryBlock
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
    kv = spec.n_kv_heads
    if spec.attention.mla is None and kv % parsed.tp and parsed.tp % kv:
        raise CalcError(f"tp={parsed.tp} and the {kv} KV heads of {spec.name}: one must divide "
                        f"the other (each rank holds whole KV heads, split or replicated)")
    if parsed.pp > spec.n_layers:
        raise CalcError(f"pp={parsed.pp} exceeds n_layers={spec.n_layers} of {spec.name} "
                        f"(each pipeline stage needs a layer)")
    if parsed.vpp > 1 and parsed.pp == 1:
        raise CalcError(f"vpp={parsed.vpp} needs pp > 1 (virtual stages interleave a pipeline)")
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


def symbol_values_for(spec: ModelSpec, options: TrainingMemory,
                      gpu: GPU | None) -> dict[str, Any]:
    """Every symbol calc.formulas.memory uses, for `spec` trained with resolved `options`."""
    counts = count_params(spec)
    recipe, optimizer = RECIPES[options.recipe_name], OPTIMIZERS[options.optimizer]
    first_stage = -(-spec.n_layers // options.pp)  # ⌈L/p⌉: the first stages take the remainder
    return {
        **symbol_values(spec), "T": options.seq_len, "b": options.micro_batch,
        "L_s": first_stage, "L_sm": sum(spec.moe_layers[:first_stage]),
        "h_t": -(-spec.n_kv_heads // options.tp),
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


def memory(model: str | ModelSpec | Preset, *, gpu: str | None = None,
           **options: Any) -> MemoryReport:
    """Training memory of the most loaded GPU for a preset name, spec file, ModelSpec or Preset.

    `options` are the fields of calc.spec.TrainingMemory (seq_len, micro_batch, dtype, recipe,
    optimizer, zero, dp, tp, pp, recompute, sequence_parallel, flash_attention, dropout). Bad
    input raises CalcError naming the field, the value and what is allowed.
    """
    preset = resolve(model)
    spec = preset.spec
    opts = _options(spec, gpu, options)
    device = get_gpu(gpu) if gpu else None
    s = symbol_values_for(spec, opts, device)
    states = _compiled.memory_states(s)
    activations = _compiled.memory_activations(s)
    totals = _compiled.memory(s)
    recipe = RECIPES[opts.recipe_name]
    states_total = states["weights"] + states["gradients"] + states["optimizer"]
    fits = totals["total"] <= totals["gpu"] if device else None
    short = None if fits is not False else (
        "model states" if states_total > totals["gpu"] else "activations")
    block = MemoryBlock(
        options=opts, params=s["N"], params_per_gpu=states["params_per_gpu"],
        bytes_per_param={"weights": recipe.weights, "gradients": recipe.gradients,
                         "gradient_copy": recipe.gradient_copy, "master": recipe.master,
                         "optimizer_states": OPTIMIZERS[opts.optimizer].state_bytes},
        weights_bytes=whole(states["weights"]), gradients_bytes=whole(states["gradients"]),
        optimizer_bytes=whole(states["optimizer"]),
        activations_bytes=whole(sum(activations.values())),
        activations={key: whole(value) for key, value in activations.items()},
        activations_per_layer_bytes=whole(totals["activations_per_layer"]),
        total_bytes=whole(totals["total"]),
        gpu=device.name if device else None, gpu_title=device.title if device else None,
        gpu_bytes=whole(totals["gpu"]) if device else None,
        fits=fits, headroom_bytes=whole(totals["gpu"] - totals["total"]) if device else None,
        max_micro_batch=max(0, math.floor(totals["micro_batch_room"])) if device else None,
        states_bytes=whole(states_total), short=short, layers=spec.n_layers,
        stage_layers=s["L_s"], kv_heads=spec.n_kv_heads,
        fixes=_fixes(spec, opts, device) if device and not fits else [],
    )
    notes = [*preset.notes, *filter(None, [context_note(spec, opts.seq_len, "s")])]
    return MemoryReport(model=preset.name, title=preset.title, source=preset.source,
                        memory=block, conventions=[*notes, *conventions(block)])


# What a run that does not fit could change, in the order tried; each group's candidates from
# the least change to the most (degrees by powers of two, as layouts are chosen). The last group
# shards the model states over more data-parallel ranks, which only ZeRO-3 does fully.
_POWERS = tuple(2**i for i in range(1, 17))
FIXES: dict[str, tuple[dict[str, int | str], ...]] = {
    "recompute": ({"recompute": "selective"}, {"recompute": "full"}),
    "tp": tuple({"tp": n} for n in _POWERS[:6]),
    "pp": tuple({"pp": n} for n in _POWERS[:7]),
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


def _fixes(spec: ModelSpec, opts: TrainingMemory, device: GPU) -> list[Fix]:
    """For each group of FIXES, the smallest change in it that makes the run fit."""
    found = []
    current = opts.model_dump(exclude={"gpu"})
    for candidates in FIXES.values():
        for changes in (c for c in candidates if _beyond(current, c)):
            try:
                changed = _options(spec, device.name, {**current, **changes})
            except CalcError:  # e.g. a tp that does not divide the heads
                continue
            totals = _compiled.memory(symbol_values_for(spec, changed, device))
            if totals["total"] <= totals["gpu"]:
                found.append(Fix(changes=changes, total_bytes=whole(totals["total"]),
                                 max_micro_batch=math.floor(totals["micro_batch_room"])))
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
    return [
        f"Model states: recipe {o.recipe_name!r} ({recipe.label}) with {optimizer.label}: "
        f"{per_param} bytes per parameter before sharding. Sources: {recipe.source}; "
        f"{optimizer.source}.",
        "optimizer_bytes holds the optimizer states and the fp32 master weights (ZeRO's "
        f"K = {block.bytes_per_param['master'] + block.bytes_per_param['optimizer_states']}); "
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
        "Not counted: temporary buffers (communication buckets, the logits' gradient), memory "
        "fragmentation and the CUDA context, which take a few more GB in practice.",
        "Units: bytes; GB = 1e9 bytes (the ZeRO paper's unit: 7.5B × 16 bytes = 120 GB), "
        "GiB = 2^30 bytes; a GPU's memory is its catalogue memory_gib × 2^30 (vendors' "
        "'80GB' of HBM is 80 GiB).",
    ]
