"""Every published fine-tuning measurement (presets/published/finetune/) beside calc's memory and
step-time models: `calc.reproduce_finetune()`, `python -m calc reproduce --finetune`.

Each row's settings become calc's options by one fixed table (RULES, written before any row
was compared): its precision a recipe, its optimizer calc's, its sharding a ZeRO stage over its
GPUs, its attention flash or eager, FSDP's CPU offload ZeRO-Offload of the optimizer and the
parameters; transformers' modules for a stack built on them; the framework constants are
PyTorch FSDP's for every stack. Nothing is fitted: the
rows marked `fit` are reported apart from the held-out half only so that a later fit can be
judged on rows it never saw. What calc does not model (fused or chunked losses, optimizer in
the backward, activation offload, torch.compile, an adapter on the LM head, unpacked batches'
varying lengths) is listed per row, and the errors are given with and without those rows.
"""

from __future__ import annotations

import statistics
from typing import Any, Literal

from pydantic import Field

from calc.document import Document
from calc.errors import CalcError
from calc.presets import load_finetune_runs
from calc.spec.finetune_runs import PublishedFinetune
from calc.spec.model import Frozen

Split = Literal["held out", "fit row"]
# issue 20's targets on the held-out rows
MEMORY_MEDIAN, MEMORY_P90, TIME_MEDIAN = 0.15, 0.40, 0.20
P90 = 0.9

RECIPE = {"bf16-true": ("pure-bf16", "bf16"), "bf16-mixed": ("mixed", "bf16"),
          "fp16-mixed": ("mixed", "fp16"), "fp32": ("fp32", "fp32")}
OPTIMIZER = {"adamw": ("adamw", False), "adamw-8bit": ("adam8bit", False),
             "paged-adamw-8bit": ("adam8bit", True), "paged-adamw-32bit": ("adamw", True),
             "sgd": ("sgd", False)}
ZERO = {"none": 0, "ddp": 0, "fsdp-full-shard": 3, "fsdp-shard-grad-op": 2}
# The loss as each row computes it (calc.spec.finetune.LOSS_BYTES): its fused or chunked loss,
# else the stack's own; stacks built on transformers' models take transformers' loss.
FUSED_LOSS = {"chunked-ce": "chunked", "liger-flce": "fused"}
HF_STACKS = ("fsdp_qlora", "transformers+peft", "axolotl", "llama-factory", "trl")
# The stack: transformers' models (their activations and loss, --framework hf) for the stacks
# built on them, PyTorch FSDP for the others (torchtune, LitGPT, Unsloth: their own model code
# and training loop); both priced with PyTorch FSDP's constants.
FRAMEWORK = "fsdp"
RULES = [
    "precision bf16-true → recipe pure-bf16 (weights, gradients, optimizer states bf16); "
    "bf16-mixed / fp16-mixed → mixed; fp32 → fp32",
    "optimizer adamw-8bit → adam8bit; paged-* → the same states, pageable (not counted on the "
    "GPU)",
    "sharding ddp → dp = GPUs; fsdp-full-shard → ZeRO 3 over the GPUs; fsdp-shard-grad-op → "
    "ZeRO 2; FSDP CPU offload → optimizer and parameters offloaded to the host",
    "attention sdpa / flash-attention-2 / unstated → flash (no s×s scores); eager → eager",
    "loss chunked-ce → chunked; liger-flce → fused; none on a stack built on transformers' "
    "models (fsdp_qlora, transformers+peft, axolotl, LLaMA-Factory, TRL) → hf; otherwise calc's "
    "default fp32 logits, the stack's own loss listed as not modelled",
    "rows not all seq_len long (unpacked data): memory at seq_len, the longest batch; no time "
    "(the tokens are unknown)",
    "time: tokens/s per GPU as printed, the job's ÷ GPUs, or samples × seq_len ÷ the run's wall "
    "time ÷ GPUs; a multi-GPU figure whose scope is unstated is not compared",
    f"framework: hf (transformers' modules' activations) for a stack built on transformers' "
    f"models (as for the loss), {FRAMEWORK} otherwise; {FRAMEWORK}'s constants for every stack; "
    f"global batch = micro-batch × accumulation × GPUs",
]


