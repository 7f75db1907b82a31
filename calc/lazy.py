"""Names a package offers but imports on first use (PEP 562).

`python -m calc` imports the package `calc` before any command runs, and `from calc.spec.model
import ...` imports the package `calc.spec` first, so whatever a package's `__init__` imports,
every command and every import pays for (bench/startup.py). A package lists its public names as
"module:attribute" strings and lets this module's `__getattr__` import each on first use, and
its `__dir__` list them before then (Jupyter's tab completion, help(), dir()).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_getattr(package: str, table: Mapping[str, str]) -> Callable[[str], object]:
    """A module `__getattr__` for `package`: `table` maps a name to "module:attribute", imported
    on first access and then stored in the package, so later lookups skip this function."""

    def __getattr__(name: str) -> object:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = load(table[name])
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


def load(path: str) -> object:
    """The attribute a "module:attribute" string names, its module imported."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def lazy_dir(package: str, table: Mapping[str, str]) -> Callable[[], list[str]]:
    """A module `__dir__` for `package`: its attributes and `table`'s names, loaded or not
    (without it, dir() shows only what was imported so far); it imports nothing."""

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __dir__
