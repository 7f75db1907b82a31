"""Models side by side: `calc.compare(["llama2-7b", "mistral-7b"], tokens=2e12, gpu="h100")`.

Every number is read from the model's own report (calc.estimate), never recomputed, so a
comparison cannot disagree with the single-model reports it summarises. The rows are data:
ROW_GROUPS lists each group with how to read every row from a Report — an attribute path such
as "params.total" (the JSON contract's key) or a function. A new group, such as memory once the
report carries it, is one more entry there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import Field

from calc.counting import TRAIN_PER_FORWARD
from calc.document import Document, frame
from calc.errors import CalcError
from calc.presets import Preset, get_gpu
from calc.reports.estimate import Report, estimate
from calc.spec import ModelSpec
from calc.spec.model import Frozen

if TYPE_CHECKING:
    from calc.plan.memory import MemoryBlock

Value = int | float | str | bool | None
Options = dict[str, Any]  # the comparison's options a row may need: memory=..., gpu=...


@dataclass(frozen=True)
class RowSpec:
    """One compared quantity: a stable key, its label, how to show it and how to read it."""

    key: str  # "params.total": the Report attribute path (its JSON key); a name when `read`
    label: str
    kind: str  # a calc.tables kind: int, count, flops, sci, pct, ratio, hours, text
    read: Callable[[Report, Options], Value] | None = None

    def value(self, report: Report, options: Options) -> Value:
        """This row's value for `report`; `options` are the comparison's own (memory=...)."""
        if self.read is not None:
            return self.read(report, options)
        value: Any = report
        for part in self.key.split("."):
            if value is None:
                return None
            value = getattr(value, part)
        return value


@dataclass(frozen=True)
class RowGroup:
    key: str  # what --groups names
    title: str
    rows: tuple[RowSpec, ...]


def _experts(report: Report, options: Options) -> str | None:
    moe = report.spec.moe
    if moe is None:
        return None
    zero = f" (+{moe.n_zero_experts} zero-computation)" if moe.n_zero_experts else ""
    return f"{moe.top_k} of {moe.n_experts}{zero}"


def _kind_heads(report: Report, options: Options) -> str | None:
    """The kind with head shapes of its own (attention.kind_shapes): its query heads, key/value
    heads and head width, as the rows above give the model's."""
    spec = report.spec
    kind = spec.shaped_kind
    if kind is None:
        return None
    heads, kv, width, values = spec.heads_of(kind)
    return (f"{kind}: {heads}, {kv} KV, width {width}"
            + (f", values {values}" if values != width else "")
            + (", sinks" if spec.sinks_of(kind) != spec.sinks_of("") else ""))


def _six_n_ratio(report: Report, options: Options) -> float:
    flops = report.flops_per_token
    return flops.six_n / flops.train


def _published_hours(report: Report, options: Options) -> float | None:
    """The published GPU-hours, only when the run compared is the one published."""
    training = report.training
    published = training.published if training else None
    return published.gpu_hours if published and published.ratio is not None else None


def _published_ratio(report: Report, options: Options) -> float | None:
    published = report.training.published if report.training else None
    return published.ratio if published else None


def _predicted_layout(report: Report, options: Options) -> str | None:
    predicted = report.training.predicted if report.training else None
    return predicted.layout.label if predicted else None


@lru_cache(maxsize=64)
def _memory(spec: ModelSpec, gpu: str | None, seq_len: int,
            options: tuple[tuple[str, Any], ...]) -> MemoryBlock:
    """The model's memory (calc.plan.memory) on one GPU without sharding, mixed-precision
    AdamW, at the comparison's GPU and T and the activation `options` (micro-batch,
    recomputation, flash attention, dropout; calc.memory's defaults where not given)."""
    from calc.plan.memory import memory_block, memory_options
    from calc.spec.finetune import FineTune
    from calc.spec.offload import Offload

    opts = memory_options(spec, gpu, {"seq_len": seq_len, **dict(options)})
    return memory_block(spec, opts, get_gpu(gpu) if gpu else None, FineTune(), Offload())


