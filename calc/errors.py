"""Errors calc raises on bad input, and their one-line form.

Every error a user can cause is a `CalcError`; the CLI prints `str(error)` as one line and exits
2. Anything else is a bug in calc (exit 1).
"""

from __future__ import annotations

from collections.abc import Iterable


class CalcError(ValueError):
    """Bad input: the message names the field, the value and what is allowed."""


class UnknownNameError(CalcError, KeyError):
    """An unknown preset, GPU or other catalogue name; suggests the closest known ones."""

    def __init__(self, kind: str, name: str, known: Iterable[str], listing: str = ""):
        import difflib  # only when a name is wrong: not on every command's path

        known = sorted(known)
        close = difflib.get_close_matches(name.lower(), known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        shown = ", ".join(known) if len(known) <= 12 else f"{len(known)} of them"
        where = f"; {listing}" if listing else ""
        super().__init__(f"unknown {kind} {name!r}{hint} (known: {shown}{where})")
        self.kind, self.name, self.suggestions = kind, name, close

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


def install(extra: str) -> str:
    """How to install an optional part of calc, the way the README does it (from a checkout)."""
    return f'pip install -e ".[{extra}]"'


def one_line(error: Exception, context: str = "") -> str:
    """A pydantic ValidationError (or any error) as one line naming each bad field and value."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        parts = []
        for item in errors(include_url=False):
            where = ".".join(str(p) for p in item.get("loc", ()) if p != "__root__")
            message = item.get("msg", "invalid").removeprefix("Value error, ")
            if item.get("type") in ("value_error", "assertion_error"):
                parts.append(message)  # our own validators already name field and value
            else:
                value = item.get("input")
                shown = "" if isinstance(value, dict) else f" (got {value!r})"
                parts.append(f"{where or 'spec'}: {message}{shown}")
        text = "; ".join(parts)
    else:
        text = str(error)
    text = " ".join(text.split())
    return f"{context}: {text}" if context else text
