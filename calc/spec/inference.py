"""Inference options: GPU, batch, context, weight and KV-cache precision, utilisation."""

from __future__ import annotations

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
