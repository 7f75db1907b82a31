"""The catalogues as tables: presets with sizes, GPUs with dense peaks and sources."""

from __future__ import annotations

from calc.reports.catalog import PEAK_DTYPES, GPUCatalogue, PresetCatalogue
from calc.tables import Column, Table, View


def _presets(catalogue: PresetCatalogue) -> View:
    table = Table("Presets", [Column("name"), Column("title"), Column("params", "int"),
                              Column("≈", "count"), Column("active", "count"),
                              Column("layers", "int"), Column("d_model", "int"),
                              Column("context", "int"), Column("published GPU-hours", "hours")])
    for row in catalogue.presets:
        table.add(row.name, row.title, row.params, row.params, row.active, row.n_layers,
                  row.d_model, row.context_length, row.published_gpu_hours)
    return View("calc presets", [table], catalogue.conventions)


def _g(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _gpus(catalogue: GPUCatalogue) -> View:
    table = Table("GPUs: dense peak TFLOP/s by dtype",
                  [Column("name"), Column("title")]
                  + [Column(dtype, "text") for dtype in PEAK_DTYPES]
                  + [Column("memory GiB", "text"), Column("GB/s", "text"),
                     Column("TDP W", "text"), Column("NVLink GB/s", "text"),
                     Column("PCIe GB/s", "text"), Column("system")])
    notes = list(catalogue.conventions)
    for gpu in catalogue.gpus:
        peaks = gpu["peak_tflops"]
        table.add(gpu["name"], gpu["title"], *(_g(peaks.get(d)) for d in PEAK_DTYPES),
                  _g(gpu["memory_gib"]), _g(gpu["bandwidth_gb_s"]), _g(gpu["tdp_w"]),
                  _g(gpu["nvlink_gb_s"]), _g(gpu["pcie_gb_s"]), gpu["system"] or "")
        caveat = f" — {gpu['notes']}" if gpu["notes"] else ""
        notes.append(f"{gpu['name']}: {gpu['source']}{caveat}")
    systems = Table("Systems: links per GPU, per direction",
                    [Column("name"), Column("title"), Column("gpu"), Column("GPUs/node", "int"),
                     Column("intra GB/s", "text"), Column("inter GB/s", "text"),
                     Column("intra µs", "text"), Column("inter µs", "text"),
                     Column("host GiB", "text")])
    for system in catalogue.systems:
        systems.add(system["name"], system["title"], system["gpu"], system["gpus_per_node"],
                    _g(system["intra_node_gb_s"]), _g(system["inter_node_gb_s"]),
                    _g(system["intra_node_latency_us"]), _g(system["inter_node_latency_us"]),
                    _g(system["host_memory_gib"]))
        caveat = f" — {system['notes']}" if system["notes"] else ""
        notes.append(f"{system['name']}: {system['source']}{caveat}")
    return View("calc GPU catalogue", [table, systems], notes)


def view(catalogue: PresetCatalogue | GPUCatalogue) -> View:
    return _presets(catalogue) if isinstance(catalogue, PresetCatalogue) else _gpus(catalogue)
