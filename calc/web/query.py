"""A request's query → the argv of the CLI command it names, refusing what would read a file.

Option names are the command's flags without their dashes (`seq-len=4096` is `--seq-len
4096`); MODEL is `model`. A flag that takes no value is `name=yes` or `name=no` (`no` is
`--no-NAME` where the flag has one, else left out). An empty value is not given (a blank form
field). Output options are the request's: `format` (html, the page, unless json, csv, text or
markdown) and `table`.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from calc.errors import CalcError

# Flags a request may not give: they read a file on the server (--from, --mfu-from), change
# the process for every request (--offline sets HF_HUB_OFFLINE), or print something else.
REFUSED = ("from", "mfu-from", "offline", "formula", "help", "version")
OUTPUT = ("format", "table")  # the response's, not the report's
PAGE = "html"
YES, NO = ("yes", "true", "on", "1"), ("no", "false", "off", "0")
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")  # org/name, as the Hub spells repo ids
FILE_SUFFIXES = (".json", ".toml", ".yaml", ".yml")


@dataclass(frozen=True)
class Route:
    """One view of the page: a command's parser and the report its parsed args ask for. A
    `limited` route's report (a search; or, when `limited` is a function of the parsed args,
    a report it says searches) runs in a child process killed after a time limit."""

    name: str  # the URL path and the verb ("" for the main report, as `python -m calc MODEL`)
    parser: Callable[[], argparse.ArgumentParser]
    report: Callable[[argparse.Namespace], Any]
    limited: bool | Callable[[argparse.Namespace], bool] = False
    # the report and its figure from one computation, for the page (where matplotlib is)
    plotted: Callable[[argparse.Namespace], tuple[Any, Any]] | None = None

    @property
    def command(self) -> str:
        return f"python -m calc {self.name}".rstrip()


@dataclass(frozen=True)
class Flag:
    """One option of a route's command as the page needs it (read from its argparse action)."""

    name: str  # the query's name: the long flag without dashes, `model` for MODEL
    group: str  # the parser's argument group: the run configuration's section
    help: str
    switch: bool = False  # takes no value (--name, and --no-name where `negative`)
    negative: bool = False
    choices: tuple[str, ...] = ()
    default: str = ""  # the command's default, shown beside a blank field
    metavar: str = ""
    positional: bool = False


_GROUPS = {"positional arguments": "model", "options": "run"}  # argparse's own group titles


@cache
def flags(route: Route) -> dict[str, Flag]:
    """The options a request to `route` may give, by query name, in the parser's groups and
    order; read once per route (the parser never changes), and immutable."""
    parser = route.parser()
    found = {}
    for group in parser._action_groups:  # argparse keeps its groups and actions private
        title = _GROUPS.get(group.title or "", group.title or "")
        for action in group._group_actions:
            longs = [s for s in action.option_strings if s.startswith("--")]
            name = longs[0][2:] if longs else action.dest
            if name in REFUSED or name in OUTPUT or (action.option_strings and not longs):
                continue
            default = "" if action.default in (None, False, []) else str(action.default)
            found[name] = Flag(
                name=name, group=title, help=action.help or "", switch=action.nargs == 0,
                negative=f"--no-{name}" in action.option_strings,
                choices=tuple(map(str, action.choices or ())), default=default,
                metavar=str(action.metavar or ""), positional=not action.option_strings)
    return found


def checked_model(name: str) -> str:
    """`name` when it is a preset name or a Hub id (org/name); never a path on the server."""
    bad = (name.startswith(("/", "~", ".")) or ".." in name or "\\" in name
           or name.lower().endswith(FILE_SUFFIXES) or os.path.lexists(name)
           or ("/" in name and not HUB_ID.fullmatch(name)))
    if bad:
        raise CalcError(f"model={name!r}: the page takes a preset name or a Hub id (org/name), "
                        f"not a path; paste a config.json instead")
    return name


def argv(route: Route, params: Sequence[tuple[str, str]]) -> list[str]:
    """The command line (without `python -m calc VERB`) that `params` ask for."""
    known = flags(route)
    line: list[str] = []
    for key, raw in params:
        value = raw.strip()
        if key in OUTPUT or key == "config" or not value:
            continue
        flag = known.get(key)
        if flag is None:
            refused = " (it reads a file or changes the server)" if key in REFUSED else ""
            raise CalcError(f"{key}: not an option of the page's {route.command}{refused}; "
                            f"expected one of {', '.join(known)}")
        if flag.positional:
            line.insert(0, checked_model(value))
        elif flag.switch:
            line += _switch(flag, value)
        else:
            line += [f"--{key}", value]
    return line


def _switch(flag: Flag, value: str) -> list[str]:
    if value.lower() in YES:
        return [f"--{flag.name}"]
    if value.lower() in NO:
        return [f"--no-{flag.name}"] if flag.negative else []
    raise CalcError(f"{flag.name}={value!r}: expected yes or no")


def output(params: Sequence[tuple[str, str]]) -> tuple[str, str | None]:
    """The response's format and table."""
    given = {k: v.strip() for k, v in params if k in OUTPUT and v.strip()}
    return given.get("format", PAGE), given.get("table")


def command_line(route: Route, line: Sequence[str], fmt: str) -> str:
    """The CLI command that prints the same report (a pasted config is named config.json)."""
    shown = [] if fmt == PAGE else ["--format", fmt]
    return f"{route.command} {shlex.join([*line, *shown])}"
