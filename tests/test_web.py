"""calc web: the page served on an ephemeral port in a thread, requested with urllib. Every
number it shows is the CLI's (the same report, rendered by calc.views); bad input is one line
with status 400 (413 for a body too large) and the server keeps serving."""

from __future__ import annotations

import json
import multiprocessing
import socket
import threading
import time
import urllib.error
import urllib.request
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import urlencode

import pytest

import calc
from calc.cli import main
from calc.commands.web import parser, routes
from calc.views import render
from calc.web import compute
from calc.web.query import Route
from calc.web.server import BODY_LIMIT, server

FALCON = Path(__file__).parent / "data" / "hf_configs" / "falcon-7b.json"
MAIN = "model=llama2-7b&gpu=a100&tokens=2e12"


def broken_report(args):
    """A report with a bug in it."""
    return 1 / 0


def slow_report(args):
    """A report that takes a minute: the search the tests stop (a child imports it by name)."""
    time.sleep(60)
    return calc.estimate("llama2-7b")


@pytest.fixture(scope="module")
def base():
    slow = Route("slow", routes()[0].parser, slow_report, limited=True)
    broken = Route("broken", routes()[0].parser, broken_report)
    made = server([*routes(), slow, broken], "127.0.0.1", 0, log=False)
    thread = threading.Thread(target=made.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{made.server_address[1]}"
    made.shutdown()
    made.server_close()


def fetch(url: str, data: bytes | None = None,
          kind: str = "application/x-www-form-urlencoded") -> tuple[int, str]:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": kind})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, answer.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8")


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_the_main_report_is_the_clis(base, capsys):
    status, page = fetch(f"{base}/?{MAIN}")
    report = calc.estimate("llama2-7b", tokens=2e12, gpu="a100")
    assert status == 200
    assert round(report.training.gpu_hours) == 190_814
    assert "190,814" in page
    assert render(report, "html") in page  # every table and note, as the views layer draws it
    assert "python -m calc llama2-7b --gpu a100 --tokens 2e12</code>" in page
    for fmt in ("json", "csv"):
        status, text = fetch(f"{base}/?{MAIN}&format={fmt}")
        assert status == 200
        assert text == cli(capsys, "llama2-7b", "--gpu", "a100", "--tokens", "2e12",
                           "--format", fmt)
    # the page's tables are this report's, and so is the CLI's JSON: every number agrees
    assert json.loads(fetch(f"{base}/?{MAIN}&format=json")[1]) == report.to_dict()


def test_options_are_the_clis_flags(base, capsys):
    query = f"{MAIN}&seq-len=2048&flash-attention=no&mfu=0.5"
    status, text = fetch(f"{base}/?{query}&format=json")
    assert status == 200
    assert text == cli(capsys, "llama2-7b", "--gpu", "a100", "--tokens", "2e12", "--seq-len",
                       "2048", "--no-flash-attention", "--mfu", "0.5", "--format", "json")
    page = fetch(f"{base}/?{query}")[1]
    assert "--seq-len 2048 --no-flash-attention --mfu 0.5</code>" in page
    changed = f"{MAIN}&set=vocab_size%3D32001&set=n_layers%3D30"  # a repeated flag: both kept
    page = fetch(f"{base}/?{changed}&tp=")[1]  # a blank field is not given
    assert "--set vocab_size=32001 --set n_layers=30</code>" in page
    assert f'href="/?{changed.replace("&", "&amp;")}"' in page  # the link to this result
    for flag in ("seq-len", "mfu", "tokens", "zero", "recompute", "precision", "price"):
        assert f'name="{flag}"' in page  # the form holds the command's own flags


@pytest.mark.parametrize("view, query, argv", [
    ("memory", "model=llama2-70b&gpu=h100&zero=3&dp=64&recompute=full",
     ["memory", "llama2-70b", "--gpu", "h100", "--zero", "3", "--dp", "64", "--recompute",
      "full"]),
    ("step", "model=llama2-7b&gpu=a100&gpus=8&tp=2",
     ["step", "llama2-7b", "--gpu", "a100", "--gpus", "8", "--tp", "2"]),
    ("infer", "model=llama2-7b&gpu=h100&batch=8",
     ["infer", "llama2-7b", "--gpu", "h100", "--batch", "8"]),
    ("", "model=meta-llama/Llama-2-7b-hf&tokens=1e12",  # a Hub id a preset cites: offline
     ["meta-llama/Llama-2-7b-hf", "--tokens", "1e12"]),
    ("", f"{MAIN}&gpus=64&search-layout=yes",  # the predicted MFU: a search, time-limited
     ["llama2-7b", "--gpu", "a100", "--tokens", "2e12", "--gpus", "64", "--search-layout"]),
])
def test_each_view_is_its_commands(base, capsys, view, query, argv):
    for fmt in ("json", "csv"):
        status, text = fetch(f"{base}/{view}?{query}&format={fmt}")
        assert status == 200
        assert text == cli(capsys, *argv, "--format", fmt)
    status, page = fetch(f"{base}/{view}?{query}")
    assert status == 200
    assert f"<code>python -m calc {' '.join(argv)}</code>" in page


