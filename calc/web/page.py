"""The page: the form a route's parser implies (its flags in its own groups) above the result
calc.views rendered, with the CLI line, the downloads and the error line."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from html import escape
from importlib.resources import files
from urllib.parse import urlencode

from calc.presets import list_presets, load_gpus
from calc.web.query import NO, YES, Flag, Route, flags

TITLES = {"": "estimate", "memory": "memory", "layout": "layout search", "step": "step time",
          "infer": "serving"}
_FIELD = re.compile(r"(?:--)?([a-z][a-z0-9_-]*)")  # the field an error line starts with


@cache
def _asset(name: str) -> str:
    return files("calc.web").joinpath("static", name).read_text(encoding="utf-8")


def page(route: Route, routes: Sequence[Route], params: Sequence[tuple[str, str]],
         result: str = "", cli: str = "", error: str = "") -> str:
    """The whole page for `route` with the form filled from `params`."""
    given = {k: v for k, v in params if v.strip()}
    field = _field(error, route)
    keep = urlencode({k: v for k, v in given.items() if k in ("model", "gpu", "tokens")})
    nav = " · ".join(
        f'<a href="/{r.name}{"?" + keep if keep else ""}"'
        f'{" class=here" if r is route else ""}>{TITLES.get(r.name, r.name)}</a>'
        for r in routes)
    out = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>calc: "
           f"{escape(TITLES.get(route.name, route.name))}</title><style>{_asset('page.css')}"
           f"</style></head><body><header><b>calc</b> <nav>{nav}</nav></header>",
           _form(route, given, field),
           f'<p class=error role=alert>calc: error: {escape(error)}</p>' if error else ""]
    if result:
        query = [(k, v) for k, v in params if v.strip() and k not in ("format", "config")]
        here = f"/{route.name}?{urlencode(query)}"
        downloads = "" if "config" in given else (
            f' <a href="{escape(here)}&amp;format=json" download>JSON</a>'
            f' <a href="{escape(here)}&amp;format=csv" download>CSV</a>'
            f' <a href="{escape(here)}">link to this result</a>')
        out.append(f"<section class=result><p class=cli><code>{escape(cli)}</code> "
                   f"<button type=button class=copy>copy</button>{downloads}</p>{result}"
                   f"</section>")
    out.append(f"<script>{_asset('page.js')}</script></body></html>")
    return "".join(out)


def _field(error: str, route: Route) -> str | None:
    """The form field an error line names first, if any."""
    match = _FIELD.match(error)
    name = match and match.group(1).replace("_", "-")
    return name if name and name in flags(route) else None


def _form(route: Route, given: dict[str, str], field: str | None) -> str:
    groups: dict[str, list[Flag]] = {}
    for flag in flags(route).values():
        groups.setdefault(flag.group, []).append(flag)
    parts = [f'<form method=get action="/{route.name}">']
    for title, members in groups.items():
        fields = "".join(_input(flag, given, field) for flag in members)
        shown = title in ("model", "run") or any(f.name in given or f.name == field
                                                 for f in members)
        extra = _pasted(given) if title == "model" else ""
        parts.append(f"<details{' open' if shown else ''}><summary>{escape(title)}</summary>"
                     f"<div class=fields>{fields}{extra}</div></details>")
    parts.append("<p class=go><button>show</button> <button name=format value=json>JSON"
                 "</button> <button name=format value=csv>CSV</button> <span class=busy hidden>"
                 "working… <span>0</span> s <button type=button>cancel</button></span></p>"
                 f"</form>{_lists()}")
    return "".join(parts)


def _pasted(given: dict[str, str]) -> str:
    return ("<label class=wide>or paste a config.json (Hugging Face or calc spec; at most 1 MB)"
            "<textarea name=config rows=4 spellcheck=false>"
            f"{escape(given.get('config', ''))}</textarea>"
            "<input type=file accept=.json,application/json class=upload></label>")


def _input(flag: Flag, given: dict[str, str], field: str | None) -> str:
    name, value = flag.name, given.get(flag.name, "")
    default = f"({flag.default})" if flag.default else ""
    if flag.switch:
        said = value.lower()
        widget = _select(name, ["yes", "no"], "yes" if said in YES else "no" if said in NO
                         else said, default)
    elif flag.choices:
        widget = _select(name, list(flag.choices), value, default)
    else:
        lists = {"model": " list=models", "gpu": " list=gpus"}.get(name, "")
        widget = (f'<input name="{name}" value="{escape(value, quote=True)}"{lists}'
                  f' placeholder="{escape(flag.default or flag.metavar, quote=True)}">')
    mark = " class=bad" if name == field else ""
    return f'<label title="{escape(flag.help, quote=True)}"{mark}>{escape(name)}{widget}</label>'


def _select(name: str, options: list[str], value: str, default: str) -> str:
    """A list of `options` after a blank one (not given: the command's `default`)."""
    items = "".join(f'<option{" selected" if o == value else ""}>{escape(o)}</option>'
                    for o in options)
    return (f'<select name="{name}"><option value="">{escape(default)}</option>{items}'
            f'</select>')


@cache
def _lists() -> str:
    """The searchable lists of presets and GPUs (the same for every page)."""
    models = "".join(f"<option value={escape(m, quote=True)}>" for m in list_presets())
    gpus = "".join(f"<option value={escape(g, quote=True)}>" for g in sorted(load_gpus()))
    return f"<datalist id=models>{models}</datalist><datalist id=gpus>{gpus}</datalist>"
