"""The training-memory report (calc.memory) as tables."""

from __future__ import annotations

from calc.plan.memory import FIXES, MemoryBlock
from calc.plan.offload import OffloadBlock
from calc.reports.memory import MIXER_NAMES, RESERVE, MemoryReport
from calc.spec.gemm_precision import GEMM_PRECISIONS
from calc.tables import GIB, Column, Table, View, add_bytes, bytes_table, verdict
from calc.views._config import config_notes, config_table
from calc.views._finetune import finetune_table

_ZERO_STAGE = {"weights": 3, "gradients": 2, "gradient_copy": 1, "master": 1,
               "optimizer_states": 1}


def view(report: MemoryReport) -> View:
    m, o = report.memory, report.memory.options
    title = (f"{report.model} — training memory of the most loaded GPU (s = {o.seq_len:,}, "
             f"micro-batch {o.micro_batch}, ZeRO {o.zero}, dp {o.dp}, tp {o.tp}, pp {o.pp}, "
             f"{o.framework})")
    table = bytes_table("Memory per GPU")
    per = m.bytes_per_param
    ft = m.finetune
    if ft.method != "full":
        add_bytes(table, f"frozen base ({ft.frozen_dtype})", m.frozen_bytes,
                  f"{ft.bytes_per_frozen_weight:.6g} B per projection weight")
    add_bytes(table, "weights" if ft.method == "full" else "adapter weights", m.weights_bytes,
              f"{per['weights']} B/param")
    if m.weight_copies_bytes:
        copies = GEMM_PRECISIONS[o.precision].copies
        add_bytes(table, f"{o.precision} weight copies ("
                         + ("row- and column-wise)" if copies == 2 else f"{copies} per weight)"),
                  m.weight_copies_bytes, "projections only")
    add_bytes(table, "gradients", m.gradients_bytes,
              ("the largest parameter's (optimizer in backward)" if o.optimizer_in_backward
               else f"{per['gradients']} B/param" + (f" + fp32 copy {per['gradient_copy']}"
                                                      if per["gradient_copy"] else "")))
    add_bytes(table, "optimizer states + fp32 master", m.optimizer_bytes,
           f"{per['optimizer_states']:.4g} + {per['master']} B/param")
    if m.ema_bytes:
        add_bytes(table, "EMA of the parameters (fp32)", m.ema_bytes, "ema device")
    add_bytes(table, "activations", m.activations_bytes, f"recompute {o.recompute}"
              + (", norms and up-projections" if o.recompute_norm_up else "")
              + (", offloaded" if o.activation_offload else ""))
    for key, value in m.activations.items():
        add_bytes(table, f"  activations: {key}", value)
    if m.activations_per_layer_bytes is not None:
        add_bytes(table, "  one dense layer, one micro-batch", m.activations_per_layer_bytes,
                  "transformers' modules" if o.framework == "hf" else
                  "Korthikanti et al. 2022 §4")
    for kind, value in m.activations_per_mixer_bytes.items():
        add_bytes(table, f"  one {MIXER_NAMES[kind]} mixer, one micro-batch", value,
                  "what its kernels save")
    off = m.offload
    if off is not None:
        add_bytes(table, f"moved off the GPU (optimizer → {off.optimizer}, parameters → "
                         f"{off.params})", -off.gpu_freed_bytes, "ZeRO-Offload/Infinity")
        if off.gpu_live_bytes:
            add_bytes(table, "gathered weights live on the GPU", off.gpu_live_bytes,
                      "two of the largest modules")
    add_bytes(table, f"buffers ({o.framework})", m.buffers_bytes, "transient, at the peak")
    for key, value in m.buffers.items():
        if value:
            add_bytes(table, f"  buffers: {key.replace('_', ' ')}", value, BUFFER_NOTES[key])
    add_bytes(table, "allocated by the run", m.allocated_bytes)
    if m.activations_host_bytes:
        add_bytes(table, "  checkpoints in pinned host memory (not on the GPU)",
                  m.activations_host_bytes, "activation offload")
    if m.ema_host_bytes:
        add_bytes(table, "  EMA in host memory (not on the GPU)", m.ema_host_bytes,
                  "ema host, fp32")
    add_bytes(table, "margin", m.margin_bytes,
              "given" if "given" in m.margin else "CUDA context, NCCL, fragmentation")
    for key, value in m.margin.items():
        if key != "given":
            add_bytes(table, f"  margin: {key.replace('_', ' ')}", value, _margin_note(m, key))
    add_bytes(table, "total", m.total_bytes, "" if m.paged_bytes else verdict(m.fits))
    if m.paged_bytes:
        add_bytes(table, "  of which paged optimizer states (host when short)", m.paged_bytes)
        add_bytes(table, "on the GPU (total − paged)", m.total_bytes - m.paged_bytes,
                  verdict(m.fits))
    if m.gpu is not None:
        add_bytes(table, f"GPU memory ({m.gpu})", m.gpu_bytes, m.gpu_title or "")
        add_bytes(table, "headroom (GPU − total)", m.headroom_bytes)
        table.add("largest micro-batch that fits", m.max_micro_batch, None, None,
                  _short(report) if m.max_micro_batch == 0 else "")
    recipe = Table(f"Bytes per parameter (recipe {o.recipe!r}, optimizer {o.optimizer!r}), "
                   f"before sharding",
                   [Column("piece"), Column("bytes", "int"), Column("split over dp from ZeRO")])
    for key, value in per.items():
        if value:
            recipe.add(key.replace("_", " "), value, f"stage {_ZERO_STAGE[key]}")
    recipe.add("total", sum(per.values()), "")
    tables = [table, recipe] + ([finetune_table(ft)] if ft.method != "full" else [])
    if off is not None:
        tables.append(_offload_table(off))
    if m.short is not None:
        tables.append(_fixes(report))
    notes = [*report.conventions, f"Model: {report.source}."]
    if report.config is not None:
        tables.insert(0, config_table(report.config))
        notes[:0] = config_notes(report.config)
    return View(title, tables, notes)


