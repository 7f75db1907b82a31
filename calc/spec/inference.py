"""Inference options: GPU, batch, context, weight and KV-cache precision, utilisation."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from calc.numbers import annotated
from calc.spec.hardware import Dtype
from calc.spec.model import MAX_TOKENS_CONTEXT, Frozen
from calc.spec.precision import StorageDtype

MAX_BATCH = 1 << 30

# Weight-only quantisation (int4 GPTQ/AWQ) dequantises to bf16 before each matmul; 8-bit and fp4
# weights run on their own tensor-core rate (W8A8, FP8, NVFP4). Named in the report.
DEFAULT_COMPUTE = {"int4": "bf16"}
# The KV cache stays in the activations' 16-bit dtype unless --kv-dtype says otherwise (vLLM's
# kv_cache_dtype "auto").
WIDE = ("fp32", "bf16", "fp16")


MFU, MBU = annotated("mfu"), annotated("mbu")


class InferenceWorkload(Frozen):
    """Serving one model on K GPUs: b sequences at context T."""

    gpu: str = Field(min_length=1, description="GPU catalogue name")
    gpus: int = Field(1, ge=1, le=10_000_000,
                      description="GPUs the weights and cache are split over (ideal tensor "
                                  "parallelism)")
    context: int | None = Field(None, ge=1, le=MAX_TOKENS_CONTEXT,
                                description="tokens in each sequence's context T; default the "
                                            "model's context")
    batch: int = Field(1, ge=1, le=MAX_BATCH, description="sequences decoded together b")
    dtype: StorageDtype = Field("bf16", description="weight storage dtype")
    kv_dtype: StorageDtype | None = Field(
        None, description="KV-cache dtype; default the weights' dtype if 16/32-bit, else bf16")
    compute_dtype: Dtype | None = Field(
        None, description="dtype whose dense peak runs the matmuls; default the weights' dtype "
                          "(int4: bf16)")
    mfu: MFU = Field(1.0, description="fraction of the dense peak reached")
    mbu: MBU = Field(1.0, description="fraction of the memory bandwidth reached")

    @property
    def kv_dtype_name(self) -> str:
        if self.kv_dtype is not None:
            return self.kv_dtype
        return self.dtype if self.dtype in WIDE else "bf16"

    @property
    def compute_dtype_name(self) -> str:
        if self.compute_dtype is not None:
            return self.compute_dtype
        return DEFAULT_COMPUTE.get(self.dtype, self.dtype)


Rate, Latency, Share = annotated("request_rate"), annotated("latency_ms"), annotated("share")
ServingEngine = Literal["vllm", "trt-llm", "sglang"]
MAX_REQUESTS = 1 << 30


class Serving(Frozen):
    """Serving requests (calc.serving): their lengths, the load, the layout of each replica,
    the engine and the latency targets. Lengths given turn `calc infer`'s serving estimate on."""

    input_len: int | None = Field(None, ge=1, le=MAX_TOKENS_CONTEXT,
                                  description="prompt tokens per request (the mean with a "
                                              "spread)")
    output_len: int | None = Field(None, ge=1, le=MAX_TOKENS_CONTEXT,
                                   description="generated tokens per request (the mean with a "
                                               "spread)")
    spread: Share = Field(0.0, description="requests' lengths spread uniformly ± this share "
                                           "around the means (0: every request exactly "
                                           "input_len and output_len)")
    concurrency: int | None = Field(None, ge=1, le=MAX_BATCH,
                                    description="requests in flight (a closed loop of clients)")
    request_rate: Rate | None = Field(None, description="requests a second arriving (Poisson) "
                                                        "at the whole system")
    requests: int | None = Field(None, ge=1, le=MAX_REQUESTS,
                                 description="requests in the run (an offline queue's length)")
    tp: int | None = Field(None, ge=1, le=1 << 16,
                           description="tensor-parallel degree of a replica (default: chosen)")
    pp: int | None = Field(None, ge=1, le=1 << 16,
                           description="pipeline-parallel degree of a replica (default: chosen)")
    ep: int | None = Field(None, ge=1, le=1 << 16,
                           description="expert-parallel degree of the MoE layers (default 1: "
                                       "experts split by tensor parallelism)")
    engine: ServingEngine = Field("vllm", description="serving engine whose settings apply")
    chunked_prefill: bool | None = Field(
        None, description="prefill prompts in the decode iterations (default: the engine's)")
    prefix_hit: Share = Field(0.0, description="share of prompt tokens served from the prefix "
                                               "cache (prefix caching)")
    max_sequences: int | None = Field(None, ge=1, le=MAX_BATCH,
                                      description="the engine's cap on running sequences "
                                                  "(max-num-seqs; default: the engine's)")
    ttft_ms: Latency | None = Field(None, description="time-to-first-token target, ms (mean)")
    tpot_ms: Latency | None = Field(None, description="time-per-output-token target, ms (mean)")
    cross_node_tp: bool = Field(False, description="allow tensor parallelism across nodes")

    @property
    def asked(self) -> bool:
        return self.input_len is not None or self.output_len is not None
