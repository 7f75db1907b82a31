"""The planning reports as tables: training memory, inference, compute-optimal sizing."""

from __future__ import annotations

from calc.plan.inference import InferenceReport
from calc.plan.memory import MemoryReport
from calc.plan.optimal import OptimalReport, Shape
from calc.render import Column, Table, View
from calc.views import register

GB, GIB = 1e9, 2**30
_ZERO_STAGE = {"weights": 3, "gradients": 2, "gradient_copy": 1, "master": 1,
               "optimizer_states": 1}


def _bytes_table(title: str) -> Table:
    return Table(title, [Column("quantity"), Column("bytes", "int"), Column("GB (1e9)", "ratio"),
                         Column("GiB (2^30)", "ratio"), Column("note")])


def _bytes(table: Table, label: str, value: float | None, note: str = "") -> None:
    if value is not None:
        table.add(label, value, value / GB, value / GIB, note)


def _verdict(fits: bool | None) -> str:
    return "" if fits is None else ("fits" if fits else "does NOT fit")


@register
def _(report: MemoryReport) -> View:
    m, o = report.memory, report.memory.options
    title = (f"{report.model} — training memory of the most loaded GPU (s = {o.seq_len:,}, "
             f"micro-batch {o.micro_batch}, ZeRO {o.zero}, dp {o.dp}, tp {o.tp}, pp {o.pp})")
    table = _bytes_table("Memory per GPU")
    per = m.bytes_per_param
    _bytes(table, "weights", m.weights_bytes, f"{per['weights']} B/param")
    _bytes(table, "gradients", m.gradients_bytes,
           f"{per['gradients']} B/param" + (f" + fp32 copy {per['gradient_copy']}"
                                             if per["gradient_copy"] else ""))
    _bytes(table, "optimizer states + fp32 master", m.optimizer_bytes,
           f"{per['optimizer_states']} + {per['master']} B/param")
    _bytes(table, "activations", m.activations_bytes, f"recompute {o.recompute}")
    for key, value in m.activations.items():
        _bytes(table, f"  activations: {key}", value)
    _bytes(table, "  one dense layer, one micro-batch", m.activations_per_layer_bytes,
           "Korthikanti et al. 2022 §4")
    _bytes(table, "total", m.total_bytes, _verdict(m.fits))
    if m.gpu is not None:
        _bytes(table, f"GPU memory ({m.gpu})", m.gpu_bytes, m.gpu_title or "")
        _bytes(table, "headroom (GPU − total)", m.headroom_bytes)
        table.add("largest micro-batch that fits", m.max_micro_batch, None, None,
                  "model states alone do not fit" if m.max_micro_batch == 0 else "")
    recipe = Table(f"Bytes per parameter (recipe {o.recipe!r}, optimizer {o.optimizer!r}), "
                   f"before sharding",
                   [Column("piece"), Column("bytes", "int"), Column("split over dp from ZeRO")])
    for key, value in per.items():
        if value:
            recipe.add(key.replace("_", " "), value, f"stage {_ZERO_STAGE[key]}")
    recipe.add("total", sum(per.values()), "")
    return View(title, [table, recipe], [*report.conventions, f"Model: {report.source}."])


def _seconds(value: float) -> str:
    return f"{value * 1e3:,.3f} ms" if value < 1 else f"{value:,.3f} s"


@register
def _(report: InferenceReport) -> View:
    i, o = report.inference, report.inference.options
    title = (f"{report.model} — inference on {o.gpus:,} × {o.gpu} (context {o.context:,}, "
             f"batch {o.batch:,}, weights {o.dtype}, KV cache {o.kv_dtype})")
    memory = _bytes_table("Memory")
    _bytes(memory, "weights", i.weights_bytes, f"{i.params:,} parameters")
    _bytes(memory, "KV cache per token", i.kv_cache_bytes_per_token, "all layers, no window")
    _bytes(memory, f"KV cache, {o.batch:,} × {o.context:,} tokens", i.kv_cache_bytes)
    _bytes(memory, "total", i.total_bytes, _verdict(i.fits))
    _bytes(memory, "GPU memory", i.gpu_bytes, f"{o.gpus:,} × {i.gpu_title}")
    memory.add(f"largest batch at context {o.context:,}", i.max_batch, None, None,
               "the weights alone do not fit" if i.weights_bytes > i.gpu_bytes else "")
    memory.add(f"largest context at batch {o.batch:,}",
               i.max_context, None, None,
               "no memory limit: sliding windows cap every layer" if i.max_context is None
               else "")
    time = Table("Time on a roofline", [Column("quantity"), Column("value", "text"),
                                        Column("bound")])
    time.add(f"prefill: {o.batch:,} × {o.context:,} prompt tokens", _seconds(i.prefill_seconds),
             i.prefill_bound)
    time.add("decode: one step (a token per sequence)", _seconds(i.decode_seconds_per_token),
             i.decode_bound)
    time.add("decode: reading the weights alone", _seconds(i.decode_weights_seconds), "memory")
    time.add("decode throughput", f"{i.tokens_per_second:,.1f} tokens/s", "")
    crossover = i.compute_bound_batch
    time.add("batch where decode turns compute-bound",
             "never (the KV cache read grows with the FLOPs)" if crossover is None
             else f"{crossover:,}", "")
    return View(title, [memory, time], [*report.conventions, f"Model: {report.source}."])


def _shape(shape: Shape) -> str:
    return (f"{shape.layers:,} × {shape.d_model:,} (d/L = {shape.aspect_ratio:.3g} as "
            f"{shape.aspect_from})")


@register
def _(report: OptimalReport) -> View:
    o = report.optimal
    table = Table(f"Compute-optimal size for C = {o.flops:.4g} FLOPs",
                  [Column("route"), Column("params N", "count"), Column("tokens D", "count"),
                   Column("D / N", "ratio"), Column("fitted loss", "ratio"),
                   Column("shape L × d"), Column("12·L·d²", "count")])
    f = o.fitted
    table.add(f"{o.tokens_per_parameter:g} tokens per parameter", o.params, o.tokens,
              o.tokens_per_parameter, o.loss, _shape(o.shape), o.shape.params)
    table.add("Hoffmann et al. 2022 fit (approach 3)", f.params, f.tokens,
              f.tokens_per_parameter, f.loss, _shape(f.shape), f.shape.params)
    tables = [table]
    if o.budget is not None:
        b = o.budget
        budget = Table("Budget", [Column("quantity"), Column("value", "text")])
        budget.add("GPUs", f"{b.gpus:,} × {b.gpu} ({b.gpu_title})")
        budget.add("days", f"{b.days:g}")
        budget.add(f"dense {b.dtype} peak", f"{b.peak_flops / 1e12:g} TFLOP/s")
        budget.add("MFU", f"{b.mfu:g} ({b.mfu_source})")
        budget.add("training FLOPs C", f"{o.flops:.4g}")
        tables.insert(0, budget)
    return View("Compute-optimal sizing", tables, report.conventions)
