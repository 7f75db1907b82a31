"""What every spec shares: the frozen base class, the cache of what a frozen spec determines,
and the generous bounds on sizes."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

# Generous upper bounds: large enough for a 10T-parameter spec, small enough to catch typos.
MAX_WIDTH = 1 << 22  # 4,194,304
MAX_LAYERS = 100_000
MAX_VOCAB = 1 << 30
MAX_HEADS = 1 << 16
MAX_EXPERTS = 1 << 20
MAX_TOKENS_CONTEXT = 1 << 40


class Frozen(BaseModel):
    """Base for every spec: immutable, unknown keys rejected, NaN/inf rejected.

    A frozen instance's fields never change, so what they determine is computed once and kept
    in the instance's `__dict__` beside the fields (`functools.cached_property`, `per_instance`):
    extra="forbid" leaves no other key there, pydantic's equality, hashing, repr and dumps read
    the fields only, and a copy (`model_copy(update=...)` copies first, then changes fields)
    starts with none of them, so a changed copy never reads a value of the original.

    `defer_build`: a class builds its validator when it first validates, not when it is
    defined, so a command pays only for the schemas it validates (bench/startup.py).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False,
                              defer_build=True)

    def __copy__(self) -> Any:
        return _forget(super().__copy__())

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Any:
        return _forget(super().__deepcopy__(memo))


def _forget(copied: Frozen) -> Frozen:
    """`copied` without the derived values its original had cached (every key of `__dict__`
    that is not a field)."""
    values, fields = copied.__dict__, type(copied).model_fields
    for key in [key for key in values if key not in fields]:
        del values[key]
    return copied


F = TypeVar("F", bound=Frozen)
R = TypeVar("R")


def per_instance(function: Callable[[F], R]) -> Callable[[F], R]:
    """`function(spec)`, a pure function of one frozen instance, computed once per instance
    and kept with its derived values (under the function's dotted name, which no field can
    have). The value is shared: callers must not change it."""
    key = f"{function.__module__}.{function.__qualname__}"

    @wraps(function)
    def cached(instance: F) -> R:
        values = instance.__dict__
        if key not in values:
            values[key] = function(instance)
        return values[key]

    return cached
