"""A training compute budget: FLOPs, or GPUs × days × MFU × the dense peak."""

from __future__ import annotations

from pydantic import Field, model_validator

from calc.counting import DEFAULT_MFU, TOKENS_PER_PARAMETER
from calc.spec.hardware import Dtype
from calc.spec.model import Frozen


class ComputeBudget(Frozen):
    """Either `flops`, or `gpu` with `days` (and `gpus`, `mfu`, `dtype`)."""

    flops: float | None = Field(None, gt=0, le=1e40, description="training FLOPs C")
    gpu: str | None = Field(None, min_length=1, description="GPU catalogue name")
    gpus: int = Field(1, ge=1, le=10_000_000, description="GPUs K")
    days: float | None = Field(None, gt=0, le=1e6, description="wall-clock days t")
    mfu: float = Field(DEFAULT_MFU, gt=0, le=1, description="model FLOPs utilisation u")
    dtype: Dtype = Field("bf16", description="dtype whose dense peak is used")
    tokens_per_parameter: float = Field(
        TOKENS_PER_PARAMETER, gt=0, le=1e6,
        description="tokens per parameter of the rule of thumb (Chinchilla: 20)")

    @model_validator(mode="after")
    def _one_route(self) -> ComputeBudget:
        hardware = self.gpu is not None or self.days is not None
        if self.flops is not None and hardware:
            raise ValueError("give either flops or gpu + days (+ gpus, mfu), not both")
        if self.flops is None and (self.gpu is None or self.days is None):
            raise ValueError("give flops, or both gpu and days (e.g. gpu='h100', gpus=1024, "
                             "days=30)")
        return self