BUFFER_NOTES = {"gradient_bucket": "reduce bucket, 16-bit",
                "gathered_weights": "16-bit, gathered layers",
                "gathered_gradients": "one layer, unsharded",
                "logits_gradient": "fp32, beside the logits",
                "dequantised_weight": "a 4-bit head, dequantised"}


def _margin_note(m: MemoryBlock, key: str) -> str:
    if key == "nccl":
        groups = ", ".join(m.margin_groups) or "none"
        return f"one communicator per group: {groups}"
    if key == "fragmentation":
        return f"{100 * RESERVE['fragmentation'].value:.1f} % of allocated"
    return ""


def _short(report: MemoryReport) -> str:
    """What does not fit, in one cell."""
    m = report.memory
    if m.short == "model states":
        return f"the model states alone ({m.states_bytes / GIB:,.1f} GiB) do not fit"
    layers = m.activations_bytes / m.options.micro_batch
    return (f"the model states fit ({m.states_bytes / GIB:,.1f} GiB); one micro-batch of "
            f"activations ({layers / GIB:,.1f} GiB) does not")


def _flags(changes: dict[str, int | str]) -> str:
    return " ".join(f"--{key.replace('_', '-')} {value}" for key, value in changes.items())


def _fixes(report: MemoryReport) -> Table:
    """What would make it fit: the smallest change of each kind that does."""
    m = report.memory
    table = Table("What would make it fit: the smallest change of each kind, alone",
                  [Column("change"), Column("total per GPU", "bytes"),
                   Column("largest micro-batch", "int")])
    for fix in m.fixes:
        table.add(_flags(fix.changes), fix.total_bytes, fix.max_micro_batch)
    if not m.fixes:
        table.add(f"none alone ({', '.join(FIXES)}); combine them or use more GPUs",
                  None, None)
    return table


def _offload_table(off: OffloadBlock) -> Table:
    table = bytes_table("Offload: host memory and host-link traffic")
    add_bytes(table, "on the host (CPU memory), per GPU", off.host_bytes_per_gpu)
    if off.nvme_bytes_per_gpu:
        add_bytes(table, "on NVMe, per GPU", off.nvme_bytes_per_gpu)
    add_bytes(table, f"on the host, per node ({off.gpus_per_node} GPUs)",
              off.host_bytes_per_node)
    add_bytes(table, "host memory of the node", off.host_memory_bytes,
              off.host_memory_source or "")
    link = f"at {off.host_link_gb_s:g} GB/s: " if off.host_link_gb_s else ""
    seconds = off.transfer_per_step_seconds
    add_bytes(table, "host link per optimizer step (grads down, weights up)",
              off.transfer_per_step_bytes, f"{link}{seconds:.3g} s" if seconds else "")
    seconds = off.transfer_per_micro_batch_seconds
    if off.transfer_per_micro_batch_bytes:
        add_bytes(table, "host link per micro-batch (partitions up, fwd + bwd)",
                  off.transfer_per_micro_batch_bytes, f"{link}{seconds:.3g} s" if seconds else "")
    return table
