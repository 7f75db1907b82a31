"""`python -m calc`: argparse → library calls → render. No arithmetic here.

    python -m calc MODEL [--tokens N] [--gpu NAME] [--gpus K] [--mfu F] [--seq-len T]
                         [--attention causal|full] [--dtype bf16] [--set KEY=VALUE]...
                         [--formula] [--format text|markdown|json|csv|latex|html]
    python -m calc list | gpus [--format ...]

Exit codes: 0 success; 2 bad input (one line on stderr naming the field, the value and what is
allowed); 1 an internal error.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence

from calc.errors import CalcError
from calc.render import FORMATS, render
from calc.spec import DTYPES

_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}


class _Parser(argparse.ArgumentParser):
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


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", default="text", choices=FORMATS,
                        help="output format (default: text)")


# ---- commands -------------------------------------------------------------------------------
def _report_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m calc",
        description="Parameters, FLOPs per token and training cost of a Transformer LM. "
                    "Other commands: list, gpus.")
    parser.add_argument("model", metavar="MODEL",
                        help="a preset name (python -m calc list) or a spec file (TOML/JSON)")
    parser.add_argument("--tokens", type=positive_number,
                        help="training tokens, e.g. 2e12 or 2T")
    parser.add_argument("--gpu", help="GPU catalogue name (python -m calc gpus)")
    parser.add_argument("--gpus", type=positive_int, default=1,
                        help="GPUs the run is spread over (for days)")
    parser.add_argument("--mfu", type=fraction,
                        help="model FLOPs utilisation in (0, 1] (default 0.4)")
    parser.add_argument("--seq-len", type=positive_int,
                        help="context T (default: the model's training context)")
    parser.add_argument("--attention", default="causal", choices=("causal", "full"),
                        help="count attention over the causal triangle or the full square")
    parser.add_argument("--dtype", default="bf16", choices=DTYPES,
                        help="compute dtype whose dense peak is used (default bf16)")
    parser.add_argument("--set", dest="changes", action="append", type=assignment,
                        default=[], metavar="KEY=VALUE",
                        help="change a spec field, e.g. vocab_size=65 or attention.n_heads=16")
    parser.add_argument("--formula", action="store_true",
                        help="print the model's symbolic formulas (text/LaTeX) instead")
    _add_format(parser)
    return parser


def run_report(argv: Sequence[str]) -> int:
    from calc.presets import Preset, load_model
    from calc.report import estimate

    args = _report_parser().parse_args(argv)
    preset: Preset = load_model(args.model)
    if args.changes:  # a changed spec: the published facts no longer describe it
        changes = dict(args.changes)
        described = ", ".join(f"{k}={v}" for k, v in changes.items())
        preset = Preset(name=preset.name, title=f"{preset.title} with {described}",
                        source=preset.source, spec=preset.spec.updated(**changes))
    if args.formula:
        from calc.formulas.display import formula_document

        print(formula_document(preset.spec, args.format), end="")
        return 0
    report = estimate(preset, tokens=args.tokens, gpu=args.gpu, seq_len=args.seq_len,
                      attention=args.attention, dtype=args.dtype, mfu=args.mfu, gpus=args.gpus)
    print(render(report, args.format), end="")
    return 0


def run_list(argv: Sequence[str]) -> int:
    from calc.catalog import preset_catalogue

    parser = _Parser(prog="python -m calc list", description="The model presets, with sizes.")
    _add_format(parser)
    args = parser.parse_args(argv)
    print(render(preset_catalogue(), args.format), end="")
    return 0


def run_gpus(argv: Sequence[str]) -> int:
    from calc.catalog import gpu_catalogue

    parser = _Parser(prog="python -m calc gpus",
                     description="The GPU catalogue: dense peaks per dtype, with sources.")
    _add_format(parser)
    args = parser.parse_args(argv)
    print(render(gpu_catalogue(), args.format), end="")
    return 0


COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "list": run_list,
    "gpus": run_gpus,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = COMMANDS.get(argv[0]) if argv else None
    try:
        return command(argv[1:]) if command else run_report(argv)
    except CalcError as error:
        print(f"calc: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `python -m calc ... | head`
        sys.stderr.close()
        return 0
    except Exception as error:  # a bug in calc, not bad input
        if os.environ.get("CALC_DEBUG"):
            raise
        print(f"calc: internal error: {type(error).__name__}: {error} "
              f"(set CALC_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
