"""The step-time model's global constants (presets/timing.toml): efficiency per GPU generation,
memory-bound and network fractions, per-framework factors, the CPU optimizer's throughput under
offload, and the rows they were fitted on.

They are data, never per-run factors: every prediction uses the same numbers.
"""

from __future__ import annotations

import tomllib
from functools import cache

from pydantic import Field, ValidationError

from calc.errors import CalcError, one_line
from calc.presets import _data_dir
from calc.spec.model import Frozen

FILE = "timing.toml"


class Generation(Frozen):
    """How fast one GPU generation runs matrix products and flash attention."""

    gpus: tuple[str, ...] = Field(min_length=1, description="catalogue names of this generation")
    peak_fraction: float = Field(gt=0, le=1, description="large-GEMM share of the dense "
                                                        "16-bit peak")
    fp8_fraction: float = Field(gt=0, le=1, description="large-GEMM share of the dense fp8 "
                                                       "peak (fp8 products reach less of theirs)")
    flash_fraction: float = Field(gt=0, le=1, description="flash attention's share of peak")
    source: str = Field(min_length=1)


class GemmConstants(Frozen):
    half_dim: float = Field(ge=0, le=1 << 20,
                            description="a GEMM dimension x costs x / (x + half_dim) of it")
    source: str = Field(min_length=1)


class MemoryConstants(Frozen):
    hbm_fraction: float = Field(gt=0, le=1, description="share of HBM bandwidth streamed")
    source: str = Field(min_length=1)


class NetworkConstants(Frozen):
    intra_fraction: float = Field(gt=0, le=1, description="bus bandwidth / NVLink bandwidth")
    inter_fraction: float = Field(gt=0, le=1, description="bus bandwidth / NIC line rate")
    source: str = Field(min_length=1)


class FrameworkConstants(Frozen):
    compute_efficiency: float = Field(gt=0, le=2, description="compute-time divisor")
    overlap_grad_reduce: bool = Field(description="gradient reduction overlaps the backward")
    grad_reduce_bytes: int = Field(ge=1, le=4, description="bytes per gradient element sent")
    source: str = Field(min_length=1)


class OffloadConstants(Frozen):
    """ZeRO-Offload's optimizer step on the host CPU, as one published measurement."""

    cpu_adam_params: float = Field(gt=0, le=1e15, description="parameters one CPU-Adam step "
                                                              "updated in the measurement")
    cpu_adam_seconds: float = Field(gt=0, le=1e4, description="seconds that step took")
    source: str = Field(min_length=1)
    notes: str = Field("", description="what the measurement covers and what is assumed")

    @property
    def cpu_adam_params_per_s(self) -> float:
        """Parameters a node's CPUs update per second (the measured node's)."""
        return self.cpu_adam_params / self.cpu_adam_seconds


class FitRecord(Frozen):
    rows: tuple[str, ...] = Field(description="presets/published/step/ rows fitted on")
    method: str = Field(description="what was minimised, over which constants")


class TimingConstants(Frozen):
    generations: dict[str, Generation]
    gemm: GemmConstants
    memory: MemoryConstants
    network: NetworkConstants
    frameworks: dict[str, FrameworkConstants]
    offload: OffloadConstants
    fit: FitRecord

    def generation(self, gpu: str, declared: str | None = None) -> tuple[str, Generation]:
        """The generation a GPU belongs to (`declared`: the one a user's GPU file names);
        CalcError for a GPU with no constants."""
        if declared is not None:
            if declared not in self.generations:
                raise CalcError(f"generation={declared!r} of gpu {gpu!r} has no step-time "
                                f"constants in presets/{FILE} (known: "
                                f"{', '.join(self.generations)})")
            return declared, self.generations[declared]
        for name, generation in self.generations.items():
            if gpu in generation.gpus:
                return name, generation
        known = sorted(g for gen in self.generations.values() for g in gen.gpus)
        raise CalcError(f"gpu={gpu!r} has no step-time constants in presets/{FILE} "
                        f"(known: {', '.join(known)})")

    def framework(self, name: str) -> FrameworkConstants:
        if name not in self.frameworks:
            raise CalcError(f"framework={name!r} has no constants in presets/{FILE} "
                            f"(known: {', '.join(self.frameworks)})")
        return self.frameworks[name]


def parse(data: dict) -> TimingConstants:
    try:
        return TimingConstants.model_validate(data)
    except ValidationError as error:
        raise CalcError(one_line(error, f"presets/{FILE}")) from None


@cache
def load_constants() -> TimingConstants:
    return parse(tomllib.loads((_data_dir() / FILE).read_text(encoding="utf-8")))
