"""`calc.infer`'s roofline as numbers: weights and KV cache against the GPUs' memory (the
largest batch and context that fit), prefill and decode time on a roofline with the
tensor-parallel all-reduces on the link the GPUs share, and the batch where decoding turns
compute-bound. The formulas are in calc.formulas.inference; FLOPs per token come from
calc.count_flops."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, ValidationError

from calc import _compiled
from calc.counting import Bytes, whole
from calc.errors import CalcError, one_line
from calc.evaluate import count_flops, count_params, symbol_values
from calc.presets import Preset, get_system, sequence_length, system_for_gpu
from calc.spec import BYTES_PER_ELEMENT, GPU, ModelSpec
from calc.spec.inference import MAX_BATCH, InferenceWorkload
from calc.spec.model import MAX_TOKENS_CONTEXT, Frozen
from calc.timing.collectives import all_reduce
from calc.timing.constants import load_constants
from calc.timing.mixers import tp_reductions
from calc.timing.network import network_for
from calc.timing.operators import ACTIVATION_BYTES

Bound = Literal["compute", "memory"]


class InferenceBlock(Frozen):
    options: InferenceWorkload = Field(description="the options, defaults resolved")
    gpu_title: str
    peak_flops: float = Field(description="dense peak FLOP/s of one GPU at compute_dtype")
    bandwidth_gb_s: float = Field(description="one GPU's datasheet bandwidth, 1e9 bytes/s")
    params: int
    weights_bytes: Bytes
    kv_cache_bytes_per_token: Bytes = Field(description="one token, all layers, no window cap")
    kv_cache_bytes: Bytes = Field(description="batch × context, sliding windows capped, over "
                                              "all GPUs with its replicas")
    state_cache_bytes: Bytes = Field(
        0, description="of kv_cache_bytes, the recurrent states of the Mamba, gated DeltaNet "
                       "and short-convolution layers: SSM states and conv windows, the same at "
                       "any context")
    kv_cache_copies: float = Field(description="copies of each KV head over the GPUs: 1 when "
                                               "the GPUs split the heads, K/h_kv when K > h_kv")
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
    tokens_per_second: float = Field(description="batch / decode step with communication")
    communication_link: str | None = Field(
        description="the link the tensor-parallel all-reduces cross (None: one GPU, or a GPU "
                    "without a catalogued system)")
    prefill_communication_seconds: float | None = Field(
        description="tensor-parallel all-reduces of prefill, on communication_link")
    decode_communication_seconds: float | None = Field(
        description="tensor-parallel all-reduces of one decode step")
    prefill_seconds_with_communication: float
    decode_seconds_with_communication: float
    communication_share: float = Field(description="all-reduces / decode step with them")
    compute_bound_batch: int | None = Field(
        description="smallest batch whose decode step is compute-bound; None when reading the "
                    "KV cache grows as fast as the FLOPs (never)")



def kv_heads_per_gpu(spec: ModelSpec, gpus: int) -> dict[str, int]:
    """Key/value heads one GPU caches, h_g: ⌈h_kv/K⌉, at least a whole head (replicated when K
    exceeds the heads); MLA's one latent serves every head, so each GPU keeps it whole. And
    h'_g, those of the layers of a kind with head shapes of its own (attention.kind_shapes)."""
    own = spec.heads_of(spec.shaped_kind or "")[1]
    mla = spec.attention.mla is not None  # a kind's own latent too (dots3's sliding layers)
    return {"h_g": 1 if mla else -(-spec.n_kv_heads // gpus),
            "h_g2": 1 if mla else -(-own // gpus)}


def largest_true(predicate: Callable[[int], bool], low: int, high: int) -> int:
    """The largest n in [low, high] with predicate(n), for a predicate true up to some point
    (predicate(low) must hold)."""
    while low < high:
        middle = (low + high + 1) // 2
        if predicate(middle):
            low = middle
        else:
            high = middle - 1
    return low


def tensor_parallel_seconds(spec: ModelSpec, gpu: GPU, gpus: int, tokens: int,
                            system: str | None) -> tuple[float, str] | None:
    """The all-reduces of one forward pass over `tokens` tokens with the weights split over
    `gpus` GPUs by tensor parallelism: one after each sublayer (one per parallel block; Mamba-1
    adds x_proj's, calc.timing.mixers) of tokens × d 16-bit activations (Shoeybi et al. 2019
    §3), on the link the group crosses
    (calc.timing: NCCL ring or tree, the system's bandwidth and latency). None when the GPU
    has no catalogued system to price them on."""
    if gpus == 1:
        return 0.0, "none (one GPU)"
    if system is None and gpu.system is None:
        return None
    platform = get_system(system) if system else system_for_gpu(gpu.name)
    link = network_for(platform, load_constants().network).link(1, gpus)
    seconds = 0.0
    passes = spec.executed.n_layers  # a looped layer reduces once a pass (calc.spec.loop)
    for per_layer, width in tp_reductions(spec):
        size = tokens * width * ACTIVATION_BYTES
        seconds += per_layer * passes * all_reduce(size, gpus, link)
    return seconds, link.name


def inference_options(preset: Preset, gpu: str, options: dict[str, Any]) -> InferenceWorkload:
    """calc.infer's options checked (one line when bad), the context resolved against the
    model's, and the weights' dtype, when none is given, as the checkpoint stores them (a
    quantized config.json: calc.hf.quantization), else InferenceWorkload's default."""
    options = {key: value for key, value in options.items()
               if not (key in ("dtype", "compute_dtype") and value is None)}
    if "dtype" not in options and preset.weights_dtype is not None:
        options["dtype"] = preset.weights_dtype
        if "compute_dtype" not in options and preset.weights_compute_dtype is not None:
            options["compute_dtype"] = preset.weights_compute_dtype
    try:
        parsed = InferenceWorkload(gpu=gpu, **options)
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    context = sequence_length(preset.spec, parsed.context, "--context")
    return parsed.model_copy(update={"context": context, "kv_dtype": parsed.kv_dtype_name,
                                     "compute_dtype": parsed.compute_dtype_name})


def roofline(spec: ModelSpec, device: GPU, opts: InferenceWorkload,
             system: str | None) -> InferenceBlock:
    """Serving `spec` on `opts.gpus` GPUs `device` at `opts`' batch and context: memory, the
    largest batch and context that fit, prefill and decode on the roofline, the all-reduces
    on `system`'s links (default: the GPU's reference system)."""
    assert device.bandwidth_gb_s is not None  # calc.infer refuses a GPU without one
    peak = device.peak_flops(opts.compute_dtype_name)
    counts = count_params(spec)
    # a looped model's layers once a pass they run, and the loop's own parameters (its
    # initial state, which the executed spec has not) once
    runs = count_params(spec.executed)
    loop_own = sum(v for name, v in counts.components.items() if name.startswith("loop/"))
    flops = count_flops(spec, opts.context, "causal")
    base = {
        # a looped model's cache: a slot per pass, or per stored layer (calc.spec.loop)
        **symbol_values(spec.cached), "N": counts.total,
        "N_r": runs.total + loop_own, "N_er": runs.components["moe/experts"],
        "q_w": BYTES_PER_ELEMENT[opts.dtype], "q_kv": BYTES_PER_ELEMENT[opts.kv_dtype_name],
        "K": opts.gpus, **kv_heads_per_gpu(spec, opts.gpus),
        "M_gib": device.memory_gib, "R": peak, "u": opts.mfu,
        "BW": device.bandwidth_gb_s, "u_bw": opts.mbu,
        "F_p": flops.forward, "F_d": flops.inference_per_token,
    }

    def at(context: int, batch: int) -> dict[str, Any]:
        # F_p, F_d hold at opts.context; at other contexts only the bytes are read.
        return _compiled.inference({**base, "T": context, "b": batch})

    here = at(opts.context, opts.batch)
    room = here["gpu"] - here["weights"]  # < 0: the weights alone do not fit
    n = spec.layer_counts  # every attention layer's cache stops growing at w (or a chunk)
    # (the shared block's depths cache every token: calc.formulas.inference)
    windowed = n["local"] + n["chunked"] == n["attention"] and spec.shared_block is None
    if room < at(1, opts.batch)["kv_cache"]:
        max_context: int | None = 0
    elif windowed and room >= at(MAX_TOKENS_CONTEXT, opts.batch)["kv_cache"]:
        max_context = None
    else:
        max_context = largest_true(lambda t: at(t, opts.batch)["kv_cache"] <= room,
                                 1, MAX_TOKENS_CONTEXT)

    def compute_bound(batch: int) -> bool:
        step = at(opts.context, batch)
        return step["decode_compute_seconds"] >= step["decode_memory_seconds"]

    crossover = None
    if compute_bound(MAX_BATCH):
        crossover = 1 if compute_bound(1) else 1 + largest_true(
            lambda n: not compute_bound(n), 1, MAX_BATCH)
    prefill_comm = tensor_parallel_seconds(spec, device, opts.gpus,
                                           opts.batch * opts.context, system)
    decode_comm = tensor_parallel_seconds(spec, device, opts.gpus, opts.batch, system)
    prefill_extra = prefill_comm[0] if prefill_comm else 0.0
    decode_extra = decode_comm[0] if decode_comm else 0.0
    decode_total = here["decode_seconds"] + decode_extra
    return InferenceBlock(
        options=opts, gpu_title=device.title, peak_flops=peak,
        bandwidth_gb_s=device.bandwidth_gb_s, params=counts.total,
        weights_bytes=whole(here["weights"]),
        kv_cache_bytes_per_token=whole(here["kv_cache_per_token"]),
        kv_cache_bytes=whole(here["kv_cache"]), total_bytes=whole(here["total"]),
        state_cache_bytes=whole(here["state_cache"]),
        kv_cache_copies=whole(opts.gpus * base["h_g"] / (1 if spec.attention.mla
                                                         else spec.n_kv_heads)),
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
        tokens_per_second=opts.batch / decode_total, compute_bound_batch=crossover,
        communication_link=decode_comm[1] if decode_comm else None,
        prefill_communication_seconds=prefill_comm[0] if prefill_comm else None,
        decode_communication_seconds=decode_comm[0] if decode_comm else None,
        prefill_seconds_with_communication=here["prefill_seconds"] + prefill_extra,
        decode_seconds_with_communication=decode_total,
        communication_share=decode_extra / decode_total,
    )


def _bound(compute: float, memory: float) -> Bound:
    return "compute" if compute >= memory else "memory"
