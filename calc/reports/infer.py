"""Serving a model: `calc.infer("llama2-7b", gpu="a100", context=4096, batch=8)`.

Weights and KV cache against the GPUs' memory (the largest batch and context that fit), prefill
and decode time on a roofline, tokens per second and the batch where decoding turns compute-bound.
The formulas are in calc.formulas.inference; FLOPs per token come from calc.count_flops.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, ValidationError

from calc import _compiled
from calc.counting import Bytes, whole
from calc.document import Document
from calc.errors import CalcError, one_line
from calc.evaluate import count_flops, count_params, symbol_values
from calc.presets import Preset, get_gpu, resolve, sequence_length
from calc.spec import BYTES_PER_ELEMENT, ModelSpec
from calc.spec.inference import MAX_BATCH, InferenceWorkload
from calc.spec.model import MAX_TOKENS_CONTEXT, Frozen

Bound = Literal["compute", "memory"]


class InferenceBlock(Frozen):
    options: InferenceWorkload = Field(description="the options, defaults resolved")
    gpu_title: str
    peak_flops: float = Field(description="dense peak FLOP/s of one GPU at compute_dtype")
    bandwidth_gb_s: float = Field(description="one GPU's datasheet bandwidth, 1e9 bytes/s")
    params: int
    weights_bytes: Bytes
    kv_cache_bytes_per_token: Bytes = Field(description="one token, all layers, no window cap")
    kv_cache_bytes: Bytes = Field(description="batch × context, sliding windows capped")
    total_bytes: Bytes = Field(description="weights + KV cache")
    gpu_bytes: int = Field(description="gpus × memory_gib × 2^30")
    fits: bool
    max_batch: int = Field(description="sequences at this context that fit (0: not one)")
    max_context: int | None = Field(
        description="context at this batch that fits (0: none); None when windows cap every "
                    "layer's cache, so memory sets no limit")
    prefill_flops: float
    prefill_seconds: float
    prefill_bound: Bound
    decode_flops_per_token: int = Field(description="forward FLOPs of one token at the context")
    decode_weights_read_bytes: Bytes = Field(description="weights one decode step reads")
    decode_seconds_per_token: float = Field(description="one decode step: a token for each "
                                                        "sequence of the batch")
    decode_bound: Bound
    decode_weights_seconds: float = Field(description="reading the weights alone, one step")
    tokens_per_second: float = Field(description="batch / decode step")
    compute_bound_batch: int | None = Field(
        description="smallest batch whose decode step is compute-bound; None when reading the "
                    "KV cache grows as fast as the FLOPs (never)")


class InferenceReport(Document):
    model: str
    title: str
    source: str
    inference: InferenceBlock
    conventions: list[str]


def _options(spec: ModelSpec, gpu: str, options: dict[str, Any]) -> InferenceWorkload:
    try:
        parsed = InferenceWorkload(gpu=gpu, **options)
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    context = sequence_length(spec, parsed.context, "--context")
    return parsed.model_copy(update={"context": context, "kv_dtype": parsed.kv_dtype_name,
                                     "compute_dtype": parsed.compute_dtype_name})


def _last_true(predicate: Callable[[int], bool], low: int, high: int) -> int:
    """The largest n in [low, high] with predicate(n), for a predicate true up to some point
    (predicate(low) must hold)."""
    while low < high:
        middle = (low + high + 1) // 2
        if predicate(middle):
            low = middle
        else:
            high = middle - 1
    return low


def infer(model: str | ModelSpec | Preset, *, gpu: str, **options: Any) -> InferenceReport:
    """Serving `model` on `gpu`; `options` are the fields of calc.spec.InferenceWorkload
    (gpus, context, batch, dtype, kv_dtype, compute_dtype, mfu, mbu)."""
    preset = resolve(model)
    spec = preset.spec
    opts = _options(spec, gpu, _checkpoint_dtypes(preset, options))
    device = get_gpu(gpu)
    peak = device.peak_flops(opts.compute_dtype_name)
    if device.bandwidth_gb_s is None:
        raise CalcError(f"gpu {device.name!r} has no memory bandwidth in the catalogue; decode "
                        f"time needs one (python -m calc gpus)")
    counts = count_params(spec)
    flops = count_flops(spec, opts.context, "causal")
    base = {
        **symbol_values(spec), "N": counts.total, "N_e": counts.components["moe/experts"],
        "q_w": BYTES_PER_ELEMENT[opts.dtype], "q_kv": BYTES_PER_ELEMENT[opts.kv_dtype_name],
        "K": opts.gpus, "M_gib": device.memory_gib, "R": peak, "u": opts.mfu,
        "BW": device.bandwidth_gb_s, "u_bw": opts.mbu,
        "F_p": flops.forward, "F_d": flops.inference_per_token,
    }

    def at(context: int, batch: int) -> dict[str, Any]:
        # F_p, F_d hold at opts.context; at other contexts only the bytes are read.
        return _compiled.inference({**base, "T": context, "b": batch})

    here = at(opts.context, opts.batch)
    room = here["gpu"] - here["weights"]  # < 0: the weights alone do not fit
    windowed = spec.n_local_layers == spec.n_layers  # every layer's cache stops growing at w
    if room < at(1, opts.batch)["kv_cache"]:
        max_context: int | None = 0
    elif windowed and room >= at(MAX_TOKENS_CONTEXT, opts.batch)["kv_cache"]:
        max_context = None
    else:
        max_context = _last_true(lambda t: at(t, opts.batch)["kv_cache"] <= room,
                                 1, MAX_TOKENS_CONTEXT)

    def compute_bound(batch: int) -> bool:
        step = at(opts.context, batch)
        return step["decode_compute_seconds"] >= step["decode_memory_seconds"]

    crossover = None
    if compute_bound(MAX_BATCH):
        crossover = 1 if compute_bound(1) else 1 + _last_true(
            lambda n: not compute_bound(n), 1, MAX_BATCH)
    block = InferenceBlock(
        options=opts, gpu_title=device.title, peak_flops=peak,
        bandwidth_gb_s=device.bandwidth_gb_s, params=counts.total,
        weights_bytes=whole(here["weights"]),
        kv_cache_bytes_per_token=whole(here["kv_cache_per_token"]),
        kv_cache_bytes=whole(here["kv_cache"]), total_bytes=whole(here["total"]),
        gpu_bytes=whole(here["gpu"]),
        fits=here["kv_cache"] <= room, max_batch=max(0, math.floor(here["batch_room"])),
        max_context=max_context,
        prefill_flops=here["prefill_flops"], prefill_seconds=here["prefill_seconds"],
        prefill_bound=_bound(here["prefill_compute_seconds"], here["prefill_memory_seconds"]),
        decode_flops_per_token=flops.inference_per_token,
        decode_weights_read_bytes=whole(here["decode_weights_read"]),
        decode_seconds_per_token=here["decode_seconds"],
        decode_bound=_bound(here["decode_compute_seconds"], here["decode_memory_seconds"]),
        decode_weights_seconds=here["decode_weights_seconds"],
        tokens_per_second=here["tokens_per_second"], compute_bound_batch=crossover,
    )
    return InferenceReport(model=preset.name, title=preset.title, source=preset.source,
                           inference=block,
                           conventions=[*conventions(spec, block), *preset.notes])


def _checkpoint_dtypes(preset: Preset, options: dict[str, Any]) -> dict[str, Any]:
    """`options` with the weights' dtype, when none is given, as the checkpoint stores them
    (a quantized config.json: calc.hf.quantization), else InferenceWorkload's default."""
    options = {key: value for key, value in options.items()
               if not (key in ("dtype", "compute_dtype") and value is None)}
    if "dtype" not in options and preset.weights_dtype is not None:
        options["dtype"] = preset.weights_dtype
        if "compute_dtype" not in options and preset.weights_compute_dtype is not None:
            options["compute_dtype"] = preset.weights_compute_dtype
    return options


