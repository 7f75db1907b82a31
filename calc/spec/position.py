"""How token order enters the model: learned, sinusoidal, RoPE, ALiBi, relative, a bucketed
bias or none."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from calc.spec.base import MAX_TOKENS_CONTEXT, Frozen

MAX_SEGMENTS = 1024  # segment types of a bucketed bias or a segment embedding


class PositionSpec(Frozen):
    """How token order enters the model."""

    kind: Literal["learned", "sinusoidal", "rope", "alibi", "relative", "bucketed",
                  "none"] = Field(
        description="learned table (GPT-2), fixed sinusoids (Vaswani), RoPE, ALiBi, relative "
                    "(Transformer-XL, Dai et al. 2019 §3.3: per layer a projection W_R of the "
                    "sinusoidal relative positions and biases u, v; Gopher, Chinchilla), "
                    "bucketed (a learned bias per head on the scores, one table for the whole "
                    "model, its row chosen by the key's relative-position bucket (T5, Raffel et "
                    "al. 2020 §2.1) or by the query's and key's segment pair (CPM-Ant's "
                    "CpmAntSegmentPositionEmbedding)) or none")
    buckets: int | None = Field(
        None, ge=1, le=MAX_TOKENS_CONTEXT,
        description="relative-position buckets of position.kind 'bucketed', a bias row each "
                    "(CPM-Ant's position_bias_num_buckets)")
    segments: int = Field(
        0, ge=0, le=MAX_SEGMENTS,
        description="segment types of position.kind 'bucketed': a bias row for each ordered "
                    "pair of them beside the buckets, segments² (CPM-Ant's segment_types; 0: "
                    "the buckets alone)")
    max_positions: int | None = Field(
        None, ge=1, le=MAX_TOKENS_CONTEXT,
        description="rows of the learned position table; default context_length "
                    "(OPT stores 2 more)")

    @model_validator(mode="after")
    def _table(self) -> PositionSpec:
        if self.max_positions is not None and self.kind != "learned":
            raise ValueError(f"position.max_positions is only for position.kind='learned', "
                             f"not {self.kind!r}")
        if (self.kind == "bucketed") != (self.buckets is not None):
            raise ValueError("position.buckets is required by position.kind='bucketed' and "
                             f"only for it (kind {self.kind!r}, buckets {self.buckets!r})")
        if self.segments and self.kind != "bucketed":
            raise ValueError(f"position.segments is only for position.kind='bucketed', not "
                             f"{self.kind!r}")
        return self

    @property
    def bias_rows(self) -> int:
        """Rows of the bucketed bias table: the buckets and the segment pairs (0 otherwise)."""
        return (self.buckets or 0) + self.segments ** 2
