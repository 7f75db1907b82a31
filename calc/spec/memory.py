"""Training-memory options: precision recipe, optimizer, ZeRO stage, parallelism, recomputation.

The recipes and optimizers are data: bytes per parameter for each piece of the model states, each
with the source that publishes it (its `source`: ZeRO §3.1, the Megatron-LM README, Hugging Face's
docs and Ultra-Scale Playbook).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from calc.spec.gemm_precision import GemmPrecision
from calc.spec.layout import Layout
from calc.spec.model import Frozen

Recipe = Literal["mixed", "mixed-fp32-grads", "mixed-fp32-grad-copy", "fp32", "pure-bf16"]
Optimizer = Literal["adamw", "adam8bit", "sgd", "lion", "adafactor", "muon"]


@dataclass(frozen=True)
class RecipeInfo:
    """Bytes per parameter of each model-state piece (optimizer states come from Optimizer)."""

    weights: int  # working weights the forward pass reads
    gradients: int
    gradient_copy: int  # an fp32 copy of the gradients, sharded with the optimizer
    master: int  # fp32 master weights the optimizer updates
    label: str
    source: str


RECIPES: dict[str, RecipeInfo] = {
    "mixed": RecipeInfo(
        2, 2, 0, 4, "16-bit weights and gradients, fp32 master weights",
        "Rajbhandari et al. 2020 (ZeRO) §3.1: 2Ψ + 2Ψ + KΨ, K = 12 with Adam → 16 bytes"),
    "mixed-fp32-grads": RecipeInfo(
        2, 4, 0, 4, "16-bit weights, fp32 gradients (bf16 with fp32 gradient accumulation), "
        "fp32 master weights",
        "Hugging Face Transformers docs, model_memory_anatomy (weights 6 = 2 + 4, gradients 4, "
        "AdamW 8 → 18); Megatron-LM README, 'bf16 param, fp32 grads' 18 → 6 + 12/d"),
    "mixed-fp32-grad-copy": RecipeInfo(
        2, 2, 4, 4, "16-bit weights and gradients, fp32 copies of both",
        "Hugging Face Ultra-Scale Playbook, memory section (2 + 2 + fp32 params 4 + fp32 "
        "grads 4 + Adam 8 → 20); Megatron-LM README, 'fp16 param, fp16 grads' 20 → 4 + 16/d"),
    "fp32": RecipeInfo(
        4, 4, 0, 0, "fp32 weights and gradients, no master copy",
        "Megatron-LM README, 'fp32 param, fp32 grads' 16 → 8 + 8/d"),
    "pure-bf16": RecipeInfo(
        2, 2, 0, 0, "16-bit weights and gradients, no fp32 master copy (optimizer states fp32)",
        "Dettmers et al. 2023 (QLoRA) §1: regular 16-bit fine-tuning of a 65B model needs "
        ">780 GB, 12 bytes per parameter (2 + 2 + Adam's 8)"),
}


@dataclass(frozen=True)
class OptimizerInfo:
    state_bytes: float  # per parameter; for a shaped optimizer, per parameter of a hidden matrix
    label: str
    source: str
    # Optimizers whose states depend on the shapes: the key of their bytes in
    # calc.formulas.optimizer.OPTIMIZER_STATES (the whole model; "<key>_adapters" under LoRA).
    shaped: str | None = None


OPTIMIZERS: dict[str, OptimizerInfo] = {
    "adamw": OptimizerInfo(8, "AdamW: fp32 m and v",
                           "Hugging Face Transformers docs, model_memory_anatomy: 8 bytes"),
    "adam8bit": OptimizerInfo(
        2, "8-bit AdamW (bitsandbytes): 1-byte m and v",
        "Hugging Face Transformers docs, model_memory_anatomy: 2 bytes; Dettmers et al. 2022 "
        "(8-bit Optimizers via Block-wise Quantization) §2: one fp32 absmax per block of 2048 "
        "values, +0.2 %, not counted"),
    "sgd": OptimizerInfo(4, "SGD with momentum: one fp32 state",
                         "Hugging Face Transformers docs, model_memory_anatomy: 4 bytes"),
    "lion": OptimizerInfo(4, "Lion: one fp32 momentum",
                          "Chen et al. 2023 (Symbolic Discovery of Optimization Algorithms) §2: "
                          "Lion keeps only the momentum, half of AdamW's states"),
    "adafactor": OptimizerInfo(
        0, "Adafactor: factored fp32 second moment, no first moment",
        "Shazeer & Stern 2018 (Adafactor) §3: n + m values for an n × m matrix, a full second "
        "moment for vectors; Hugging Face's Adafactor default beta1=None (no momentum)",
        shaped="adafactor"),
    "muon": OptimizerInfo(
        4, "Muon: one fp32 momentum per hidden matrix, AdamW's 8 bytes elsewhere",
        "Jordan et al. 2024 (Muon: an optimizer for hidden layers); Liu et al. 2025 (Muon is "
        "Scalable for LLM Training) §2: embeddings, LM head and vectors keep AdamW",
        shaped="muon"),
}


class ModelStates(Frozen):
    """How the model states are kept: their precision recipe, the optimizer and the precision
    of the projections' GEMMs."""

    recipe: Recipe | None = Field(
        None, description="model-state precision recipe; default 'mixed' for 16-bit dtypes, "
                          "'fp32' for fp32")
    optimizer: Optimizer = Field("adamw", description="optimizer whose states are kept")
    precision: GemmPrecision = Field(
        "bf16", description="the projections' GEMMs: bf16 (the dtype), or fp8/mxfp8/nvfp4 "
                            "with cached low-precision weight copies (calc.spec.gemm_precision)")


class TrainingMemory(ModelStates, Layout):  # fields in reverse order: the layout's first
    """How a model is trained, as far as the memory of one GPU can tell: a layout and how its
    model states are kept."""

    gpu: str | None = Field(None, description="GPU catalogue name whose memory is the budget")

    @model_validator(mode="after")
    def _recipe_matches_dtype(self) -> TrainingMemory:
        if self.recipe is None:
            return self
        if (self.recipe == "fp32") != (self.dtype == "fp32"):
            raise ValueError(
                f"recipe={self.recipe!r} does not go with dtype={self.dtype!r}: recipe 'fp32' "
                f"needs dtype 'fp32', the mixed recipes need bf16, fp16 or fp8")
        return self

    @property
    def recipe_name(self) -> str:
        if self.recipe is not None:
            return self.recipe
        return "fp32" if self.dtype == "fp32" else "mixed"
