"""Validated, frozen input schemas: the model, the accelerator and the workloads."""

from calc.spec.budget import ComputeBudget
from calc.spec.hardware import DTYPES, GPU, Dtype, System
from calc.spec.inference import InferenceWorkload
from calc.spec.memory import OPTIMIZERS, RECIPES, TrainingMemory
from calc.spec.model import (
    AttentionSpec,
    FFNSpec,
    MLASpec,
    ModelSpec,
    MoESpec,
    NormSpec,
    PositionSpec,
)
from calc.spec.precision import BYTES_PER_ELEMENT, STORAGE_DTYPES, StorageDtype
from calc.spec.workload import AttentionConvention, Workload

__all__ = [
    "BYTES_PER_ELEMENT",
    "DTYPES",
    "GPU",
    "OPTIMIZERS",
    "RECIPES",
    "STORAGE_DTYPES",
    "AttentionConvention",
    "AttentionSpec",
    "ComputeBudget",
    "Dtype",
    "FFNSpec",
    "InferenceWorkload",
    "MLASpec",
    "MoESpec",
    "ModelSpec",
    "NormSpec",
    "PositionSpec",
    "StorageDtype",
    "System",
    "TrainingMemory",
    "Workload",
]
