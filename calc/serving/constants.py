"""The serving model's constants (presets/serving.toml): kernel efficiencies by GPU vendor, the
kernel and collective floors, the per-iteration overhead, each engine's memory rule and limits,
the priors the fitted ones were chosen within and the rows they were fitted on.

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
from calc.spec.serving import Engine as EngineName
from calc.timing.constants import load_constants

FILE = "serving.toml"
MAX_SEQUENCES = 1 << 20

# When an engine prefills prompts in the same iteration as other sequences' decode tokens
# (chunked prefill): always, never, or only for a served context past 32K (vLLM V0's rule).
Chunking = Literal["always", "never", "long-context"]
LONG_CONTEXT = 32_768  # vLLM V0: chunked prefill by default when max_model_len exceeds this


class Vendor(Frozen):
    generations: tuple[str, ...] = Field(min_length=1, description="presets/timing.toml names")


class Engine(Frozen):
    """A serving engine's defaults, as its source reads."""

    title: str = Field(min_length=1)
    memory_of: Literal["total", "free"] = Field(
        description="total: the fraction of all memory the engine may use, weights included; "
                    "free: the fraction of what the weights and activations leave")
    memory_fraction: float = Field(gt=0, le=1)
    memory_fraction_by_tp: dict[int, float] = Field(
        {}, description="memory_fraction by tensor-parallel degree, where the engine sets it so "
                        "(the largest key not above tp applies)")
    max_sequences: int = Field(ge=1, le=MAX_SEQUENCES,
                               description="sequences one iteration may hold")
    step_tokens: int = Field(ge=1, le=MAX_SEQUENCES,
                             description="tokens one iteration may process with chunked prefill")
    prefill_budget: Literal["step", "context"] = Field(
        description="tokens a prefill-only iteration may hold: step_tokens, or whole prompts up "
                    "to the served context (vLLM V0: max_num_batched_tokens = max(max_model_len, "
                    "2048) without chunking)")
    chunked_prefill: Chunking
    reserves: Literal["current", "completion"] = Field(
        "current", description="the KV cache a running request is admitted against: the tokens "
                               "it holds (vLLM: blocks as they fill, preempting when full), or "
                               "its prompt and whole output from admission (TensorRT-LLM's "
                               "GUARANTEED_NO_EVICT)")
    source: str = Field(min_length=1)

    def fraction(self, tp: int) -> float:
        keys = [key for key in self.memory_fraction_by_tp if key <= tp]
        return self.memory_fraction_by_tp[max(keys)] if keys else self.memory_fraction

    def chunks(self, served_context: int, rocm: bool, windowed: bool) -> bool:
        """Whether prompts are prefilled beside decode tokens by default."""
        match self.chunked_prefill:
            case "always":
                return True
            case "never":
                return False
            case "long-context":
                return served_context > LONG_CONTEXT and not rocm and not windowed
            case other:
                raise ValueError(f"chunked_prefill {other!r} is not a chunking rule")


Prior = tuple[float, float, str]


class ServingConstants(Frozen):
    vendors: dict[str, Vendor]
    fitted: dict[str, float] = Field(description="the fitted constants, by dotted name")
    priors: dict[str, Prior]
    engines: dict[EngineName, Engine]
    fit: dict[str, object] = Field(description="rows fitted on, method, leave-one-out folds")

    @model_validator(mode="after")
    def _complete(self) -> ServingConstants:
        missing = sorted(set(self.fitted) ^ set(self.priors))
        if missing:
            raise ValueError(f"fitted and priors must name the same constants: {missing}")
        for name, (low, high, _) in self.priors.items():
            if not 0 <= low < high:
                raise ValueError(f"priors.{name}: [{low}, {high}] is not a range")
        return self

    def vendor(self, gpu: str) -> str:
        generation, _ = load_constants().generation(gpu)
        for name, vendor in self.vendors.items():
            if generation in vendor.generations:
                return name
        raise CalcError(f"gpu={gpu!r} (generation {generation}) has no serving constants in "
                        f"presets/{FILE} (vendors: {', '.join(self.vendors)})")

    def value(self, name: str) -> float:
        return self.fitted[name]

    def engine(self, name: str) -> Engine:
        if name not in self.engines:
            raise CalcError(f"engine={name!r} is not allowed; expected one of "
                            f"{', '.join(self.engines)}")
        return self.engines[name]  # type: ignore[index]

    def with_values(self, values: dict[str, float]) -> ServingConstants:
        return self.model_copy(update={"fitted": {**self.fitted, **values}})


def parse(data: dict) -> ServingConstants:
    try:
        return ServingConstants.model_validate(data)
    except ValidationError as error:
        raise CalcError(one_line(error, f"presets/{FILE}")) from None


@cache
def load_serving_constants() -> ServingConstants:
    return parse(tomllib.loads((_data_dir() / FILE).read_text(encoding="utf-8")))
