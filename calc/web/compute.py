"""A route's report for one request, rendered by calc.views: in this thread, or for a search
in a child process that is killed past SEARCH_SECONDS (a thread cannot be stopped)."""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable, Sequence
from importlib.util import find_spec
from typing import Any

from calc.errors import CalcError
from calc.presets import Preset, preset_from_data
from calc.views import render
from calc.views.plot import svg
from calc.web.query import Route

SEARCH_SECONDS = 60.0
_LOOK = 0.25  # s between looks at whether the client is still there
PASTED = "config.json"  # what a pasted config is called, on the page and in the CLI line


def pasted(text: str) -> Preset:
    """The preset of a pasted config.json (or spec JSON), read from the text alone."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise CalcError(f"config: not JSON ({error.msg} at line {error.lineno}, column "
                        f"{error.colno})") from None
    if not isinstance(data, dict):
        raise CalcError(f"config: expected a JSON object, got {type(data).__name__}")
    return preset_from_data(data, PASTED, "pasted config", "pasted config.json")


class Cancelled(CalcError):
    """The client went away while its search ran: the search was stopped, nobody to tell."""


def rendered(route: Route, line: Sequence[str], preset: Preset | None, fmt: str,
             table: str | None, gone: Callable[[], bool] = lambda: False) -> str:
    """The report `line` (the command's argv) asks for, in `fmt`; `preset` is a pasted
    config's, which the argv names as PASTED. A search stops when `gone()` says the client
    left (the page's cancel button), or past SEARCH_SECONDS."""
    args = route.parser().parse_args(line)  # a bad flag is said here, before any child
    if not (route.limited(args) if callable(route.limited) else route.limited):
        return _shown(route, args, preset, fmt, table)
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no forked locks
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(route, line, preset, fmt, table, send),
                            daemon=True)
    child.start()
    send.close()
    deadline = time.monotonic() + SEARCH_SECONDS
    try:
        while not receive.poll(min(_LOOK, max(deadline - time.monotonic(), 0))):
            if gone():
                raise Cancelled("the search was cancelled")
            if time.monotonic() >= deadline:
                raise CalcError(f"the search took longer than {SEARCH_SECONDS:g} s and was "
                                f"stopped; pin more of its options (e.g. tp, pp) or search "
                                f"fewer GPUs")
        ok, text = receive.recv()
    except EOFError:
        raise CalcError("the search stopped without an answer") from None
    finally:
        child.kill()
        child.join()
        receive.close()
    if not ok:
        raise CalcError(text)
    return text


def _shown(route: Route, args: Any, preset: Preset | None, fmt: str,
           table: str | None) -> str:
    if preset is not None:
        args.model = preset
    if route.plotted is None or fmt != "html" or table or find_spec("matplotlib") is None:
        return render(route.report(args), fmt, table)
    report, figure = route.plotted(args)
    return f"{render(report, fmt)}<figure>{svg(figure)}</figure>\n"


def _child(route: Route, line: Sequence[str], preset: Preset | None, fmt: str,
           table: str | None, send: Any) -> None:
    try:
        send.send((True, _shown(route, route.parser().parse_args(line), preset, fmt, table)))
    except CalcError as error:
        send.send((False, str(error)))
    except Exception as error:  # a bug: said in one line, as the CLI does
        send.send((False, f"internal error: {type(error).__name__}: {error}"))
