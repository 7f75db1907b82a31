"""Specs built from the data calc ships (presets/*.toml) without validating it again at run time.

The preset files and the GPU catalogue are validated by the test suite, file by file
(tests/test_trusted.py builds each both ways and compares them value for value, type for type).
At run time `trusted(cls, data)` builds what `cls.model_validate(data)` would build from such a
file without pydantic's validator, whose first use builds a schema per class and looks for
pydantic plugins among every installed package: the main command's start-up (bench/startup.py).

It converts what a TOML or JSON file cannot write the way the field holds it, and nothing else:
a table into its model, an array into a tuple, an integer into a float field. Anything else it
finds (a key the class does not have, a type it does not know) it leaves to the validator, so a
file it cannot read is validated, and refused, as before. User input (spec files, config.json,
flags) never comes here.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
Convert = Callable[[Any], Any]


class _Unknown(Exception):
    """A value or a type `trusted` does not convert: the validator builds the object instead."""


def trusted(cls: type[M], data: Mapping[str, Any]) -> M:
    """`cls.model_validate(data)` for data the test suite validates, built without validating."""
    try:
        return _build(cls, data)
    except _Unknown:
        return cls.model_validate(data)


_PLANS: dict[type, tuple[dict[str, Convert], dict[str, type[BaseModel]]]] = {}


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
    return cls.model_construct(_fields_set=set(data), **values)


def _plan(cls: type[BaseModel]) -> tuple[dict[str, Convert], dict[str, type[BaseModel]]]:
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
        if isinstance(factory, type) and issubclass(factory, BaseModel):
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
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
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
    if not isinstance(value, list | tuple) or length is not None and len(value) != length:
        raise _Unknown
    return list(value)


def _table(value: Any) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise _Unknown
    return value
