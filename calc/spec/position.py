"""How token order enters the model: learned, sinusoidal, RoPE, ALiBi, relative or none."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from calc.spec.base import MAX_TOKENS_CONTEXT, Frozen


class PositionSpec(Frozen):
    """How token order enters the model."""

    kind: Literal["learned", "sinusoidal", "rope", "alibi", "relative", "none"] = Field(
        description="learned table (GPT-2), fixed sinusoids (Vaswani), RoPE, ALiBi, relative "
                    "(Transformer-XL, Dai et al. 2019 §3.3: per layer a projection W_R of the "
                    "sinusoidal relative positions and biases u, v; Gopher, Chinchilla) or none")
    max_positions: int | None = Field(
        None, ge=1, le=MAX_TOKENS_CONTEXT,
        description="rows of the learned position table; default context_length "
                    "(OPT stores 2 more)")

    @model_validator(mode="after")
    def _table(self) -> PositionSpec:
        if self.max_positions is not None and self.kind != "learned":
            raise ValueError(f"position.max_positions is only for position.kind='learned', "
                             f"not {self.kind!r}")
        return self
