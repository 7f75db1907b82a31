"""The serving report (calc.infer) as tables."""

from __future__ import annotations

from calc.reports.infer import InferenceReport
from calc.tables import Column, Table, View, add_bytes, bytes_table, verdict


def _seconds(value: float) -> str:
    return f"{value * 1e3:,.3f} ms" if value < 1 else f"{value:,.3f} s"


def view(report: InferenceReport) -> View:
    i, o = report.inference, report.inference.options
    title = (f"{report.model} — inference on {o.gpus:,} × {o.gpu} (context {o.context:,}, "
             f"batch {o.batch:,}, weights {o.dtype}, KV cache {o.kv_dtype})")
    memory = bytes_table("Memory")
    add_bytes(memory, "weights", i.weights_bytes, f"{i.params:,} parameters")
    add_bytes(memory, "KV cache per token", i.kv_cache_bytes_per_token, "all layers, no window")
    add_bytes(memory, f"KV cache, {o.batch:,} × {o.context:,} tokens", i.kv_cache_bytes,
              f"{i.kv_cache_copies:g} copies over the GPUs" if i.kv_cache_copies > 1 else "")
    if i.state_cache_bytes:
        add_bytes(memory, "  of which recurrent states", i.state_cache_bytes,
                  "the same at any context")
    add_bytes(memory, "total", i.total_bytes, verdict(i.fits))
    add_bytes(memory, "GPU memory", i.gpu_bytes, f"{o.gpus:,} × {i.gpu_title}")
    memory.add(f"largest batch at context {o.context:,}", i.max_batch, None, None,
               "the weights alone do not fit" if i.weights_bytes > i.gpu_bytes else "")
    memory.add(f"largest context at batch {o.batch:,}",
               i.max_context, None, None,
               "no memory limit: no layer's cache grows past a window or a state"
               if i.max_context is None else "")
    time = Table("Time on a roofline", [Column("quantity"), Column("value", "text"),
                                        Column("bound")])
    time.add(f"prefill: {o.batch:,} × {o.context:,} prompt tokens", _seconds(i.prefill_seconds),
             i.prefill_bound)
    time.add("decode: one step (a token per sequence)", _seconds(i.decode_seconds_per_token),
             i.decode_bound)
    time.add("decode: reading the weights alone", _seconds(i.decode_weights_seconds), "memory")
    if i.decode_communication_seconds is not None and o.gpus > 1:
        assert i.prefill_communication_seconds is not None
        link = i.communication_link
        time.add(f"prefill: tensor-parallel all-reduces ({link})",
                 _seconds(i.prefill_communication_seconds), "network")
        time.add("prefill with communication", _seconds(i.prefill_seconds_with_communication),
                 "")
        time.add(f"decode: tensor-parallel all-reduces ({link})",
                 _seconds(i.decode_communication_seconds),
                 f"{i.communication_share:.1%} of the step")
        time.add("decode step with communication",
                 _seconds(i.decode_seconds_with_communication), "")
    time.add("decode throughput", f"{i.tokens_per_second:,.1f} tokens/s", "")
    crossover = i.compute_bound_batch
    time.add("batch where decode turns compute-bound",
             "never (the KV cache read grows with the FLOPs)" if crossover is None
             else f"{crossover:,}", "")
    return View(title, [memory, time], [*report.conventions, f"Model: {report.source}."])
