"""What a config.json's quantization_config says about how its weights are stored.

calc counts parameters, not bytes: a quantized checkpoint has the counts of its unquantized
model. What changes is the memory its weights take when served, so `infer` stores them at the
quantized dtype by default. Formats that dequantize before each matmul (GPTQ, AWQ,
bitsandbytes 4-bit, MXFP4, weight-only compressed-tensors) compute at bf16; FP8 checkpoints
(DeepSeek-V3's block FP8, fbgemm) and int8/fp8 activations compute at their own rate. Sources:
transformers' quantizer docs for each quant_method (bits, load_in_4bit/8bit, weight formats).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Quantization:
    """How a checkpoint's weights are stored: calc.spec.precision's StorageDtype, the dtype
    whose peak runs its matmuls (None: the storage dtype's own), and what the file says."""

    dtype: str | None  # None: no storage dtype calc has fits the file's bits
    compute: str | None
    described: str


def _by_bits(bits: Any, method: str) -> Quantization:
    # GPTQ and AWQ store bits-wide integer weights and dequantize them before each matmul.
    dtype = {4: "int4", 8: "int8"}.get(bits)
    return Quantization(dtype, "bf16", f"{method}, {bits}-bit weights")


def _bitsandbytes(q: dict[str, Any]) -> Quantization:
    if q.get("load_in_4bit"):
        kind = q.get("bnb_4bit_quant_type", "fp4")
        return Quantization("int4", "bf16", f"bitsandbytes, 4-bit {kind} weights")
    if q.get("load_in_8bit"):
        # LLM.int8(): int8 weights and int8 matmuls for all but the outlier features.
        return Quantization("int8", None, "bitsandbytes, 8-bit (LLM.int8) weights")
    return Quantization(None, None, "bitsandbytes without load_in_4bit or load_in_8bit")


def _compressed_tensors(q: dict[str, Any]) -> Quantization:
    groups = [group for group in (q.get("config_groups") or {}).values()
              if isinstance(group, dict) and isinstance(group.get("weights"), dict)]
    if not groups:
        return Quantization(None, None, "compressed-tensors without config_groups weights")
    weights, activations = groups[0]["weights"], groups[0].get("input_activations")
    bits, kind = weights.get("num_bits"), weights.get("type", "int")
    dtype = {(8, "float"): "fp8", (8, "int"): "int8", (4, "int"): "int4",
             (4, "float"): "fp4"}.get((bits, kind))
    compute = None if activations else "bf16"  # weight-only schemes dequantize
    described = (f"compressed-tensors, {bits}-bit {kind} weights"
                 f"{'' if activations else ' (weight-only)'}")
    return Quantization(dtype, compute, described)


def quantization(config: dict[str, Any]) -> Quantization | None:
    """The storage of a config's weights, from its quantization_config (None without one)."""
    q = config.get("quantization_config")
    if not isinstance(q, dict):
        return None
    method = str(q.get("quant_method", "unnamed"))
    if method in ("gptq", "awq", "auto-round"):
        return _by_bits(q.get("bits"), method)
    if method == "bitsandbytes":
        return _bitsandbytes(q)
    if method in ("fp8", "fbgemm_fp8"):
        return Quantization("fp8", None, f"{method}, 8-bit float weights")
    if method == "mxfp4":
        return Quantization("fp4", "bf16", "mxfp4, 4-bit float weights in 32-element blocks")
    if method == "compressed-tensors":
        return _compressed_tensors(q)
    return Quantization(None, None, f"quant_method {method!r}")


def note(q: Quantization) -> str:
    """The sentence the report prints under a quantized model."""
    storage = (f"infer stores the weights at {q.dtype} by default"
               + (f" and runs the matmuls at {q.compute}" if q.compute else "")
               if q.dtype else "calc has no storage dtype for it: infer uses --dtype")
    return (f"quantization_config ({q.described}): parameter and FLOP counts are of the "
            f"unquantized model; {storage} (block scales not counted).")
