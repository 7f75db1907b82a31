"""A published throughput measurement: a training run's stated layout and what it achieved.

One entry of presets/published/step/. The figures are kept exactly as printed (TFLOP/s per GPU,
MFU, HFU, tokens/s, seconds per step) together with `flop_convention`, the rule the source used
to count FLOPs, so a model of step time can turn the source's TFLOP/s or MFU back into seconds
with the source's own formula (calc.source_flops), and compare time — which needs no convention.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from calc.spec.hardware import Dtype
from calc.spec.layout import Fp8Recipe, Framework, PipelineSchedule, Recompute
from calc.spec.published import PublishedRow

FlopConvention = Literal["megatron-eq3", "megatron-model", "megatron-selective-hw",
                         "megatron-core-2024", "megatron-core-2025", "palm", "6N", "foundry",
                         "foundry-recompute", "torchtitan", "unstated"]

# Layout fields a source may leave unprinted; `assumed` names those calc filled in. "gpu": the
# catalogue variant (memory size) where the source names only the chip ("Ampere GPUs").
ASSUMABLE = ("micro_batch", "vpp", "recompute", "sequence_parallel", "zero", "flash_attention",
             "flop_convention", "dtype", "pipeline_schedule", "fp8_recipe", "dp_shard",
             "split_embedding_loss", "ep", "cp", "tp", "pp", "global_batch", "seq_len", "gpu")
MAX_GPUS = 1 << 20
MAX_DEGREE = 1 << 16


class PublishedThroughput(PublishedRow):
    """A run that states its layout and its measured throughput, with where both come from."""

    name: str = Field(min_length=1, description="catalogue key, e.g. 'narayanan2021-145b'")
    model: str = Field(min_length=1, description="preset name in presets/models/")
    gpu: str = Field(min_length=1, description="GPU-catalogue key of the chips measured")
    system: str | None = Field(
        None, min_length=1, description="systems-catalogue key of the platform, if it is one")
    gpus: int = Field(ge=1, le=MAX_GPUS, description="GPUs in the job")
    tp: int = Field(1, ge=1, le=MAX_DEGREE, description="tensor-parallel degree")
    pp: int = Field(1, ge=1, le=MAX_DEGREE, description="pipeline-parallel degree")
    dp: int = Field(ge=1, le=MAX_GPUS, description="data-parallel degree (FSDP shards included)")
    cp: int = Field(1, ge=1, le=MAX_DEGREE, description="context-parallel degree")
    ep: int = Field(1, ge=1, le=MAX_DEGREE, description="expert-parallel degree (within dp·cp)")
    vpp: int = Field(1, ge=1, le=MAX_DEGREE,
                     description="virtual pipeline stages per GPU (interleaved 1F1B); 1 = plain")
    split_embedding_loss: bool = Field(
        False, description="the pipeline split counts the embedding and the loss as layers")
    micro_batch: int = Field(ge=1, le=MAX_GPUS, description="sequences per micro-batch")
    global_batch: int = Field(ge=1, description="sequences per optimizer step")
    seq_len: int = Field(ge=1, description="tokens per sequence")
    recompute: Recompute = Field(description="activation recomputation")
    sequence_parallel: bool = Field(description="Megatron sequence parallelism on the TP group")
    zero: int = Field(ge=0, le=3, description="ZeRO stage (FSDP full shard = 3; Megatron's "
                                              "distributed optimizer = 1)")
    flash_attention: bool = Field(description="fused (flash) attention rather than eager")
    dtype: Dtype = Field(description="matmul precision of the run (bf16, fp16, fp8)")
    framework: Framework = Field(description="software stack; NeMo counts as megatron, plain "
                                             "PyTorch FSDP (no other framework) as fsdp")
    dp_shard: int | None = Field(
        None, ge=1, le=MAX_GPUS, description="ranks one FSDP/ZeRO-3 shard group spans when it "
                                             "is smaller than dp (HSDP: shard inside, replicate "
                                             "across); None: the whole dp group")
    pipeline_schedule: PipelineSchedule | None = Field(
        None, description="pipeline schedule as the source names it; None: 1F1B, interleaved "
                          "when vpp > 1 (Megatron's default)")
    fp8_recipe: Fp8Recipe | None = Field(
        None, description="fp8 scaling recipe of an fp8 run: delayed or current per-tensor "
                          "scaling, current scaling per row (torchao's float8 rowwise), MXFP8 "
                          "blocks, or DeepSeek-V3-style blockwise")
    mfu_peak_dtype: Dtype | None = Field(
        None, description="the dtype whose dense peak the printed MFU (or HFU) divides by, "
                          "when it is not the run's dtype (fp8 runs printed against bf16)")
    software: str = Field("", description="framework or container release measured, as printed")
    compiled: bool | None = Field(
        None, description="the model ran under torch.compile, as printed; None: not stated")
    tp_overlap: bool | None = Field(
        None, description="tensor-parallel communication overlapped with the matrix products "
                          "(torchtitan's async TP, Megatron's --tp-comm-overlap), as printed; "
                          "None: not stated")
    position_table: int | None = Field(
        None, ge=1, description="rows of the learned position table the run built, when not the "
                                "preset's (llm-foundry builds max_seq_len = seq_len rows)")
    mtp_modules: int | None = Field(
        None, ge=0, description="multi-token-prediction modules the run trained, when the source "
                                "says (DeepSeek-V3 'w/o MTP': 0); None: the preset's")
    memory_gib: float | None = Field(
        None, gt=0, description="peak GPU memory per GPU as printed, GiB")
    tflops_per_gpu: float | None = Field(None, gt=0, description="TFLOP/s per GPU as printed")
    mfu: float | None = Field(None, gt=0, le=1, description="MFU as printed, a fraction")
    hfu: float | None = Field(None, gt=0, le=1, description="HFU as printed, a fraction")
    tokens_per_s: float | None = Field(None, gt=0, description="tokens/s of the whole job")
    tokens_per_s_per_gpu: float | None = Field(None, gt=0, description="tokens/s per GPU")
    samples_per_s_per_gpu: float | None = Field(
        None, gt=0, description="sequences per second per GPU as printed (Zero Bubble's "
                                "'samples per GPU per second')")
    step_time_s: float | None = Field(None, gt=0, description="seconds per optimizer step")
    flop_convention: FlopConvention = Field(
        description="how the source counted the FLOPs behind its TFLOP/s and MFU "
                    "(calc.source_flops.CONVENTIONS)")
    hfu_convention: FlopConvention | None = Field(
        None, description="how the source counted the FLOPs behind its HFU, when it prints one")

    @model_validator(mode="after")
    def _consistent(self) -> PublishedThroughput:
        product = self.tp * self.pp * self.dp * self.cp
        if product != self.gpus:
            raise ValueError(f"gpus: {self.gpus} is not tp·pp·dp·cp = {self.tp}·{self.pp}·"
                             f"{self.dp}·{self.cp} = {product}")
        per_step = self.dp * self.micro_batch
        if self.global_batch % per_step:
            raise ValueError(f"global_batch: {self.global_batch} is not a multiple of "
                             f"dp·micro_batch = {self.dp}·{self.micro_batch} = {per_step}")
        if (self.dp * self.cp) % self.ep:
            raise ValueError(f"ep: {self.ep} does not divide dp·cp = {self.dp * self.cp}")
        figures = (self.tflops_per_gpu, self.mfu, self.hfu, self.tokens_per_s,
                   self.tokens_per_s_per_gpu, self.samples_per_s_per_gpu, self.step_time_s)
        if all(value is None for value in figures):
            raise ValueError("a run needs a published figure: tflops_per_gpu, mfu, hfu, "
                             "tokens_per_s, tokens_per_s_per_gpu, samples_per_s_per_gpu or "
                             "step_time_s")
        self.check_assumed(ASSUMABLE)
        if self.hfu is not None and self.hfu_convention is None:
            raise ValueError("hfu_convention: required when hfu is given")
        return self

    @property
    def tokens_per_step(self) -> int:
        """Tokens per optimizer step: global batch × sequence length."""
        return self.global_batch * self.seq_len
