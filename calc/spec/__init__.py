"""Validated, frozen input schemas: the model, the accelerator and the workload."""

from calc.spec.hardware import DTYPES, GPU, Dtype
from calc.spec.model import (
    AttentionSpec,
    FFNSpec,
    MLASpec,
    ModelSpec,
    MoESpec,
    NormSpec,
    PositionSpec,
)
from calc.spec.workload import DEFAULT_MFU, AttentionConvention, Workload

__all__ = [
    "DEFAULT_MFU",
    "DTYPES",
    "GPU",
    "AttentionConvention",
    "AttentionSpec",
    "Dtype",
    "FFNSpec",
    "MLASpec",
    "MoESpec",
    "ModelSpec",
    "NormSpec",
    "PositionSpec",
    "Workload",
]
