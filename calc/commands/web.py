"""The calculator in a browser: `python -m calc web [--host 127.0.0.1] [--port 8765]`."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from calc.commands import EXAMPLES, estimate, infer, layout, memory, step
from calc.commands._args import Parser, positive_int
from calc.errors import CalcError
from calc.web.query import Route
from calc.web.server import HOST, PORT, server, warm

MAX_PORT = 65535  # TCP's port numbers are 16 bits


def routes() -> list[Route]:
    """The page's views: these commands' own parsers and reports (calc.web imports no
    command; the search runs time-limited in a child process)."""
    return [Route("", estimate.parser, estimate.report, limited=_searches),
            Route("memory", memory.parser, memory.report),
            Route("layout", layout.parser, layout.report, limited=True, plotted=layout.plotted),
            Route("step", step.parser, step.report),
            Route("infer", infer.parser, infer.report)]


def first_page(main: Route) -> list[str]:
    """The argv of the main report drawn before serving: the CLI's first example's."""
    return shlex.split(EXAMPLES[0][0].removeprefix(main.command))


def _searches(args: Any) -> bool:
    """Whether the main report runs the layout search (--search-layout): then time-limited."""
    return bool(args.search_layout)


def parser() -> Parser:
    made = Parser(prog="python -m calc web",
                  description="Serve the calculator as a page on this machine: the main report, "
                              "memory, the layout search, the step time and serving, each the "
                              "report its command prints, with its CLI line and JSON/CSV.")
    made.add_argument("--host", default=HOST,
                      help=f"address to bind (default {HOST}: this machine only)")
    made.add_argument("--port", type=positive_int, default=PORT,
                      help=f"port (default {PORT})")
    return made


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if args.port > MAX_PORT:
        raise CalcError(f"--port: {args.port} is not allowed; expected 1 to {MAX_PORT}")
    views = routes()
    try:
        made = server(views, args.host, args.port)
    except OSError as error:  # the port taken, the address not this machine's
        raise CalcError(f"--host {args.host} --port {args.port}: {error.strerror or error}") \
            from None
    warm(views[0], views, first_page(views[0]))
    host, port = made.server_address[:2]
    print(f"calc web: http://{host}:{port}/  (Ctrl-C stops it)", flush=True)
    try:
        made.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        made.server_close()
    return 0
