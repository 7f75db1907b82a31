"""What the commands share: the parser whose errors are one line, the value types that name the
bad value and what is allowed, and the flag groups several commands take."""

from __future__ import annotations

import argparse
import json
import math

from calc.errors import CalcError
from calc.tables import FORMATS

_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one CalcError line instead of usage + exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CalcError(message.replace("argument ", ""))


# ---- value types: argparse puts the flag in front of each message ---------------------------
def positive_number(text: str) -> float:
    """A positive finite number; k, M, B (or G), T, P suffixes are decimal (2T = 2e12)."""
    raw = text.strip()
    scale = _SUFFIXES.get(raw[-1:].lower(), 1.0) if raw[-1:].isalpha() else 1.0
    try:
        value = float(raw[:-1] if scale != 1.0 else raw) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number; expected a positive finite number such as 2e12 "
            f"or 2T") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed; expected a positive finite number")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number; expected an integer >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; expected an integer >= 1")
    return value


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number; expected a value in (0, 1]") from None
    if not (0 < value <= 1):  # also rejects NaN
        raise argparse.ArgumentTypeError(
            f"{text!r} is outside (0, 1]; MFU is a fraction of peak, e.g. 0.4")
    return value


def assignment(text: str) -> tuple[str, object]:
    """KEY=VALUE for --set; VALUE is read as JSON when it can be (numbers, true, null)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEY=VALUE (e.g. vocab_size=65 or attention.n_kv_heads=8)")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def add_model(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL",
                        help="a preset name (python -m calc list), a spec file (TOML/JSON) "
                             "or a Hugging Face config.json")


def add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", default="text", choices=FORMATS,
                        help="output format (default: text)")


def add_workload(parser: argparse.ArgumentParser) -> None:
    """The flags of calc.estimate's workload; `workload(args)` reads them back."""
    from calc.spec import DTYPES

    parser.add_argument("--tokens", type=positive_number,
                        help="training tokens, e.g. 2e12 or 2T")
    parser.add_argument("--gpu", help="GPU catalogue name (python -m calc gpus)")
    parser.add_argument("--gpus", type=positive_int, default=1,
                        help="GPUs the run is spread over (for days)")
    mfu = parser.add_mutually_exclusive_group()
    mfu.add_argument("--mfu", type=fraction,
                     help="model FLOPs utilisation in (0, 1] (default 0.4)")
    mfu.add_argument("--mfu-from", metavar="BENCH_JSON",
                     help="use the MFU measured by `python -m calc bench --save BENCH_JSON`")
    parser.add_argument("--seq-len", type=positive_int,
                        help="context T (default: the model's training context)")
    parser.add_argument("--attention", default="causal", choices=("causal", "full"),
                        help="count attention over the causal triangle or the full square")
    parser.add_argument("--dtype", default="bf16", choices=DTYPES,
                        help="compute dtype whose dense peak is used (default bf16)")


def workload(args: argparse.Namespace) -> dict[str, object]:
    """The keyword arguments of calc.estimate that add_workload's flags set."""
    mfu, mfu_source = args.mfu, None
    if args.mfu_from:  # a saved measurement (calc.verify.throughput; no torch needed to read)
        from calc.reports.bench import load_bench

        measured = load_bench(args.mfu_from)
        mfu, mfu_source = measured.mfu, measured.mfu_source
    return {"tokens": args.tokens, "gpu": args.gpu, "seq_len": args.seq_len,
            "attention": args.attention, "dtype": args.dtype, "mfu": mfu, "gpus": args.gpus,
            "mfu_source": mfu_source}


def add_formula(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--formula", action="store_true",
                        help="print the formulas (text/LaTeX/JSON by --format) instead of the "
                             "numbers; a MODEL's structure substituted")


def show_formulas(command: str, args: argparse.Namespace) -> bool:
    """Print `command`'s formulas (add_formula's --formula) for args.model if any, in
    args.format; True when it did, and the command has nothing more to do."""
    if not args.formula:
        return False
    from calc.reports.formulas import command_formulas  # sympy: only when asked
    from calc.views import render

    print(render(command_formulas(command, getattr(args, "model", None)), args.format), end="")
    return True


def require_torch(command: str) -> None:
    """One line, not a traceback, when a command that builds models in torch runs without it."""
    from importlib.util import find_spec

    if find_spec("torch") is None:
        raise CalcError(f"{command} needs torch: pip install torch==2.13.0 (or pip install -e "
                        f"'.[verify]')")
