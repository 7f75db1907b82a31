"""What every spec shares: the frozen base class and the generous bounds on sizes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

# Generous upper bounds: large enough for a 10T-parameter spec, small enough to catch typos.
MAX_WIDTH = 1 << 22  # 4,194,304
MAX_LAYERS = 100_000
MAX_VOCAB = 1 << 30
MAX_HEADS = 1 << 16
MAX_EXPERTS = 1 << 20
MAX_TOKENS_CONTEXT = 1 << 40


class Frozen(BaseModel):
    """Base for every spec: immutable, unknown keys rejected, NaN/inf rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
