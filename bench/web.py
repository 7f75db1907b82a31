"""calc web: the server's time for the main report's page, read from its Server-Timing header.

    python bench/web.py [--requests 20]

Target (issue 22): at most 200 ms of server time for `/?model=llama2-7b&gpu=a100&tokens=2e12`
on a 2-core machine. The server runs in a thread of this process on a free port. The first
request is shown apart: it imports the report's and the page's modules and lists the presets
and GPUs for the form, which `python -m calc web` does before serving (calc.web.server.warm);
then the best and the median of the rest, and the round trip as urllib sees it. Prints
figures; asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import urllib.request

from calc.commands.web import first_page, routes
from calc.web.server import server, warm

QUERY = "/?model=llama2-7b&gpu=a100&tokens=2e12"
TARGET_MS = 200.0


def timed(url: str) -> tuple[float, float]:
    """The server's ms (Server-Timing) and the round trip's ms of one GET."""
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as answer:
        answer.read()
        header = answer.headers["Server-Timing"]
    return float(header.partition("dur=")[2]), (time.perf_counter() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    views = routes()
    made = server(views, "127.0.0.1", 0, log=False)
    threading.Thread(target=made.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{made.server_address[1]}{QUERY}"
    try:
        start = time.perf_counter()
        warm(views[0], views, first_page(views[0]))  # what `python -m calc web` does first
        warmed = (time.perf_counter() - start) * 1e3
        first = timed(url)
        rest = [timed(url) for _ in range(args.requests)]
    finally:
        made.shutdown()
        made.server_close()
    served = [s for s, _ in rest]
    best, median = min(served), statistics.median(served)
    print(f"GET {QUERY}   server ms  round trip ms   target {TARGET_MS:g} ms")
    print(f"{'warm-up, before serving':32s} {warmed:9.1f}")
    print(f"{'first request':32s} {first[0]:9.1f} {first[1]:14.1f}   "
          f"{'ok' if first[0] <= TARGET_MS else 'over'}")
    print(f"{'best of ' + str(args.requests):32s} {best:9.1f} "
          f"{min(r for _, r in rest):14.1f}   {'ok' if best <= TARGET_MS else 'over'}")
    print(f"{'median of ' + str(args.requests):32s} {median:9.1f} "
          f"{statistics.median(r for _, r in rest):14.1f}   "
          f"{'ok' if median <= TARGET_MS else 'over'}")


if __name__ == "__main__":
    main()