def _bound(compute: float, memory: float) -> Bound:
    return "compute" if compute >= memory else "memory"


def conventions(spec: ModelSpec, block: InferenceBlock) -> list[str]:
    """The sentences printed under the inference tables."""
    o = block.options
    kv = ("MLA: the latent r_kv and the shared RoPE key d_rope per layer "
          "(DeepSeek-V2 §2.1.2)" if spec.attention.mla else
          "K and V of the h_kv key/value heads per layer (GQA/MQA share them)")
    window = (f"; {spec.n_local_layers} sliding-window layers keep at most "
              f"w = {spec.attention.sliding_window:,} tokens" if spec.n_local_layers else "")
    moe = ("; an MoE decode step reads the routed experts its b tokens touch, "
           "E·(1 − (1 − k/E)^b) per layer in expectation under uniform routing (derived)"
           if spec.moe else "")
    return [
        f"Weights: all {block.params:,} parameters at {o.dtype}, "
        f"{BYTES_PER_ELEMENT[o.dtype]:g} B each (quantisation scales not counted).",
        f"KV cache: {kv}, at {o.kv_dtype}, {BYTES_PER_ELEMENT[o.kv_dtype_name]:g} B an element"
        f"{window}. kv_cache_bytes_per_token is one token through all layers before any window.",
        f"Roofline (Williams et al. 2009): a step takes the longer of its FLOPs at the dense "
        f"{o.compute_dtype} peak ({block.peak_flops / 1e12:g} TFLOP/s × {o.gpus:,} GPUs × "
        f"utilisation {o.mfu:g}) and its bytes at the datasheet bandwidth "
        f"({block.bandwidth_gb_s:g} GB/s × {o.gpus:,} × {o.mbu:g}); "
        f"utilisation 1 is the bound itself, real kernels reach less.",
        f"Prefill: b·T prompt tokens in one causal forward pass (FLOPs as calc counts them: "
        f"matrix products, 2 per multiply-add), reading the weights and writing the cache "
        f"once. Decode: one token for each of the b sequences per step, attending to T cached "
        f"keys and reading the weights and the whole cache once{moe}.",
        f"Memory: {o.gpus:,} × the catalogue memory_gib × 2^30 bytes; weights and cache are "
        f"split evenly over the GPUs with no communication time; activations, CUDA graphs and "
        f"allocator overhead are not counted.",
        "Units: bytes (GB = 1e9, GiB = 2^30); bandwidth in decimal GB/s as datasheets print it; "
        "seconds.",
    ]
