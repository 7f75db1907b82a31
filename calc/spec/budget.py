"""A training compute budget: FLOPs, or GPUs × days × MFU × the dense peak."""

from __future__ import annotations

from pydantic import Field, model_validator

from calc.counting import DEFAULT_MFU, TOKENS_PER_PARAMETER
from calc.numbers import annotated
from calc.spec.hardware import Dtype
from calc.spec.model import Frozen

Flops, Days, MFU = annotated("flops"), annotated("days"), annotated("mfu")
TokensPerParameter = annotated("tokens_per_parameter")


class ComputeBudget(Frozen):
    """Either `flops`, or `gpu` with `days` (and `gpus`, `mfu`, `dtype`)."""

    flops: Flops | None = Field(None, description="training FLOPs C")
    gpu: str | None = Field(None, min_length=1, description="GPU catalogue name")
    gpus: int = Field(1, ge=1, le=10_000_000, description="GPUs K")
    days: Days | None = Field(None, description="wall-clock days t")
    mfu: MFU = Field(DEFAULT_MFU, description="model FLOPs utilisation u")
    dtype: Dtype = Field("bf16", description="dtype whose dense peak is used")
    tokens_per_parameter: TokensPerParameter = Field(
        TOKENS_PER_PARAMETER,
        description=f"tokens per parameter of the rule of thumb (Chinchilla's: "
                    f"{TOKENS_PER_PARAMETER})")

    @model_validator(mode="after")
    def _one_route(self) -> ComputeBudget:
        hardware = self.gpu is not None or self.days is not None
        if self.flops is not None and hardware:
            raise ValueError("give either flops or gpu + days (+ gpus, mfu), not both")
        if self.flops is None and (self.gpu is None or self.days is None):
            raise ValueError("give flops, or both gpu and days (e.g. gpu='h100', gpus=1024, "
                             "days=30)")
        return self
