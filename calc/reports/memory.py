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
from calc.evaluate import count_params, symbol_values
from calc.presets import Preset, get_gpu, resolve, sequence_length
from calc.spec import BYTES_PER_ELEMENT, GPU, OPTIMIZERS, RECIPES, ModelSpec, TrainingMemory
from calc.spec.model import Frozen


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
                                                    "the model states alone do not")


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
    if parsed.pp > spec.n_layers:
        raise CalcError(f"pp={parsed.pp} exceeds n_layers={spec.n_layers} of {spec.name} "
                        f"(each pipeline stage needs a layer)")
    seq_len = sequence_length(spec, parsed.seq_len)
    return parsed.model_copy(update={"recipe": parsed.recipe_name, "seq_len": seq_len})


def symbol_values_for(spec: ModelSpec, options: TrainingMemory,
                      gpu: GPU | None) -> dict[str, Any]:
    """Every symbol calc.formulas.memory uses, for `spec` trained with resolved `options`."""
    counts = count_params(spec)
    recipe, optimizer = RECIPES[options.recipe_name], OPTIMIZERS[options.optimizer]
    return {
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
        fits=totals["total"] <= totals["gpu"] if device else None,
        headroom_bytes=whole(totals["gpu"] - totals["total"]) if device else None,
        max_micro_batch=max(0, math.floor(totals["micro_batch_room"])) if device else None,
    )
    return MemoryReport(model=preset.name, title=preset.title, source=preset.source,
                        memory=block, conventions=conventions(block))


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
    return [
        f"Model states: recipe {o.recipe_name!r} ({recipe.label}) with {optimizer.label}: "
        f"{per_param} bytes per parameter before sharding. Sources: {recipe.source}; "
        f"{optimizer.source}.",
        "optimizer_bytes holds the optimizer states and the fp32 master weights (ZeRO's "
        f"K = {block.bytes_per_param['master'] + block.bytes_per_param['optimizer_states']}); "
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
        "Units: bytes; GB = 1e9 bytes (the ZeRO paper's unit: 7.5B × 16 bytes = 120 GB), "
        "GiB = 2^30 bytes; a GPU's memory is its catalogue memory_gib × 2^30 (vendors' "
        "'80GB' of HBM is 80 GiB).",
    ]
