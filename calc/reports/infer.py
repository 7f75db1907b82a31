"""Serving a model: `calc.infer("llama2-7b", gpu="a100", context=4096, batch=8)`.

The roofline's numbers (calc.plan.roofline: memory, the largest batch and context that fit,
prefill and decode time, the batch where decoding turns compute-bound) and, given a request mix,
the served requests' (calc.plan.serving), labelled with what they model and leave out.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from calc.counting import GIB, TERA, whole
from calc.document import Document
from calc.errors import CalcError
from calc.plan.roofline import InferenceBlock, inference_options, roofline
from calc.plan.serving import serving_plan
from calc.plan.serving_block import ServingBlock, serving_block, serving_options
from calc.presets import (
    Preset,
    context_note,
    get_gpu,
    get_system,
    resolve,
    system_for_gpu,
)
from calc.spec import BYTES_PER_ELEMENT, ModelSpec


class InferenceReport(Document):
    model: str
    title: str
    source: str
    inference: InferenceBlock
    serving: ServingBlock | None = Field(
        None, description="requests served (given --input-len and --output-len): throughput, "
                          "latencies, layout and cost (docs/serving.md)")
    conventions: list[str]


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
    opts = inference_options(preset, gpu, options)
    device = get_gpu(gpu)
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
    block = roofline(spec, device, opts, system)
    notes = [*preset.notes, *filter(None, [context_note(spec, opts.context)])]
    max_context = block.max_context
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


def conventions(spec: ModelSpec, block: InferenceBlock) -> list[str]:
    """The sentences printed under the inference tables."""
    o = block.options
    kv = ("MLA: the latent r_kv and the shared RoPE key d_rope per layer "
          "(DeepSeek-V2 §2.1.2)" if spec.attention.mla else
          "K and V of the h_kv key/value heads per layer (GQA/MQA share them)")
    n = spec.layer_counts
    window = (f"; {n['local']} sliding-window layers keep at most "
              f"w = {spec.attention.sliding_window:,} tokens" if n["local"] else "")
    comp = spec.attention.compression
    if comp is not None:  # DeepSeek-V4: each compressor's entries, one per m tokens
        window += (f"; of them {spec.n_sparse_layers} CSA and {spec.n_heavy_layers} HCA layers "
                   f"keep beside their window one compressed entry of d_qk per "
                   f"{comp.sparse_rate:,} and {comp.heavy_rate:,} tokens (CSA also its "
                   f"indexer's key of d_I), held on every GPU; the tokens a compressor holds "
                   f"until its window is whole are not counted")
    if n["chunked"]:
        window += (f"; {n['chunked']} chunked layers keep at most a chunk of "
                   f"{spec.attention.chunk_size:,} tokens")
    if n["attention"] < spec.n_layers:
        window += (f"; the {spec.n_layers - n['attention']} layers without attention keep a "
                   f"fixed recurrent state per sequence instead, the same at any context "
                   f"(state_cache_bytes: Mamba D × N and its conv's last k − 1 inputs over "
                   f"D + 2GN channels; gated DeltaNet d_k × d_v per value head and its conv's "
                   f"last k − 1 q, k, v inputs; lightning attention d_h × d_h per head "
                   f"(transformers' MiniMaxCache linear_cache); RWKV the WKV's numerator, "
                   f"denominator and maximum per channel and the last token's input to its "
                   f"time-mix and channel-mix (transformers' RwkvModel state, whose WKV part "
                   f"it keeps in fp32); Griffin's recurrent block the RG-LRU's state per "
                   f"channel and its temporal conv's last k − 1 inputs "
                   f"(RecurrentGemmaRecurrentBlock's recurrent_states, kept in fp32, and "
                   f"conv1d_state); the mLSTM each head's matrix memory d_k × d_v, normaliser "
                   f"d_k and stabiliser (xLSTMCache's rnn_state); a short convolution its "
                   f"last k − 1 inputs), "
                   f"counted at the same bytes (vLLM's CacheConfig.mamba_cache_dtype 'auto' "
                   f"keeps the model's dtype)")
    if spec.shared_block is not None:
        window += (f"; the shared block caches its K and V at each of its "
                   f"{spec.shared_block.depths} depths, all T tokens (the weights are shared, "
                   f"the cache is not)")
    reads = ("; an MoE decode step reads the routed experts its b tokens touch, "
             "E·(1 − (1 − k/E)^b) per layer in expectation under uniform routing (derived)"
             if spec.moe else "")
    if spec.loop is not None:  # step time (calc.serving) reads them each pass as well
        reads += (f"; a looped model's weights once a pass: {spec.executed.n_layers} layer "
                  f"passes a token over {spec.n_layers} stored layers")
    if spec.attention.mla:
        kv_split = (f"MLA's latent, which every head reads, is on each of the {o.gpus:,} GPUs"
                    if o.gpus > 1 else "one GPU holds it all")
    elif block.kv_cache_copies > 1:
        kv_split = (f"{o.gpus:,} GPUs for {spec.n_kv_heads} KV heads replicate each head "
                    f"{block.kv_cache_copies:g} times (vLLM's QKVParallelLinear)")
    else:
        kv_split = f"the {spec.n_kv_heads} KV heads split {o.gpus:,} ways"
    kind = spec.shaped_kind  # a kind's layers with key/value heads of their own (kind_shapes)
    if kind and spec.heads_of(kind)[1] != spec.n_kv_heads:
        own = spec.heads_of(kind)[1]
        copies = whole(o.gpus * -(-own // o.gpus) / own)
        kv_split += (f"; the {kind} layers' {own} KV heads "
                     + (f"replicated {copies:g} times" if copies > 1
                        else f"split {o.gpus:,} ways"))
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
        f"keys and reading the weights and the whole cache once{reads}.",
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