def _memory_of(field: str) -> Callable[[Report, Options], Value]:
    def read(report: Report, options: Options) -> Value:
        block = _memory(report.spec, options.get("gpu"), report.flops_per_token.seq_len,
                        tuple(sorted(options.get("memory", {}).items())))
        return getattr(block, field)
    return read


ROW_GROUPS: list[RowGroup] = [
    RowGroup("shape", "Shape", (
        RowSpec("spec.n_layers", "layers", "int"),
        RowSpec("spec.d_model", "d_model", "int"),
        RowSpec("spec.attention.n_heads", "query heads", "int"),
        RowSpec("spec.n_kv_heads", "KV heads", "int"),
        RowSpec("spec.head_dim_qk", "query/key width per head", "int"),
        RowSpec("spec.kind_heads", "heads of one kind's own", "text", _kind_heads),
        RowSpec("spec.ffn.d_ff", "FFN width (dense layers)", "int"),
        RowSpec("spec.experts_per_token", "experts per token", "text", _experts),
        RowSpec("spec.vocab_size", "vocabulary", "int"),
        RowSpec("spec.context_length", "context", "int"),
    )),
    RowGroup("params", "Parameters", (
        RowSpec("params.total", "total", "int"),
        RowSpec("params.non_embedding", "non-embedding (Kaplan N)", "int"),
        RowSpec("params.active", "active per token", "int"),
        RowSpec("params.embedding", "embedding", "int"),
    )),
    RowGroup("flops", "FLOPs per token", (
        RowSpec("flops_per_token.seq_len", "at sequence length T", "int"),
        RowSpec("flops_per_token.forward", "forward", "int"),
        RowSpec("flops_per_token.train", f"train ({TRAIN_PER_FORWARD} × forward)", "int"),
        RowSpec("flops_per_token.attention_share", "attention share of forward", "pct"),
        RowSpec("flops_per_token.six_n_ratio", "6N / exact train", "ratio", _six_n_ratio),
    )),
    RowGroup("training", "Training", (
        RowSpec("training.tokens", "tokens", "sci"),
        RowSpec("training.flops", "training FLOPs", "sci"),
        RowSpec("training.gpu_hours", "GPU-hours", "hours"),
        RowSpec("training.days", "days on the GPUs given", "hours"),
        RowSpec("training.published_gpu_hours", "published GPU-hours (same tokens, GPU)",
                "hours", _published_hours),
        RowSpec("training.published_ratio", "estimate / published", "ratio",
                _published_ratio),
        RowSpec("training.predicted.mfu", "MFU predicted by calc step", "pct"),
        RowSpec("training.predicted.layout", "  its layout (calc step / calc layout)", "text",
                _predicted_layout),
        RowSpec("training.predicted.gpu_hours", "GPU-hours at the predicted MFU", "hours"),
        RowSpec("training.predicted.days", "days at the predicted MFU", "hours"),
    )),
    RowGroup("cost", "Cost and energy (when asked: --price, --energy, --grid-intensity)", (
        RowSpec("training.cost", "cost at the price given", "hours"),
        RowSpec("training.energy_kwh", "energy, kWh", "hours"),
        RowSpec("training.co2e_kg", "emissions, kg CO2e", "hours"),
    )),
    RowGroup("memory", "Training memory, one GPU, no sharding (calc.memory)", (
        RowSpec("memory.weights_bytes", "weights", "bytes", _memory_of("weights_bytes")),
        RowSpec("memory.gradients_bytes", "gradients", "bytes",
                _memory_of("gradients_bytes")),
        RowSpec("memory.optimizer_bytes", "optimizer states + fp32 master", "bytes",
                _memory_of("optimizer_bytes")),
        RowSpec("memory.activations_bytes", "activations, micro-batch 1 at T", "bytes",
                _memory_of("activations_bytes")),
        RowSpec("memory.total_bytes", "total", "bytes", _memory_of("total_bytes")),
        RowSpec("memory.fits", "fits the GPU", "bool", _memory_of("fits")),
    )),
]


