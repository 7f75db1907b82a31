"""Workload: what is run on the model — tokens, context, precision, utilisation, GPUs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from calc.counting import DEFAULT_MFU
from calc.numbers import annotated
from calc.spec.hardware import Dtype
from calc.spec.model import MAX_TOKENS_CONTEXT, Frozen

AttentionConvention = Literal["causal", "full"]
# Numbers read as calc.numbers reads them everywhere ("2T" too), within calc.numbers.RANGES.
Tokens, MFU = annotated("tokens"), annotated("mfu")


class Workload(Frozen):
    """A training or evaluation workload; every field optional beyond what a question needs."""

    tokens: Tokens | None = Field(None, description="training tokens D")
    seq_len: int | None = Field(None, ge=1, le=MAX_TOKENS_CONTEXT,
                                description="context T; default the model's context_length")
    attention: AttentionConvention = Field(
        "causal", description="count attention over the causal triangle or the full T×T square")
    gpu: str | None = Field(None, description="GPU catalogue name, e.g. 'a100'")
    dtype: Dtype = Field("bf16", description="compute dtype whose dense peak is used")
    mfu: MFU = Field(DEFAULT_MFU, description="model FLOPs utilisation, a fraction of peak")
    gpus: int = Field(1, ge=1, le=10_000_000, description="GPUs the run is spread over")
