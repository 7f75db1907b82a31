"""The HTTP side: the standard library's ThreadingHTTPServer (no dependency; why in
docs/architecture.md), one thread per request and nothing shared between requests but the
read-only routes. GET takes the query; POST (a pasted config.json) a form body of at most
BODY_LIMIT bytes. Every bad input is one line: on the page beside the form, or as text for a
download, with status 400 (413 for a body too large); the server keeps serving."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from calc.errors import CalcError
from calc.web.compute import PASTED, Cancelled, pasted, rendered
from calc.web.page import page
from calc.web.query import PAGE, Route, argv, command_line, output

BODY_LIMIT = 1_000_000  # bytes: a config.json is a few kB; 1 MB is the cap
DRAIN_LIMIT = 16 * BODY_LIMIT  # a refused body read up to here, a larger one cut off
HOST, PORT = "127.0.0.1", 8765  # this machine only, unless told otherwise
_FORM = "application/x-www-form-urlencoded"
_TYPES = {"json": "application/json", "csv": "text/csv"}
_SECURITY = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
                                        "script-src 'unsafe-inline'; form-action 'self'",
             "X-Content-Type-Options": "nosniff"}


class Handler(BaseHTTPRequestHandler):
    """One request; `routes` (by path, "" the main report) is set by `server()`."""

    routes: dict[str, Route] = {}  # noqa: RUF012 (replaced, never changed, per server)
    server_version = "calc-web"

    def do_GET(self) -> None:  # http.server calls do_<METHOD>
        self._answer(parse_qsl(urlsplit(self.path).query, keep_blank_values=True))

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if length > BODY_LIMIT:
            self._drain(length)
            self.close_connection = True
            self._send(413, "text/plain", f"calc: error: request body of {length:,} bytes; at "
                                          f"most {BODY_LIMIT:,} (1 MB)\n")
            return
        if length < 0:
            self.close_connection = True
            self._send(400, "text/plain", f"calc: error: Content-Length "
                                          f"{self.headers.get('Content-Length')!r}: expected "
                                          f"a whole number of bytes\n")
            return
        body = self.rfile.read(length)
        kind = self.headers.get("Content-Type", "").partition(";")[0].strip()
        if kind != _FORM:
            self._send(400, "text/plain", f"calc: error: Content-Type {kind!r}: expected "
                                          f"{_FORM} (the page's form)\n")
            return
        try:
            form = parse_qsl(body.decode("utf-8"), keep_blank_values=True,
                             max_num_fields=1000)
        except (UnicodeDecodeError, ValueError) as error:
            self._send(400, "text/plain", f"calc: error: the form body: {error}\n")
            return
        self._answer([*parse_qsl(urlsplit(self.path).query, keep_blank_values=True), *form])

    def _drain(self, length: int) -> None:
        """Read and drop a refused body of up to DRAIN_LIMIT bytes, so that the client, still
        sending it, reads the one-line answer rather than a broken connection."""
        left = min(length, DRAIN_LIMIT)
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 16))
            if not chunk:
                return
            left -= len(chunk)

    def _answer(self, params: Sequence[tuple[str, str]]) -> None:
        start = time.perf_counter()
        route = self.routes.get(urlsplit(self.path).path.strip("/"))
        if route is None:
            self._send(404, "text/plain", f"calc: error: no page {urlsplit(self.path).path!r}; "
                                          f"the pages are /{', /'.join(self.routes)}\n")
            return
        fmt, table = output(params)
        cli = ""
        try:
            line = argv(route, params)
            config = dict(params).get("config", "").strip()
            preset = pasted(config) if config else None
            if preset is not None:
                if line and not line[0].startswith("-"):
                    raise CalcError("model: give a model name or paste a config.json, not both")
                line.insert(0, PASTED)
            cli = command_line(route, line, fmt)
            text = rendered(route, line, preset, "html" if fmt == PAGE else fmt, table,
                            self._gone)
        except Cancelled:
            self.close_connection = True
            return
        except CalcError as error:
            message = " ".join(str(error).split())
            if fmt == PAGE:
                self._send(400, "text/html", page(route, self._routes(), params, error=message),
                           start)
            else:
                self._send(400, "text/plain", f"calc: error: {message}\n", start)
            return
        except Exception as error:  # a bug in calc: one line, and the server goes on
            self._send(500, "text/plain", f"calc: internal error: {type(error).__name__}: "
                                          f"{' '.join(str(error).split())}\n", start)
            return
        if fmt == PAGE:
            text = page(route, self._routes(), params, result=text, cli=cli)
        self._send(200, _TYPES.get(fmt, "text/html" if fmt == PAGE else "text/plain"), text,
                   start, download=None if fmt == PAGE else f"calc-{route.name or 'estimate'}"
                                                            f".{fmt}")

    def _gone(self) -> bool:
        """Whether the client closed its connection (stopped loading the page)."""
        if not select.select([self.connection], [], [], 0)[0]:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _routes(self) -> list[Route]:
        return list(self.routes.values())

    def _send(self, status: int, kind: str, text: str, start: float | None = None,
              download: str | None = None) -> None:
        body = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        if start is not None:  # the server's own time (bench/web.py reads it)
            self.send_header("Server-Timing", f"calc;dur={(time.perf_counter() - start) * 1e3:.1f}")
        if download:
            self.send_header("Content-Disposition", f'attachment; filename="{download}"')
        for name, value in _SECURITY.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


def server(routes: Sequence[Route], host: str = HOST, port: int = PORT,
           log: bool = True) -> ThreadingHTTPServer:
    """A server for `routes`, bound (port 0: any free port) but not yet serving; `log` prints
    each request on stderr as http.server does."""
    members: dict[str, object] = {"routes": {r.name: r for r in routes}}
    if not log:
        members["log_message"] = lambda self, *args: None
    handler = type("RoutesHandler", (Handler,), members)
    made = ThreadingHTTPServer((host, port), handler)
    made.daemon_threads = True
    return made


def warm(route: Route, routes: Sequence[Route], line: Sequence[str]) -> None:
    """Draw `route`'s page for `line` once before serving: its modules imported, the presets
    and GPUs listed for the form, so the first request takes what every other does."""
    page(route, routes, [], result=rendered(route, line, None, PAGE, None))
