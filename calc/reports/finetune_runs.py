"""Every published fine-tuning measurement (presets/published/finetune/) beside calc's memory and
step-time models: `calc.reproduce_finetune()`, `python -m calc reproduce --finetune`.

Each row's settings become calc's options by one fixed table (calc.calibration.finetune.RULES,
written before any row was compared). Nothing is fitted: the rows marked `fit` are reported
apart from the held-out half only so that a later fit can be judged on rows it never saw. What
calc does not model (a stack's own loss, another stack's activation offload than torchtune's,
torch.compile's speed and, beyond the chunked loss under full recomputation, its memory, an
adapter on the LM head, unpacked batches' varying lengths) is listed per row and quantity,
and the errors are given with and without those rows.
"""

from __future__ import annotations

import statistics
from typing import Any, Literal

from pydantic import Field

from calc.calibration.finetune import RULES, published_tokens_per_s, run_options, unmodelled
from calc.document import Document
from calc.errors import CalcError
from calc.presets import load_finetune_runs
from calc.spec.finetune_runs import PublishedFinetune
from calc.spec.model import Frozen

Split = Literal["held out", "fit row"]
# issue 20's targets on the held-out rows
MEMORY_MEDIAN, MEMORY_P90, TIME_MEDIAN = 0.15, 0.40, 0.20
P90 = 0.9


class FinetuneRow(Frozen):
    name: str
    publisher: str
    model: str
    gpu: str
    gpus: int
    method: str
    split: Split
    unmodelled: list[str] = Field(description="settings of the run calc's memory does not "
                                              "model")
    unmodelled_time: list[str] = Field(default_factory=list,
                                       description="settings calc's step time does not model")
    published_memory_bytes: float | None = None
    memory_kind: str | None = None
    calc_memory_bytes: float | None = None
    memory_error: float | None = Field(None, description="calc / published − 1")
    published_tokens_per_s_per_gpu: float | None = None
    calc_tokens_per_s_per_gpu: float | None = None
    time_error: float | None = Field(None, description="calc / published − 1 (tokens/s)")
    skipped: list[str] = Field(default_factory=list, description="why a figure is not compared")


class ErrorSummary(Frozen):
    quantity: Literal["memory", "time"]
    rows: str = Field(description="which rows: held out, fit rows, all, or a publisher")
    modelled_only: bool = Field(description="rows with nothing calc leaves unmodelled")
    n: int
    median: float | None = Field(description="median |calc / published − 1|")
    p90: float | None
    worst: float | None = Field(description="the largest |error|, signed")
    worst_row: str | None


class FinetuneReproduction(Document):
    rows: list[FinetuneRow]
    summaries: list[ErrorSummary]
    targets: dict[str, float]
    rules: list[str]


def compare(run: PublishedFinetune) -> FinetuneRow:
    """One row: calc's memory and tokens/s beside the published ones."""
    from calc.reports.memory import memory
    from calc.reports.step import step

    options, skipped = run_options(run), []
    memory_fields: dict[str, Any] = {}
    if run.peak_memory_bytes is not None and run.seq_len is not None:
        try:
            block = memory(run.model, **options).memory
            # paged optimizer states live in unified memory bitsandbytes allocates outside
            # PyTorch's caching allocator (calc.spec.finetune.FineTune.paged): the GPU's
            # share is the total less them, as the memory report prints it
            total = block.total_bytes - block.paged_bytes
            memory_fields = dict(calc_memory_bytes=total,
                                 memory_error=total / run.peak_memory_bytes - 1)
        except CalcError as error:
            skipped.append(f"memory: {error}")
    elif run.peak_memory_bytes is not None:
        skipped.append("memory: seq_len unstated")
    published, why = published_tokens_per_s(run)
    time_fields: dict[str, Any] = {"published_tokens_per_s_per_gpu": published}
    if why is not None:
        skipped.append(why)
    elif published is not None:
        batch = run.micro_batch * run.grad_accumulation * run.gpus
        try:
            report = step(run.model, gpu=run.gpu, gpus=run.gpus, global_batch=batch,
                          **options)
            time_fields.update(calc_tokens_per_s_per_gpu=report.tokens_per_s_per_gpu,
                               time_error=report.tokens_per_s_per_gpu / published - 1)
        except CalcError as error:
            skipped.append(f"time: {error}")
    return FinetuneRow(
        name=run.name, publisher=run.publisher, model=run.model, gpu=run.gpu, gpus=run.gpus,
        method=run.method, split="fit row" if run.fit else "held out",
        unmodelled=unmodelled(run), unmodelled_time=unmodelled(run, "time"),
        published_memory_bytes=run.peak_memory_bytes,
        memory_kind=run.memory_kind, skipped=skipped, **memory_fields, **time_fields)


def summarise(rows: list[FinetuneRow], quantity: Literal["memory", "time"], label: str,
              modelled_only: bool) -> ErrorSummary:
    """Median, 90th percentile and worst |error| of `quantity` over `rows`."""
    errors = [(getattr(row, f"{quantity}_error"), row.name) for row in rows
              if getattr(row, f"{quantity}_error") is not None
              and not (modelled_only and (row.unmodelled if quantity == "memory"
                                          else row.unmodelled_time))]
    if not errors:
        return ErrorSummary(quantity=quantity, rows=label, modelled_only=modelled_only, n=0,
                            median=None, p90=None, worst=None, worst_row=None)
    sizes = sorted(abs(error) for error, _ in errors)
    worst, name = max(errors, key=lambda pair: abs(pair[0]))
    p90 = sizes[min(len(sizes) - 1, int(P90 * len(sizes)))]
    return ErrorSummary(quantity=quantity, rows=label, modelled_only=modelled_only,
                        n=len(errors), median=statistics.median(sizes), p90=p90, worst=worst,
                        worst_row=name)


def reproduce_finetune() -> FinetuneReproduction:
    """Every published fine-tuning run beside calc's memory and step time."""
    rows = [compare(run) for run in load_finetune_runs().values() if run.outcome == "ran"]
    groups: list[tuple[str, list[FinetuneRow]]] = [
        ("held out", [r for r in rows if r.split == "held out"]),
        ("fit rows (not fitted)", [r for r in rows if r.split == "fit row"]),
        ("all", rows),
        *((f"publisher {p}", [r for r in rows if r.publisher == p])
          for p in sorted({r.publisher for r in rows}))]
    summaries = [summarise(group, quantity, label, modelled)
                 for quantity in ("memory", "time") for label, group in groups
                 for modelled in (False, True)]
    return FinetuneReproduction(
        rows=rows, summaries=summaries,
        targets={"memory_median": MEMORY_MEDIAN, "memory_p90": MEMORY_P90,
                 "time_median": TIME_MEDIAN},
        rules=RULES)
