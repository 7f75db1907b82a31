"""What every spec shares: the frozen base class, the cache of what a frozen spec determines,
and the generous bounds on sizes."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import partial, wraps
from typing import Any, Self, TypeVar

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
    the fields only, and a copy (`model_copy(update=...)` copies first, then changes fields) or
    a pickle holds none of them, so a changed copy never reads a value of the original.

    `defer_build`: a class builds its validator when it first validates, not when it is
    defined, so a command pays only for the schemas it validates (bench/startup.py).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False,
                              defer_build=True)

    @classmethod
    def unchecked(cls, _fields_set: set[str] | None = None, **values: Any) -> Self:
        """An instance of `values` built without validating them: for values calc computed
        itself (a report's numbers; tests/test_trusted.py validates the reports the tests build
        and compares) or read from files the tests validate (calc.spec.trusted). What
        `model_construct` builds, for a class without aliases, private attributes or post-init
        (none has them), without its per-field alias lookups, which cost more than validating.
        """
        plan = _PLANS.get(cls) or _PLANS.setdefault(cls, _Plan(cls))
        if not values.keys() <= plan.names:
            raise TypeError(f"{cls.__name__}: no field {sorted(values.keys() - plan.names)[0]!r}")
        fields = plan.template.copy()  # every field in its order, at its default where it has
        fields.update(values)  # one that needs no copy (None, a number, a string, a tuple)
        for name, default in plan.others.items():
            if name not in values:
                fields[name] = default()
        instance = cls.__new__(cls)
        _set(instance, "__dict__", fields)
        _set(instance, "__pydantic_fields_set__", set(values) if _fields_set is None
             else _fields_set)
        _set(instance, "__pydantic_extra__", None)
        _set(instance, "__pydantic_private__", None)
        return instance

    def __copy__(self) -> Any:
        copied = super().__copy__()
        _set(copied, "__dict__", _fields(copied))
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Any:
        return super(Frozen, self.__copy__()).__deepcopy__(memo)  # the fields alone, deep

    def __getstate__(self) -> dict[Any, Any]:
        return {**super().__getstate__(), "__dict__": _fields(self)}  # pickled: the fields


_set = object.__setattr__  # as model_construct sets them: the instance is frozen
_IMMUTABLE = (type(None), bool, int, float, str, tuple, frozenset)


class _Plan:
    """How `Frozen.unchecked` fills a class's fields: the defaults it can share, and what gives
    the others (a factory, a copy, or an error for a required field left out)."""

    def __init__(self, cls: type[Frozen]) -> None:
        fields = cls.model_fields
        if cls.__private_attributes__ or cls.__pydantic_post_init__ or any(
                field.alias or field.validation_alias for field in fields.values()):
            raise TypeError(f"{cls.__name__}.unchecked: aliases, private attributes or "
                            f"post-init")
        self.names = frozenset(fields)
        self.template: dict[str, Any] = {}
        self.others: dict[str, Callable[[], Any]] = {}
        for name, field in fields.items():
            shared = field.default_factory is None and isinstance(field.default, _IMMUTABLE)
            self.template[name] = field.default if shared else None
            if field.is_required():
                self.others[name] = _required(cls, name)
            elif not shared:
                self.others[name] = partial(field.get_default, call_default_factory=True,
                                            validated_data={})


def _required(cls: type[Frozen], name: str) -> Callable[[], Any]:
    def missing() -> Any:
        raise TypeError(f"{cls.__name__}.unchecked: {name} is required")
    return missing


_PLANS: dict[type, _Plan] = {}


def _fields(instance: Frozen) -> dict[str, Any]:
    """The instance's `__dict__` without the derived values it keeps (every key that is not a
    field: extra="forbid" leaves no other)."""
    fields = type(instance).model_fields
    return {key: value for key, value in instance.__dict__.items() if key in fields}


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


# Entries one instance keeps per keyed function: a serving sweep asks for a few hundred prompt
# lengths at most, and a full table is emptied rather than grown.
KEYED_ENTRIES = 256


def per_instance_keyed(function: Callable[..., R]) -> Callable[..., R]:
    """`function(spec, *args)`, a pure function of one frozen instance and hashable arguments,
    kept with the instance's derived values per distinct `args` (at most KEYED_ENTRIES). The
    value is shared: callers must not change it."""
    key = f"{function.__module__}.{function.__qualname__}"

    @wraps(function)
    def cached(instance: Any, *args: Hashable) -> R:
        table = instance.__dict__.setdefault(key, {})
        if args not in table:
            if len(table) >= KEYED_ENTRIES:
                table.clear()
            table[args] = function(instance, *args)
        return table[args]

    return cached