class ComparisonRow(Frozen):
    group: str
    key: str = Field(description="the Report attribute path the values come from")
    label: str
    kind: str = Field(description="how text formats show the values (calc.tables kinds)")
    values: list[Value] = Field(description="one value per model, in `models` order")


class Comparison(Document):
    """Quantities (rows) by model (columns), with the conventions they were counted under."""

    models: list[str]
    titles: list[str]
    rows: list[ComparisonRow]
    layout: str = Field("columns", description="'columns': one column per model; 'rows': one "
                                               "row per model (a catalogue)")
    conventions: list[str]

    def value(self, key: str, model: str) -> Value:
        """The value of row `key` (e.g. "params.total") for `model`."""
        row = next(r for r in self.rows if r.key == key)
        return row.values[self.models.index(model)]

    def to_dataframe(self) -> Any:
        """Models × quantities, whatever the printed layout: a row per model, a column per
        quantity named by its unique key ("params.total", "memory.fits"), each column in its
        own dtype (int, float, bool, string)."""
        table = frame({row.key: list(row.values) for row in self.rows}, index=self.models)
        table.index.name = "model"
        return table


Models = str | ModelSpec | Preset | Sequence[str | ModelSpec | Preset]


def compare(models: Models, *, groups: Sequence[str] | None = None,
            layout: str = "columns", memory: dict[str, Any] | None = None,
            **workload: Any) -> Comparison:
    """The models' reports side by side; `workload` is calc.estimate's keyword arguments
    (tokens, gpu, gpus, seq_len, attention, dtype, mfu, mfu_source, system, a layout's options,
    search_layout), `memory` calc.memory's activation options for the memory rows
    (micro_batch, recompute, flash_attention, dropout)."""
    known = {group.key: group for group in ROW_GROUPS}
    if isinstance(groups, str):  # one group, not its letters
        groups = [groups]
    chosen = list(groups) if groups else list(known)
    unknown = [g for g in chosen if g not in known]
    if unknown:
        raise CalcError(f"groups: unknown {', '.join(map(repr, unknown))}; expected some of "
                        f"{', '.join(known)}")
    if layout not in ("columns", "rows"):
        raise CalcError(f"layout={layout!r}: expected 'columns' or 'rows'")
    if isinstance(models, str | ModelSpec | Preset):  # one model, not its characters
        models = [models]
    if not models:
        raise CalcError("models: give at least one preset name or spec")
    reports = [estimate(m, **workload) for m in models]
    context = {"memory": memory or {}, "gpu": workload.get("gpu")}
    rows = []
    for key in chosen:
        for spec in known[key].rows:
            values = [spec.value(report, context) for report in reports]
            if any(v is not None for v in values):
                rows.append(ComparisonRow(group=known[key].title, key=spec.key,
                                          label=spec.label, kind=spec.kind, values=values))
    notes = [f"{r.model}: {note}" for r in reports for note in r.notes]
    notes += reports[0].conventions  # the same workload: the same conventions
    if "memory" in chosen:
        o = _memory(reports[0].spec, None, reports[0].flops_per_token.seq_len,
                    tuple(sorted((memory or {}).items()))).options
        notes.append(
            f"Memory rows: calc.memory on one GPU without sharding, recipe {o.recipe!r} with "
            f"{o.optimizer}, micro-batch {o.micro_batch}, recomputation {o.recompute}, "
            f"{'flash' if o.flash_attention else 'eager'} attention, "
            f"{'with' if o.dropout else 'no'} dropout (python -m calc memory MODEL for the "
            f"rest).")
    notes += [f"Source of {r.model}: {r.source}." for r in reports]
    return Comparison(models=[r.model for r in reports], titles=[r.title for r in reports],
                      rows=rows, layout=layout, conventions=notes)
