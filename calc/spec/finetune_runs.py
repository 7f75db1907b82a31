"""A published fine-tuning measurement: peak memory and speed at stated settings on named GPUs.

One entry of presets/published/finetune/. The figures are kept exactly as printed — peak memory
in the unit the source prints (GiB or GB) with what it measured (torch.cuda.max_memory_allocated,
max_memory_reserved, the allocator's active-bytes peak, nvidia-smi), tokens per second with
whether they are per GPU or for the job and which tokens were counted, the wall time of a whole
run with what it covered, or the longest sequence that still trained — so a model of fine-tuning
memory and time can be set beside each on the source's own terms. `assumed` lists the settings
the source does not print, filled in as the entry's notes say, decided from the source's text
before any model was run against it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from calc.counting import GIB, GIGA
from calc.spec.finetune import ALL_LINEAR, LORA_TARGETS, QUANTS, Method, parse_targets
from calc.spec.model import MAX_WIDTH
from calc.spec.published import PublishedRow

# The program that ran the measurement (its own training loop and kernels).
Stack = Literal["torchtune", "litgpt", "fsdp_qlora", "unsloth", "transformers+peft",
                "axolotl", "llama-factory", "trl"]
# bf16-true: weights, gradients and optimizer states all bf16 (torchtune dtype bf16, Lightning
# 'bf16-true', fsdp_qlora 'bf16'); bf16-mixed / fp16-mixed: fp32 weights, 16-bit autocast.
Precision = Literal["bf16-true", "bf16-mixed", "fp16-mixed", "fp32"]
Optimizer = Literal["adamw", "adamw-8bit", "paged-adamw-8bit", "paged-adamw-32bit", "sgd"]
# ddp: a full replica per GPU (fsdp_qlora's sharding_strategy 'ddp' included).
Sharding = Literal["none", "ddp", "fsdp-full-shard", "fsdp-shard-grad-op"]
Recompute = Literal["none", "selective", "full"]
Attention = Literal["sdpa", "flash-attention-2", "eager", "unstated"]
# chunked-ce: torchtune's CEWithChunkedOutputLoss (logits upcast chunk by chunk); liger-flce:
# Liger's fused linear cross-entropy (logits never whole); unsloth-ce: Unsloth's fused loss.
FusedLoss = Literal["none", "chunked-ce", "liger-flce", "unsloth-ce"]
MemoryKind = Literal["max_memory_allocated", "max_memory_reserved", "active_bytes_peak",
                     "nvidia-smi", "unstated"]
MemoryUnit = Literal["GiB", "GB"]
TokensScope = Literal["per_gpu", "job", "unstated"]
TokensCounted = Literal["all", "unmasked-labels", "unstated"]
Outcome = Literal["ran", "oom"]

# Settings a source may leave unprinted; `assumed` names those filled in (notes say from what).
ASSUMABLE = ("gpu", "lora_rank", "lora_alpha", "lora_targets", "quant", "double_quant",
             "precision", "seq_len", "micro_batch", "grad_accumulation", "recompute",
             "optimizer", "sharding", "attention", "fused_loss", "compile", "dataset",
             "rows_full", "stack_version", "run_samples", "memory_kind", "tokens_scope")
MAX_GPUS = 1 << 16
MAX_SEQ = 1 << 24
BYTES_PER_UNIT = {"GiB": GIB, "GB": GIGA}


class PublishedFinetune(PublishedRow):
    """A fine-tuning run that states its settings and what it measured, with its source."""

    name: str = Field(min_length=1, description="catalogue key, e.g. 'torchtune-llama3.1-8b-"
                                                "qlora-4090'")
    model: str = Field(min_length=1, description="preset name in presets/models/")
    gpu: str = Field(min_length=1, description="GPU-catalogue key of the chips measured")
    gpu_as_printed: str = Field("", description="the GPU as the source names it ('1x A6000', "
                                                "'A100 40GB SMX')")
    gpus: int = Field(ge=1, le=MAX_GPUS, description="GPUs in the run")
    method: Method = Field(description="full, lora or qlora")
    lora_rank: int | None = Field(None, ge=1, le=MAX_WIDTH, description="LoRA rank r")
    lora_alpha: float | None = Field(None, gt=0, description="LoRA alpha (scale alpha/r); "
                                                             "changes no memory or time")
    lora_targets: tuple[str, ...] | str | None = Field(
        None, description="adapted projections in calc's names (q, k, v, o, up, gate, down) "
                          "or 'all-linear'")
    lora_head: bool = Field(False, description="an adapter on the LM head too")
    quant: Literal["nf4", "fp4"] | None = Field(
        None, description="QLoRA: 4-bit storage of the frozen weights (bitsandbytes)")
    double_quant: bool | None = Field(
        None, description="QLoRA: the block constants quantised too (bitsandbytes "
                          "compress_statistics / bnb_4bit_use_double_quant)")
    precision: Precision = Field(description="bf16-true (weights, gradients, optimizer states "
                                             "in bf16), bf16-mixed, fp16-mixed or fp32")
    dataset: str = Field(min_length=1, description="training data as the source names it "
                                                   "('alpaca', 'dummy')")
    seq_len: int | None = Field(
        None, ge=1, le=MAX_SEQ,
        description="tokens per row: the packed or padded length when every row has it "
                    "(rows_full), else the cap rows are cut at; None when unstated")
    rows_full: bool = Field(
        description="every row holds seq_len tokens (packed, or padded to seq_len); false: "
                    "rows are each example's length (padded to the longest in the batch)")
    micro_batch: int = Field(ge=1, le=MAX_SEQ, description="rows per micro-batch per GPU")
    grad_accumulation: int = Field(1, ge=1, le=MAX_SEQ,
                                   description="micro-batches per optimizer step")
    recompute: Recompute = Field(description="activation recomputation (gradient "
                                             "checkpointing of each decoder layer = full)")
    activation_offload: bool = Field(False, description="saved activations moved to the host")
    optimizer: Optimizer = Field(description="optimizer of the trainable weights")
    optimizer_in_backward: bool = Field(
        False, description="optimizer step fused into the backward (no whole gradient kept)")
    sharding: Sharding = Field(description="how weights and states are split over the GPUs")
    cpu_offload: bool = Field(False, description="parameters (and their gradients) kept on the "
                                                 "host between uses (FSDP CPU offload)")
    compile: bool = Field(False, description="torch.compile on")
    attention: Attention = Field(description="attention kernel")
    fused_loss: FusedLoss = Field("none", description="fused or chunked cross-entropy")
    stack: Stack = Field(description="the program measured")
    stack_version: str = Field("", description="its release or commit, as the source gives it")
    outcome: Outcome = Field("ran", description="'oom': the source reports out of memory at "
                                                "these settings (no figures)")
    peak_memory: float | None = Field(None, gt=0, description="peak memory per GPU as printed")
    peak_memory_unit: MemoryUnit | None = Field(None, description="GiB or GB as printed")
    memory_kind: MemoryKind | None = Field(
        None, description="what the peak is: torch.cuda.max_memory_allocated, "
                          "max_memory_reserved, the allocator's active_bytes peak, nvidia-smi, "
                          "or unstated")
    tokens_per_s: float | None = Field(None, gt=0, description="tokens per second as printed")
    tokens_scope: TokensScope | None = Field(None, description="per GPU or the whole job")
    tokens_counted: TokensCounted | None = Field(
        None, description="which tokens: all (padding included) or the unmasked labels")
    run_time_s: float | None = Field(None, gt=0, description="wall time of a whole run, s")
    run_time_covers: str = Field("", description="what the timed run did ('4 epochs over "
                                                 "Alpaca2k', '1,024 samples')")
    run_samples: int | None = Field(None, ge=1, description="sequences the timed run "
                                                            "processed, when stated")
    max_seq_len_fits: int | None = Field(
        None, ge=1, le=MAX_SEQ, description="the longest padded sequence that trained without "
                                            "running out of memory (capacity runs)")
    fit: bool = Field(description="true: may be used to fit a fine-tuning model's constants; "
                                  "false: held out to measure its error")

    @field_validator("lora_targets", mode="before")
    @classmethod
    def _targets(cls, value: object) -> object:
        if value is None or not isinstance(value, (str, list, tuple)):
            return value
        targets = parse_targets(value)
        if targets != ALL_LINEAR:
            unknown = [t for t in targets if t not in LORA_TARGETS]
            if unknown:
                raise ValueError(f"lora_targets: {unknown} are not projections; allowed: "
                                 f"{', '.join(LORA_TARGETS)} or {ALL_LINEAR}")
        return targets

    @model_validator(mode="after")
    def _consistent(self) -> PublishedFinetune:
        self._check_method()
        self._check_figures()
        if (self.gpus == 1) != (self.sharding == "none"):
            raise ValueError(f"sharding: {self.sharding!r} with gpus={self.gpus} (one GPU has "
                             f"'none'; more need ddp or fsdp)")
        self.check_assumed(ASSUMABLE)
        return self

    def _check_method(self) -> None:
        adapters = (self.lora_rank, self.lora_targets)
        if self.method == "full":
            if any(v is not None for v in (*adapters, self.quant, self.double_quant)):
                raise ValueError("method: 'full' trains every weight; lora_rank, lora_targets, "
                                 "quant and double_quant do not apply")
            return
        if any(v is None for v in adapters):
            raise ValueError(f"method: {self.method!r} needs lora_rank and lora_targets")
        if (self.method == "qlora") != (self.quant is not None):
            raise ValueError(f"quant: {self.quant!r} with method {self.method!r} (QLoRA stores "
                             f"the frozen weights in {' or '.join(QUANTS)}; LoRA does not)")

    def _check_figures(self) -> None:
        figures = (self.peak_memory, self.tokens_per_s, self.run_time_s, self.max_seq_len_fits)
        if self.outcome == "oom":
            if any(v is not None for v in figures):
                raise ValueError("outcome: 'oom' runs carry no figures")
            return
        if all(v is None for v in figures):
            raise ValueError("a run needs a published figure: peak_memory, tokens_per_s, "
                             "run_time_s or max_seq_len_fits (or outcome 'oom')")
        if (self.peak_memory is None) != (self.peak_memory_unit is None) or (
                (self.peak_memory is None) != (self.memory_kind is None)):
            raise ValueError("peak_memory: give it with peak_memory_unit and memory_kind")
        if (self.tokens_per_s is None) != (self.tokens_scope is None) or (
                (self.tokens_per_s is None) != (self.tokens_counted is None)):
            raise ValueError("tokens_per_s: give it with tokens_scope and tokens_counted")
        if (self.run_time_s is None) != (not self.run_time_covers):
            raise ValueError("run_time_s: give it with run_time_covers (what the run did)")

    @property
    def peak_memory_bytes(self) -> float | None:
        """The printed peak in bytes (GiB = 2^30, GB = 10^9)."""
        if self.peak_memory is None or self.peak_memory_unit is None:
            return None
        return self.peak_memory * BYTES_PER_UNIT[self.peak_memory_unit]

    @property
    def global_batch(self) -> int:
        """Rows per optimizer step: micro-batch × accumulation × data-parallel GPUs."""
        return self.micro_batch * self.grad_accumulation * self.gpus