def test_a_pasted_config_gives_its_exact_count(base):
    body = urlencode({"config": FALCON.read_text(), "gpu": "a100", "tokens": "1e12"})
    status, page = fetch(f"{base}/", body.encode())
    exact = calc.estimate(str(FALCON), tokens=1e12, gpu="a100").params.total
    assert status == 200
    assert exact == 6_921_720_704  # tiiuae/falcon-7b, as calc's verifier checks it
    assert f"{exact:,}" in page
    assert "python -m calc config.json --gpu a100 --tokens 1e12</code>" in page


def test_a_layout_search_shows_its_top_row(base):
    query = "model=llama2-7b&gpu=a100&gpus=8&global-batch=64"
    expected = calc.layout("llama2-7b", gpu="a100", gpus=8, global_batch=64)
    status, page = fetch(f"{base}/layout?{query}")
    assert status == 200
    assert render(expected, "html") in page  # the top rows, the misses and the notes
    if find_spec("matplotlib") is not None:  # and calc plot layout's figure, as SVG
        assert "<figure><svg" in page
    status, text = fetch(f"{base}/layout?{query}&format=json")
    served = json.loads(text)
    assert served["best"] == expected.to_dict()["best"]


def test_a_search_past_its_time_limit_is_stopped(base, monkeypatch):
    monkeypatch.setattr(compute, "SEARCH_SECONDS", 1.0)
    start = time.monotonic()
    status, text = fetch(f"{base}/slow?model=llama2-7b&format=json")
    assert status == 400
    assert text == ("calc: error: the search took longer than 1 s and was stopped; pin more "
                    "of its options (e.g. tp, pp) or search fewer GPUs\n")
    assert time.monotonic() - start < 30
    assert stopped()


def test_a_search_stops_when_its_client_leaves(base):
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as client:
        client.sendall(b"GET /slow?model=llama2-7b HTTP/1.1\r\nHost: x\r\n\r\n")
        deadline = time.monotonic() + 30
        while not multiprocessing.active_children() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert multiprocessing.active_children()  # the search started
    assert stopped()  # the page's cancel button closes the connection: the search is killed
    assert fetch(f"{base}/?{MAIN}&format=json")[0] == 200


def stopped(within: float = 10.0) -> bool:
    """Whether every search's child process is gone within `within` seconds."""
    deadline = time.monotonic() + within
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not multiprocessing.active_children()


BAD = {
    "path traversal": ("/?model=../../etc/passwd&format=json", None, 400, "not a path"),
    "a file of the server": ("/?model=pyproject.toml&format=json", None, 400, "not a path"),
    "a file flag": (f"/?{MAIN}&from=/etc/passwd&format=json", None, 400, "reads a file"),
    "malformed JSON": ("/?format=json", b"config=%7B%22model_type%22", 400, "config: not JSON"),
    "absurd tokens": ("/?model=llama2-7b&tokens=1e99&format=json", None, 400, "1e18"),
    "absurd GPUs": (f"/?{MAIN}&gpus=10000000000000000000000&format=json", None, 400, "gpus"),
    "unknown option": (f"/?{MAIN}&tokenz=2&format=json", None, 400, "tokenz"),
    "oversized body": ("/", b"config=" + b"a" * BODY_LIMIT, 413, "at most 1,000,000"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_input_is_one_line_and_the_server_goes_on(base, case):
    path, body, code, said = BAD[case]
    status, text = fetch(base + path, body)
    assert status == code
    assert text.startswith("calc: error: ") and text.count("\n") == 1 and said in text
    assert fetch(f"{base}/?{MAIN}&format=json")[0] == 200


def test_a_bug_is_one_line_and_the_server_goes_on(base):
    status, text = fetch(f"{base}/broken?model=llama2-7b")
    assert (status, text) == (500, "calc: internal error: ZeroDivisionError: division by zero\n")
    assert fetch(f"{base}/?{MAIN}&format=json")[0] == 200


def test_input_is_shown_as_text_never_as_markup(base):
    status, page = fetch(f"{base}/?model=%3Cscript%3Ealert(1)%3C/script%3E&gpu=%3Cb%3E")
    assert status == 400
    assert "<script>alert" not in page and page.count("<b>") == 1  # the page's own: calc
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and 'value="&lt;b&gt;"' in page


def test_an_error_on_the_page_sits_beside_its_field(base):
    status, page = fetch(f"{base}/?model=llama2-7b&tokens=1e99")
    assert status == 400
    assert "<p class=error role=alert>calc: error: --tokens: &#x27;1e99&#x27; is outside" in page
    assert '<label title="training tokens, e.g. 2e12 or 2T" class=bad>tokens' in page


def test_the_server_binds_this_machine_only_by_default():
    args = parser().parse_args([])
    assert (args.host, args.port) == ("127.0.0.1", 8765)


@pytest.mark.parametrize("argv, said", [
    (["--port", "70000"], "calc: error: --port: 70000 is not allowed; expected 1 to 65535"),
    (["--port", "0"], "calc: error: --port: '0' is not allowed; expected an integer >= 1"),
])
def test_a_bad_port_is_one_line(capsys, argv, said):
    assert main(["web", *argv]) == 2
    assert capsys.readouterr().err == said + "\n"
