"""Table views of calc's report objects: what render() prints for each kind of report.

`view(report)` dispatches on the report's type; each module below registers the views of one
family of reports. Add a module and name it in MODULES.
"""

from __future__ import annotations

import importlib
from functools import singledispatch
from typing import Any

from calc.render import View

MODULES = (
    "calc.views.estimate",
    "calc.views.catalog",
    "calc.views.verify",
    "calc.views.bench",
    "calc.views.reproduce",
    "calc.views.plan",
    "calc.views.sweep",
    "calc.views.comparison",
    "calc.views.flop_conventions",
    "calc.views.step",
    "calc.views.layout",
    "calc.views.throughput",
)


@singledispatch
def _dispatch(report: Any) -> View:
    raise TypeError(f"no table view for {type(report).__name__}")


def view(report: Any) -> View:
    """The title, tables and notes that show `report`.

    View modules are imported in order until one has registered the report's type, so the
    main report's path imports only calc.views.estimate (start-up time, bench/startup.py).
    """
    fallback = _dispatch.registry[object]
    for module in MODULES:
        if _dispatch.dispatch(type(report)) is not fallback:
            break
        importlib.import_module(module)
    return _dispatch(report)


register = _dispatch.register
