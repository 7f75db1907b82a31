"""The serving report (calc.infer) as tables."""

from __future__ import annotations

from calc.plan.serving_block import ServingBlock
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
    tables = [memory, time]
    if report.serving is not None:
        tables[:0] = _serving(report.serving)
    return View(title, tables, [*report.conventions, f"Model: {report.source}."])


def _serving(s: ServingBlock) -> list[Table]:
    lay = s.layout
    table = Table(f"Serving ({s.engine}, {s.load})", [Column("quantity"),
                                                       Column("value", "text"),
                                                       Column("note")])
    table.add("layout", f"{lay.replicas:,} × tp{lay.tp}" + (f"·pp{lay.pp}" if lay.pp > 1 else "")
              + (f"·ep{lay.ep}" if lay.ep > 1 else ""), f"{lay.gpus:,} GPUs"
              + (", searched" if s.searched else ""))
    table.add("output tokens/s", f"{s.output_tokens_per_s:,.0f}",
              f"{s.output_tokens_per_s_per_gpu:,.1f} a GPU")
    table.add("total tokens/s", f"{s.total_tokens_per_s:,.0f}", "prompt + generated")
    table.add("requests/s", f"{s.requests_per_s:,.3g}",
              "saturated: requests queue" if s.saturated else "")
    table.add("time to first token", _seconds(s.ttft_s), "mean")
    table.add("time per output token", _seconds(s.tpot_s), "mean")
    table.add("end-to-end latency", _seconds(s.e2e_s), "mean")
    table.add("batch a replica", f"{s.batch:,.1f}", f"set by {s.batch_limit}; "
              f"{s.max_sequences_fit:,} fit")
    table.add("decode step", _seconds(s.decode_step.seconds), s.decode_step.bound)
    table.add("prefill step", _seconds(s.prefill_step.seconds), s.prefill_step.bound)
    table.add("what binds", s.bound, "")
    if s.cost_per_million_output_tokens is not None:
        table.add("cost per million output tokens", f"{s.cost_per_million_output_tokens:,.3f}",
                  f"{s.cost_per_hour:,.2f} an hour at {s.price_per_gpu_hour:g} a GPU-hour")
    layouts = Table("Layouts priced", [Column("layout"), Column("GPUs"), Column("output tok/s"),
                                       Column("TTFT", "text"), Column("TPOT", "text"),
                                       Column("meets"), Column("why")])
    for row in s.layouts[:LAYOUT_ROWS]:
        layouts.add(f"{row.replicas:,} × {row.layout}", row.gpus,
                    round(row.output_tokens_per_s or 0), _maybe(row.ttft_s),
                    _maybe(row.tpot_s), row.meets, row.why)
    return [table, layouts] if len(s.layouts) > 1 else [table]


LAYOUT_ROWS = 12


def _maybe(value: float | None) -> str:
    return "" if value is None else _seconds(value)
