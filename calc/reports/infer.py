"""Serving a model: `calc.infer("llama2-7b", gpu="a100", context=4096, batch=8)`.

Weights and KV cache against the GPUs' memory (the largest batch and context that fit), prefill
and decode time on a roofline, tokens per second and the batch where decoding turns compute-bound.
The formulas are in calc.formulas.inference; FLOPs per token come from calc.count_flops.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, ValidationError

from calc import _compiled
from calc.counting import GIB, TERA, Bytes, whole
from calc.document import Document
from calc.errors import CalcError, one_line
from calc.evaluate import count_flops, count_params, symbol_values
from calc.plan.roofline import kv_heads_per_gpu, largest_true, tensor_parallel_seconds
from calc.plan.serving import serving_plan
from calc.plan.serving_block import ServingBlock, serving_block, serving_options
from calc.presets import (
    Preset,
    context_note,
    get_gpu,
    get_system,
    resolve,
    sequence_length,
    system_for_gpu,
)
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


class InferenceReport(Document):
    model: str
    title: str
    source: str
    inference: InferenceBlock
    serving: ServingBlock | None = Field(
        None, description="requests served (given --input-len and --output-len): throughput, "
                          "latencies, layout and cost (docs/serving.md)")
    conventions: list[str]


def _options(spec: ModelSpec, gpu: str, options: dict[str, Any]) -> InferenceWorkload:
    try:
        parsed = InferenceWorkload(gpu=gpu, **options)
    except ValidationError as error:
        raise CalcError(one_line(error)) from None
    context = sequence_length(spec, parsed.context, "--context")
    return parsed.model_copy(update={"context": context, "kv_dtype": parsed.kv_dtype_name,
                                     "compute_dtype": parsed.compute_dtype_name})


def infer(model: str | ModelSpec | Preset, *, gpu: str, system: str | None = None,
          price: float | None = None, **options: Any) -> InferenceReport:
    """Serving `model` on `gpu`; `options` are the fields of calc.spec.InferenceWorkload
    (gpus, context, batch, dtype, kv_dtype, compute_dtype, mfu, mbu). With several GPUs the
    weights are split by tensor parallelism and its all-reduces are priced on `system`'s
    links (default: the GPU's reference system).

    With input_len and output_len (and the other fields of calc.spec.inference.Serving:
    concurrency or request_rate, tp/pp/ep, engine, ttft_ms/tpot_ms targets) the report's
    `serving` block says what requests get: tokens/s, TTFT, TPOT, the layout and, at `price`
    a GPU-hour, the cost of a million generated tokens (docs/serving.md)."""
    preset = resolve(model)
    spec = preset.spec
    serving, options = serving_options(options)
    if serving.asked and options.get("context") is None:
        options["context"] = (serving.input_len or 0) + (serving.output_len or 0)
    if price is not None and not price > 0:
        raise CalcError(f"price={price!r} is not allowed; expected a price per GPU-hour > 0")
    opts = _options(spec, gpu, _checkpoint_dtypes(preset, options))
    device = get_gpu(gpu)
    peak = device.peak_flops(opts.compute_dtype_name)
    if device.bandwidth_gb_s is None:
        raise CalcError(f"gpu {device.name!r} has no memory bandwidth in the catalogue; decode "
                        f"time needs one (python -m calc gpus)")
    served = None
    if serving.asked:
        platform = get_system(system) if system else (
            system_for_gpu(device.name) if device.system else None)
        plan = serving_plan(spec, device, platform, opts, serving, price)
        served = serving_block(plan, serving)
        if plan.searched:  # the memory and roofline tables for the GPUs the search chose
            opts = opts.model_copy(update={"gpus": plan.chosen.gpus})
    counts = count_params(spec)
    flops = count_flops(spec, opts.context, "causal")
    base = {
        **symbol_values(spec), "N": counts.total, "N_e": counts.components["moe/experts"],
        "q_w": BYTES_PER_ELEMENT[opts.dtype], "q_kv": BYTES_PER_ELEMENT[opts.kv_dtype_name],
        "K": opts.gpus, "h_g": kv_heads_per_gpu(spec, opts.gpus),
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
    windowed = n["local"] + n["chunked"] == n["attention"]
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
    block = InferenceBlock(
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
    notes = [*preset.notes, *filter(None, [context_note(spec, opts.context)])]
    if max_context is not None and max_context > max(opts.context, spec.context_length):
        notes.append(f"The largest context that fits at batch {opts.batch:,}, {max_context:,} "
                     f"tokens, is past the {spec.context_length:,}-token context "
                     f"{spec.name} was trained for: memory allows it, the model may not.")
    if served is not None:
        notes = [*notes, *serving_notes(served)]
    return InferenceReport(model=preset.name, title=preset.title, source=preset.source,
                           inference=block, serving=served,
                           conventions=[*notes, *conventions(spec, block)])


def _communication_sentence(block: InferenceBlock) -> str:
    o = block.options
    if o.gpus == 1:
        return "Communication: none, one GPU."
    if block.communication_link is None:
        return (f"Communication: not priced — {o.gpu} has no catalogued system whose links "
                f"would carry the tensor-parallel all-reduces (give --system).")
    return (f"Communication: tensor parallelism over {o.gpus:,} GPUs, an all-reduce of the "
            f"tokens' 16-bit activations after each sublayer, two per Transformer layer "
            f"(Shoeybi et al. 2019 §3), on the "
            f"{block.communication_link} link, NCCL's ring or tree, whichever is faster "
            f"(docs/step-time.md); not overlapped with compute, and added to the roofline "
            f"step: {block.communication_share:.1%} of the decode step.")


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
    n = spec.layer_counts
    window = (f"; {n['local']} sliding-window layers keep at most "
              f"w = {spec.attention.sliding_window:,} tokens" if n["local"] else "")
    if n["chunked"]:
        window += (f"; {n['chunked']} chunked layers keep at most a chunk of "
                   f"{spec.attention.chunk_size:,} tokens")
    if n["attention"] < spec.n_layers:
        window += (f"; the {spec.n_layers - n['attention']} layers without attention keep a "
                   f"fixed recurrent state per sequence instead, the same at any context "
                   f"(state_cache_bytes: Mamba D × N and its conv's last k − 1 inputs over "
                   f"D + 2GN channels; gated DeltaNet d_k × d_v per value head and its conv's "
                   f"last k − 1 q, k, v inputs; a short convolution its last k − 1 inputs), "
                   f"counted at the same bytes (vLLM's CacheConfig.mamba_cache_dtype 'auto' "
                   f"keeps the model's dtype)")
    moe = ("; an MoE decode step reads the routed experts its b tokens touch, "
           "E·(1 − (1 − k/E)^b) per layer in expectation under uniform routing (derived)"
           if spec.moe else "")
    if spec.attention.mla:
        kv_split = (f"MLA's latent, which every head reads, is on each of the {o.gpus:,} GPUs"
                    if o.gpus > 1 else "one GPU holds it all")
    elif block.kv_cache_copies > 1:
        kv_split = (f"{o.gpus:,} GPUs for {spec.n_kv_heads} KV heads replicate each head "
                    f"{block.kv_cache_copies:g} times (vLLM's QKVParallelLinear)")
    else:
        kv_split = f"the {spec.n_kv_heads} KV heads split {o.gpus:,} ways"
    return [
        f"Weights: all {block.params:,} parameters at {o.dtype}, "
        f"{BYTES_PER_ELEMENT[o.dtype]:g} B each (quantisation scales not counted).",
        f"KV cache: {kv}, at {o.kv_dtype}, {BYTES_PER_ELEMENT[o.kv_dtype_name]:g} B an element"
        f"{window}. kv_cache_bytes_per_token is one token through all layers before any window.",
        f"Roofline (Williams et al. 2009): a step takes the longer of its FLOPs at the dense "
        f"{o.compute_dtype} peak ({block.peak_flops / TERA:g} TFLOP/s × {o.gpus:,} GPUs × "
        f"utilisation {o.mfu:g}) and its bytes at the datasheet bandwidth "
        f"({block.bandwidth_gb_s:g} GB/s × {o.gpus:,} × {o.mbu:g}); "
        f"utilisation 1 is the bound itself, real kernels reach less.",
        f"Prefill: b·T prompt tokens in one causal forward pass (FLOPs as calc counts them: "
        f"matrix products, 2 per multiply-add), reading the weights and writing the cache "
        f"once. Decode: one token for each of the b sequences per step, attending to T cached "
        f"keys and reading the weights and the whole cache once{moe}.",
        f"Memory: {o.gpus:,} × the catalogue memory_gib × 2^30 bytes; weights are split "
        f"evenly over the GPUs; the cache by whole KV heads: {kv_split}. Activations, CUDA "
        f"graphs and allocator overhead are not counted.",
        _communication_sentence(block),
        "Units: bytes (GB = 1e9, GiB = 2^30); bandwidth in decimal GB/s as datasheets print it; "
        "seconds.",
    ]


def serving_notes(block: ServingBlock) -> list[str]:
    """The sentences printed under the serving table."""
    o, lay = block.options, block.layout
    notes = [
        f"Serving (docs/serving.md): {lay.gpus:,} GPUs as {lay.replicas:,} replica(s) of "
        f"tp {lay.tp} × pp {lay.pp}" + (f" × ep {lay.ep}" if lay.ep > 1 else "") +
        f", {block.engine} defaults (presets/serving.toml); each iteration priced from calc's "
        f"exact FLOPs and bytes at fitted kernel efficiencies, calibrated on published "
        f"serving benchmarks (python -m calc reproduce --serving).",
        f"Load: {block.load}; {o.input_len:,} prompt and {o.output_len:,} generated tokens a "
        f"request; batch {block.batch:,.1f} a replica, set by {block.batch_limit} "
        f"({block.max_sequences_fit:,} sequences fit the "
        f"{block.kv_cache_budget_bytes_per_gpu / GIB:,.1f} GiB of KV cache a GPU).",
    ]
    if block.saturated:
        notes.append("The request rate exceeds what these GPUs serve: requests queue, and "
                     "the figures are those of the queue drained at full throughput.")
    if block.searched:
        notes.append("Searched: every valid tp/pp layout within a node, each replica at the "
                     "highest rate meeting the targets; the fewest GPUs win.")
    return notes
