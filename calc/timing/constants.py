"""The step-time model's global constants (presets/timing.toml): efficiency per GPU generation,
memory-bound and network fractions, per-framework factors, the CPU optimizer's throughput under
offload, and the rows they were fitted on.

They are data, never per-run factors: every prediction uses the same numbers.
"""

from __future__ import annotations

import tomllib
from functools import cache
from typing import Literal

from pydantic import Field, ValidationError, model_validator

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


class DerivedKernel(Frozen):
    """An attention kernel with no measured series of its own on the GPUs priced: a measured
    kernel's speed times `relative_speed`, from a benchmark that ran both on one GPU."""

    measured_as: Literal["fa2", "fa3", "cudnn"] = Field(
        description="the measured kernel (presets/attention.toml) it is priced from")
    relative_speed: float = Field(gt=0, le=1, description="its FLOP/s over the measured "
                                                          "kernel's, forward and backward")
    source: str = Field(min_length=1)


class PowerLimit(Frozen):
    """A GPU whose power limit holds its tensor-core clocks below those its catalogue peaks
    assume: its matrix products and attention run at `tensor_rate` of the rate the generation's
    constants give the full-power part."""

    tensor_rate: float = Field(gt=0, le=1, description="tensor-core throughput over the "
                                                       "full-power part's")
    source: str = Field(min_length=1)


class FrameworkConstants(Frozen):
    compute_efficiency: float = Field(gt=0, le=2, description="compute-time divisor")
    attention_kernel: Literal["fa1", "fa2", "fa3", "cudnn"] = Field(
        description="the flash-attention kernel the stack runs (presets/attention.toml, or "
                    "attention_kernels for one priced from another); on a GPU generation it "
                    "was not measured on, the generation's flash_fraction")
    overlap_grad_reduce: bool = Field(description="gradient reduction overlaps the backward")
    grad_reduce_bytes: int = Field(ge=1, le=4, description="bytes per gradient element sent")
    fp8_tp_all_gather: tuple[str, ...] = Field(
        (), description="fp8 recipes under which the stack casts to fp8 before the "
                        "sequence-parallel all-gathers, sending 1 byte per element")
    selective_recompute: Literal["attention", "op"] = Field(
        "attention", description="what recompute 'selective' recomputes: the attention core "
                                 "(Korthikanti et al. 2022) or every element-wise kernel and "
                                 "every second product (torchtitan's op-level policy)")
    source: str = Field(min_length=1)


class Fp8RecipeConstants(Frozen):
    """The memory-bound work an fp8 recipe adds to each fp8 product: bytes moved per element of
    the 16-bit tensor it quantises (read, amax, write of each fp8 layout the product needs)."""

    activation_bytes: float = Field(ge=0, le=64, description="per element of each product "
                                                             "input X (forward) and output "
                                                             "gradient dY (backward)")
    weight_bytes: float = Field(ge=0, le=64, description="per weight element, each "
                                                         "micro-batch")
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


class Parameter(Frozen):
    """A constant the fit moves (calc.calibration.fit): where it is, the range the physics
    allows at all, and the narrower range its physical source gives."""

    path: str = Field(min_length=1, description="dotted path, e.g. generations.hopper.x")
    bounds: tuple[float, float] = Field(description="the fit searches within these")
    prior: tuple[float, float] = Field(description="what its physical source allows; a fit "
                                                   "outside it is flagged (docs/throughput.md)")
    source: str = Field(min_length=1, description="the measurement the prior comes from")

    @model_validator(mode="after")
    def _ordered(self) -> Parameter:
        low, high = self.bounds
        if not low < high or not low <= self.prior[0] <= self.prior[1] <= high:
            raise ValueError(f"{self.path}: need bounds low < high and the prior within them "
                             f"(bounds {self.bounds}, prior {self.prior})")
        return self

    def outside_prior(self, value: float) -> bool:
        return not self.prior[0] <= value <= self.prior[1]


class FitRecord(Frozen):
    method: str = Field(description="what was minimised, over which runs")
    parameters: tuple[Parameter, ...] = Field(description="the constants the fit moves")


class TimingConstants(Frozen):
    generations: dict[str, Generation]
    gemm: GemmConstants
    memory: MemoryConstants
    network: NetworkConstants
    frameworks: dict[str, FrameworkConstants]
    attention_kernels: dict[str, DerivedKernel] = Field(default_factory=dict)
    power_limits: dict[str, PowerLimit] = Field(default_factory=dict)
    fp8_recipes: dict[str, Fp8RecipeConstants]
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

    def fp8_recipe(self, name: str) -> Fp8RecipeConstants:
        if name not in self.fp8_recipes:
            raise CalcError(f"fp8_recipe={name!r} has no constants in presets/{FILE} "
                            f"(known: {', '.join(self.fp8_recipes)})")
        return self.fp8_recipes[name]

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