class FinetuneRow(Frozen):
    name: str
    publisher: str
    model: str
    gpu: str
    gpus: int
    method: str
    split: Split
    unmodelled: list[str] = Field(description="settings of the run calc does not model")
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


def unmodelled(run: PublishedFinetune) -> list[str]:
    """What the run does that calc's models leave out."""
    found = []
    if run.fused_loss not in ("none", *FUSED_LOSS):
        found.append(run.fused_loss)
    if run.fused_loss == "none" and run.stack not in HF_STACKS:
        found.append(f"{run.stack}'s loss")
    if run.optimizer_in_backward:
        found.append("optimizer in backward")
    if run.activation_offload:
        found.append("activation offload")
    if run.compile:
        found.append("torch.compile")
    if run.lora_head:
        found.append("LoRA on the LM head")
    if not run.rows_full:
        found.append("unpacked rows")
    return found


def loss_of(run: PublishedFinetune) -> str:
    """How the run's loss holds the logits (RULES)."""
    if run.fused_loss in FUSED_LOSS:
        return FUSED_LOSS[run.fused_loss]
    return "hf" if run.fused_loss == "none" and run.stack in HF_STACKS else "fp32"


def run_options(run: PublishedFinetune) -> dict[str, Any]:
    """The run's settings as calc's options (RULES)."""
    recipe, dtype = RECIPE[run.precision]
    optimizer, paged = OPTIMIZER[run.optimizer]
    options: dict[str, Any] = dict(
        recipe=recipe, dtype=dtype, optimizer=optimizer, zero=ZERO[run.sharding],
        dp=run.gpus, micro_batch=run.micro_batch, seq_len=run.seq_len,
        recompute=run.recompute, flash_attention=run.attention != "eager",
        finetune=run.method, loss=loss_of(run),
        framework="hf" if run.stack in HF_STACKS else FRAMEWORK)
    if run.method != "full":
        options.update(lora_rank=run.lora_rank, lora_targets=run.lora_targets, paged=paged)
    if run.quant is not None:
        options.update(base_dtype=run.quant, double_quant=bool(run.double_quant))
    if run.cpu_offload:
        options.update(offload_optimizer="cpu", offload_params="cpu")
    return options


def published_tokens_per_s(run: PublishedFinetune) -> tuple[float | None, str | None]:
    """(tokens/s per GPU from the run's figures, or None with why)."""
    if run.tokens_per_s is not None:
        if run.tokens_scope == "per_gpu" or run.gpus == 1:
            return run.tokens_per_s, None
        if run.tokens_scope == "job":
            return run.tokens_per_s / run.gpus, None
        return None, "tokens/s: per GPU or for the job is unstated"
    if run.run_time_s is not None:
        if not run.rows_full or run.seq_len is None:
            return None, "run time: rows of varying length, tokens unknown"
        if run.run_samples is None:
            return None, "run time: samples unstated"
        return run.run_samples * run.seq_len / run.run_time_s / run.gpus, None
    return None, "no speed figure"


def compare(run: PublishedFinetune) -> FinetuneRow:
    """One row: calc's memory and tokens/s beside the published ones."""
    from calc.reports.memory import memory
    from calc.reports.step import step

    options, skipped = run_options(run), []
    memory_fields: dict[str, Any] = {}
    if run.peak_memory_bytes is not None and run.seq_len is not None:
        try:
            total = memory(run.model, **options).memory.total_bytes
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
        unmodelled=unmodelled(run), published_memory_bytes=run.peak_memory_bytes,
        memory_kind=run.memory_kind, skipped=skipped, **memory_fields, **time_fields)


def summarise(rows: list[FinetuneRow], quantity: Literal["memory", "time"], label: str,
              modelled_only: bool) -> ErrorSummary:
    """Median, 90th percentile and worst |error| of `quantity` over `rows`."""
    errors = [(getattr(row, f"{quantity}_error"), row.name) for row in rows
              if getattr(row, f"{quantity}_error") is not None
              and not (modelled_only and row.unmodelled)]
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
