"""Specs built without pydantic's validator where nothing is left to validate.

A class's validator is built the first time it validates: a schema per class, and a search for
pydantic plugins through every installed package's metadata. The main command (`python -m calc
MODEL ...`) would pay that on every start for objects whose values are already known good
(bench/startup.py). Two ways to build them without it:

- `trusted(cls, data)`: data calc ships (presets/models/*.toml, presets/gpus.toml), which the
  test suite validates file by file (tests/test_trusted.py builds each both ways and compares
  them value for value, type for type). It converts what TOML cannot write the way a field
  holds it (a table into its model, an array into a tuple, an integer into a float field) and
  nothing else. Spec files and config.json files a user gives never come here.
- `checked(cls, values)`: what a user passes a function (calc.estimate's tokens, gpu, ...), when
  every value is a plain number, name or None: each is checked as the validator checks it (its
  type, its bounds, its field's own validator function) without building the validator. Only
  the first such object of a class in a process: checking in Python costs more than pydantic's
  validator once it is built, so a process that builds more (a loop over estimates) builds the
  validator on the second and validates from then on.

Anything either does not know (a key the class lacks, a type, a value it would have to coerce
otherwise, a class with model validators for `checked`) goes to the validator itself, which
builds the object or raises the error that names the field, exactly as before.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import AfterValidator, BaseModel, BeforeValidator

from calc.numbers import Quantity
from calc.spec.base import Frozen

M = TypeVar("M", bound=Frozen)
Convert = Callable[[Any], Any]
Check = Callable[[Any, str], Any]


class _Unknown(Exception):
    """A value or a type `trusted` does not convert: the validator builds the object instead."""


def trusted(cls: type[M], data: Mapping[str, Any]) -> M:
    """`cls.model_validate(data)` for data the test suite validates, built without validating."""
    try:
        return _build(cls, data)
    except _Unknown:
        return cls.model_validate(data)


_PLANS: dict[type, tuple[dict[str, Convert], dict[str, type[Frozen]]]] = {}


def _build(cls: type[M], data: Any) -> M:
    if not isinstance(data, Mapping):
        raise _Unknown
    if cls not in _PLANS:
        _PLANS[cls] = _plan(cls)
    converts, built_defaults = _PLANS[cls]
    if not data.keys() <= converts.keys():
        raise _Unknown  # an unknown key: the validator names it
    values = {name: converts[name](value) for name, value in data.items()}
    for name, model in built_defaults.items():  # a default a model class builds: no validator
        if name not in values:
            values[name] = _build(model, {})
    return cls.unchecked(_fields_set=set(data), **values)


def _plan(cls: type[Frozen]) -> tuple[dict[str, Convert], dict[str, type[Frozen]]]:
    """Each field's conversion, and the fields whose default_factory is a model class. A field
    with a validator of its own may change its value: the validator builds it; so does one of
    a class whose model validator runs before the fields (a model validator after them, or
    around them, checks the fields it is given: the tests compare what both ways build)."""
    decorators = cls.__pydantic_decorators__
    if any(v.info.mode == "before" for v in decorators.model_validators.values()):
        return {name: _refuse for name in cls.model_fields}, {}
    validated = {name for v in decorators.field_validators.values() for name in v.info.fields}
    converts, built_defaults = {}, {}
    for name, field in cls.model_fields.items():
        if name in validated or _validates(field.metadata):
            converts[name] = _refuse
            continue
        converts[name] = _converter(field.annotation)
        factory = field.default_factory
        if isinstance(factory, type) and issubclass(factory, Frozen):
            built_defaults[name] = factory
    return converts, built_defaults


def _validates(metadata: list[Any]) -> bool:
    """Whether annotated metadata run a function (calc.numbers' BeforeValidator), not only
    constraints (ge, le, ...)."""
    return any(callable(getattr(m, "func", None)) for m in metadata)


def _refuse(value: Any) -> Any:
    raise _Unknown


def _converter(annotation: Any) -> Convert:
    """How a value read from TOML or JSON becomes what a field of `annotation` holds."""
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is Any:
        return lambda value: value
    if annotation in (str, bool, int):
        return lambda value: _exactly(annotation, value)
    if annotation is float:
        return _float
    if origin is Literal:
        return lambda value: _one_of(args, value)
    if origin is Annotated:
        return _refuse if _validates(list(args[1:])) else _converter(args[0])
    if isinstance(annotation, type) and issubclass(annotation, Frozen):
        return lambda value: _build(annotation, value)
    if origin in (Union, types.UnionType):
        return _union([_converter(arg) for arg in args if arg is not type(None)],
                      type(None) in args)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _converter(args[0])
            return lambda value: tuple(item(v) for v in _array(value))
        items = [_converter(arg) for arg in args]
        return lambda value: tuple(convert(v) for convert, v in
                                   zip(items, _array(value, len(items)), strict=True))
    if origin is dict:
        key, item = (_converter(arg) for arg in args)
        return lambda value: {key(k): item(v) for k, v in _table(value).items()}
    return _refuse


def _union(options: list[Convert], optional: bool) -> Convert:
    """The option that takes the value as it is (pydantic's smart union: `int | float` keeps an
    int), else the one option that converts it; None when optional. Two that would convert it:
    the validator decides."""
    def convert(value: Any) -> Any:
        if value is None and optional:
            return None
        found = []
        for option in options:
            try:
                found.append(option(value))
            except _Unknown:
                pass
        exact = [v for v in found if type(v) is type(value)]
        if len(exact) == 1 or len(found) == 1:
            return (exact or found)[0]
        raise _Unknown

    return convert


def _exactly(kind: type, value: Any) -> Any:
    if type(value) is not kind:
        raise _Unknown
    return value


def _one_of(allowed: tuple[Any, ...], value: Any) -> Any:
    if not any(type(value) is type(a) and value == a for a in allowed):
        raise _Unknown
    return value


def _float(value: Any) -> float:
    if type(value) not in (int, float):
        raise _Unknown
    return float(value)


def _array(value: Any, length: int | None = None) -> list[Any]:
    if not isinstance(value, list | tuple) or (length is not None and len(value) != length):
        raise _Unknown
    return list(value)


def _table(value: Any) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise _Unknown
    return value


# ---- checked: plain values a user gives ---------------------------------------------------------
# The model_config keys `checked` knows: none of them changes a value it accepts (allow_inf_nan
# False: it refuses what is not finite, and the validator raises).
_CONFIG = {"frozen", "extra", "allow_inf_nan", "defer_build"}
_CHECKS: dict[type, dict[str, Check] | None] = {}


def checked(cls: type[M], values: Mapping[str, Any]) -> M:
    """`cls(**values)`; the first of its class in a process is built without the validator
    when each value passes its field's checks."""
    if cls in _CHECKS:  # the second: validate (and build the validator, once)
        return cls(**values)
    try:
        return _checked(cls, values)
    except _Unknown:
        return cls(**values)


def _checked(cls: type[M], values: Mapping[str, Any]) -> M:
    """`cls(**values)` built without the validator; _Unknown for what only it can judge."""
    if cls not in _CHECKS:
        _CHECKS[cls] = _checks(cls)
    checks = _CHECKS[cls]
    if checks is None or not values.keys() <= checks.keys():
        raise _Unknown
    return cls.model_construct(**{name: checks[name](value, name)
                                  for name, value in values.items()})


def _checks(cls: type[BaseModel]) -> dict[str, Check] | None:
    """Each field's check, or None when a class-wide rule could change or refuse values."""
    decorators = cls.__pydantic_decorators__
    if set(cls.model_config) - _CONFIG or decorators.model_validators or \
            decorators.field_validators or cls.model_config.get("allow_inf_nan", True):
        return None
    return {name: _check(field.annotation, field.metadata)
            for name, field in cls.model_fields.items()}


def _check(annotation: Any, metadata: list[Any]) -> Check:
    """The check of a value for `annotation` with the field's `metadata` (bounds, validators)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _check(args[0], [*args[1:], *metadata])
    if origin in (Union, types.UnionType):
        options = [arg for arg in args if arg is not type(None)]
        if len(options) != 1:
            return _refused
        inner, nullable = _check(options[0], metadata), type(None) in args
        return lambda value, name: None if value is None and nullable else inner(value, name)
    before = [m.func for m in metadata if isinstance(m, BeforeValidator)]
    after = [m.func for m in metadata if isinstance(m, AfterValidator)]
    bounds = [m for m in metadata  # Quantity only names the field's reader for the CLI
              if not isinstance(m, BeforeValidator | AfterValidator | Quantity)]
    if not all(isinstance(m, Ge | Gt | Le | Lt | MinLen | MaxLen) for m in bounds):
        return _refused
    if annotation is float:
        base = _finite
    elif annotation in (int, str, bool):
        base = lambda value: _exactly(annotation, value)  # noqa: E731
    elif origin is Literal:
        base = lambda value: _one_of(args, value)  # noqa: E731
    else:
        return _refused

    def check(value: Any, name: str) -> Any:
        for function in before:
            value = _call(function, value, name)
        value = base(value)
        if not all(_within(value, bound) for bound in bounds):
            raise _Unknown
        for function in after:
            value = _call(function, value, name)
        return value

    return check


def _refused(value: Any, name: str) -> Any:
    raise _Unknown


def _finite(value: Any) -> float:
    number = _float(value)
    if number != number or number in (float("inf"), float("-inf")):
        raise _Unknown
    return number


def _within(value: Any, bound: Any) -> bool:
    if isinstance(bound, Ge):
        return value >= bound.ge
    if isinstance(bound, Gt):
        return value > bound.gt
    if isinstance(bound, Le):
        return value <= bound.le
    if isinstance(bound, Lt):
        return value < bound.lt
    if isinstance(bound, MinLen):
        return len(value) >= bound.min_length
    return len(value) <= bound.max_length


def _call(function: Callable[..., Any], value: Any, name: str) -> Any:
    """A field's own validator function on `value`, given the field's name where it takes
    pydantic's ValidationInfo (calc.numbers reads only that; a function that reads more raises).
    Whatever it raises, the validator runs and raises the error as pydantic words it."""
    try:
        if function.__code__.co_argcount > 1:
            return function(value, SimpleNamespace(field_name=name))
        return function(value)
    except Exception:
        raise _Unknown from None
