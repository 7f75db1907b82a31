"""What the commands share: the parser whose errors are one line, the value types that name the
bad value and what is allowed, and the flag groups several commands take."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from calc.counting import DEFAULT_MFU
from calc.errors import CalcError, install
from calc.numbers import Quantity, quantity
from calc.tables import FORMATS, terminal_columns


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one CalcError line instead of usage + exit."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CalcError(message.replace("argument ", ""))

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse's formatter (CPython 3.11 Lib/argparse.py HelpFormatter.__init__) imports
        # shutil for the terminal's width, and add_argument makes one for every flag: the same
        # width (the terminal's columns less 2), read without shutil (start-up).
        return self.formatter_class(prog=self.prog, width=terminal_columns(80) - 2)


# ---- value types: argparse puts the flag in front of each message ---------------------------
def number(kind: str) -> Callable[[str], float]:
    """An argparse type for a calc.numbers.RANGES quantity, read by the library's own parser
    (k, M, B or G, T, P suffixes are decimal: 2T = 2e12)."""

    def read(text: str) -> float:
        try:
            return quantity(text, "", kind)
        except CalcError as error:
            raise argparse.ArgumentTypeError(str(error).removeprefix(": ")) from None

    read.__name__ = kind  # argparse names the type in some messages
    return read


def positive_int(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number; expected an integer >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; expected an integer >= 1")
    return value


def assignment(text: str) -> tuple[str, object]:
    """KEY=VALUE for --set; VALUE is read as JSON when it can be (numbers, true, null)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEY=VALUE (e.g. vocab_size=65 or attention.n_kv_heads=8)")
    import json  # --set only

    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


class _Offline(argparse.Action):
    """--offline: huggingface_hub's own switch (HF_HUB_OFFLINE=1) for this process, set as the
    flag is parsed so that every command that reads a MODEL honours it."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        os.environ["HF_HUB_OFFLINE"] = "1"
        setattr(namespace, self.dest, True)


def add_model(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    parser.add_argument("model", metavar="MODEL", nargs="?" if optional else None,
                        help="a preset name (python -m calc list), a spec file (TOML/JSON), "
                             "a Hugging Face config.json or Hub id (org/name)")
    parser.add_argument("--offline", action=_Offline, nargs=0, default=False,
                        help="never reach the Hugging Face Hub: a Hub id is read from a preset "
                             "that cites it or from the cache (as HF_HUB_OFFLINE=1)")


def add_from(parser: argparse.ArgumentParser, takes: str) -> None:
    """--from FILE: a trainer config (calc.trainers reads them) whose settings `takes` names."""
    parser.add_argument("--from", dest="from_file", metavar="FILE",
                        help="a trainer config (DeepSpeed JSON, Megatron-LM arguments, "
                             f"torchtitan TOML, axolotl YAML, transformers TrainingArguments "
                             f"JSON): its {takes}; every setting is echoed, the ignored ones "
                             f"listed, and the flags given here override it and say so")


def require_model(args: argparse.Namespace) -> None:
    """MODEL may be left out only when --from names a trainer config (add_model(optional=True)
    with add_from): CalcError in argparse's words otherwise."""
    if args.model is None and not args.from_file:
        raise CalcError("the following arguments are required: MODEL (or --from a trainer "
                        "config that names one)")


def add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", default="text", choices=FORMATS,
                        help="output format (default: text); csv is one tidy table: table, "
                             "row, column, value")
    parser.add_argument("--table", metavar="NAME",
                        help="only the table NAME (its title's first words, e.g. parameters), "
                             "in csv as it prints: a header and one line per row")


def add_workload(parser: argparse.ArgumentParser) -> None:
    """The flags of calc.estimate's workload; `workload(args)` reads them back."""
    from calc.spec import DTYPES

    parser.add_argument("--tokens", type=number("tokens"),
                        help="training tokens, e.g. 2e12 or 2T")
    parser.add_argument("--gpu", help="GPU catalogue name (python -m calc gpus)")
    parser.add_argument("--gpus", type=positive_int, default=1,
                        help="GPUs the run is spread over (for days)")
    mfu = parser.add_mutually_exclusive_group()
    mfu.add_argument("--mfu", type=number("mfu"),
                     help=f"model FLOPs utilisation in (0, 1] (default {DEFAULT_MFU:g})")
    mfu.add_argument("--mfu-from", metavar="BENCH_JSON",
                     help="use the MFU measured by `python -m calc bench --save BENCH_JSON`")
    parser.add_argument("--seq-len", type=positive_int,
                        help="context T (default: the model's training context)")
    parser.add_argument("--attention", default="causal", choices=("causal", "full"),
                        help="count attention over the causal triangle or the full square")
    parser.add_argument("--dtype", default="bf16", choices=DTYPES,
                        help="compute dtype whose dense peak is used (default bf16)")
    add_options(parser, "costing", title="cost and energy")


def workload(args: argparse.Namespace) -> dict[str, object]:
    """The keyword arguments of calc.estimate that add_workload's flags set."""
    mfu, mfu_source = args.mfu, None
    if args.mfu_from:  # a saved measurement (calc.verify.bench; no torch needed to read)
        from calc.reports.bench import load_bench, measured_mfu

        measured = load_bench(args.mfu_from)
        mfu, mfu_source = measured_mfu(measured, args.gpu), measured.mfu_source
    return {"tokens": args.tokens, "gpu": args.gpu, "seq_len": args.seq_len,
            "attention": args.attention, "dtype": args.dtype, "mfu": mfu, "gpus": args.gpus,
            "mfu_source": mfu_source, **options(args, "costing")}


OPTION = "option:"  # the argparse dest of a run-config option's flag: apart from other flags


def add_options(parser: argparse.ArgumentParser, section: str, *, only: Sequence[str] = (),
                skip: Sequence[str] = (), title: str | None = None,
                sets: Sequence[str] = ()) -> None:
    """The flags of one section of the run configuration (calc.plan.options), derived from its
    fields: `--name` for each option (`only` those, `skip` some), its help the field's
    description, its values the field's type (choices of a Literal, --name/--no-name of a
    bool, calc.numbers' reader of a quantity). The options in `sets` (a search's) take one
    value or a comma-separated set of them (`--pp 4,8`), read back as a tuple. Every flag
    defaults to None, not given; `options(args, section)` reads them back. The fields are read
    from calc/commands/_flags.py, which `flag_table()` writes from the schemas: a command's
    parser then builds no section's schema (start-up, bench/startup.py)."""
    from calc.commands._flags import FLAGS

    group = parser.add_argument_group(title) if title else parser
    for option, (kind, detail, help_text) in FLAGS[section].items():
        if (only and option not in only) or option in skip:
            continue
        values = _flag_values(kind, detail)
        if option in sets and "type" in values:
            values = _set_of(option, values)
            help_text += "; one value or a comma-separated set to search"
        elif "type" in values and "choices" not in values:
            values["metavar"] = option.upper()
        group.add_argument(f"--{option.replace('_', '-')}", dest=OPTION + option,
                           default=None, help=help_text, **values)


Flag = tuple[str, Any, str]  # the value's kind, what it needs (choices, a quantity), the help


def flag_table() -> dict[str, dict[str, Flag]]:
    """{section: {option: Flag}} of every section of calc.plan.options, from its schema's
    fields: what calc/commands/_flags.py holds (tests/test_cli.py compares them; `python -m
    calc.commands._args` writes it)."""
    from calc.plan.options import SECTION_SCHEMAS, options_of, schema

    table: dict[str, dict[str, Flag]] = {}
    for section in SECTION_SCHEMAS:
        fields = schema(section).model_fields
        table[section] = {option: (*_kind(fields[name].annotation),
                                   fields[name].description or "")
                          for option, name in options_of(section).items()}
    return table


def flags_source() -> str:
    """calc/commands/_flags.py: `flag_table()` written out."""
    lines = ['"""The run options\' flags, by section. GENERATED by `python -m calc.commands._args` '
             'from the',
             "schemas of calc.plan.options; do not edit. tests/test_cli.py checks it against them."
             '\n"""', "", "FLAGS = {"]
    for section, flags in flag_table().items():
        lines.append(f"    {section!r}: {{")
        lines += [f"        {option!r}: {flag!r}," for option, flag in flags.items()]
        lines.append("    },")
    return "\n".join([*lines, "}", ""])


def _set_of(option: str, values: dict[str, Any]) -> dict[str, Any]:
    """argparse's keywords for a flag taking a comma-separated set of what `values` reads."""
    one, choices = values["type"], values.get("choices")

    def read(text: str) -> tuple[Any, ...]:
        found = []
        for part in (p.strip() for p in text.split(",")):
            value = one(part) if callable(one) and one is not str else part
            if choices is not None and value not in choices:
                allowed = ", ".join(str(c) for c in choices)
                raise argparse.ArgumentTypeError(f"{part!r} is not one of {allowed}")
            found.append(value)
        return tuple(found)

    read.__name__ = option
    shown = "|".join(str(c) for c in choices) if choices else option.upper()
    return {"type": read, "metavar": f"{shown}[,...]"}


def _kind(annotation: Any) -> tuple[str, Any]:
    """The kind of value a field of type `annotation` takes (a union's first type not None),
    with what reading it needs: ("bool", None), ("choices", a Literal's values), ("quantity",
    its calc.numbers kind), ("int", None) or ("str", None)."""
    kind = annotation
    if get_origin(annotation) in (Union, UnionType):
        kind = next(a for a in get_args(annotation) if a is not type(None))
    if kind is bool:
        return "bool", None
    if get_origin(kind) is Literal:
        return "choices", get_args(kind)
    if get_origin(kind) is Annotated:
        return "quantity", next(m for m in get_args(kind)[1:] if isinstance(m, Quantity)).kind
    if kind is int:
        return "int", None
    return "str", None


def _values(annotation: Any) -> dict[str, Any]:
    """argparse's keywords for a field of type `annotation` (a union's first type not None)."""
    return _flag_values(*_kind(annotation))


def _flag_values(kind: str, detail: Any) -> dict[str, Any]:
    """argparse's keywords for a flag of `_kind`'s (kind, detail)."""
    if kind == "bool":
        return {"action": argparse.BooleanOptionalAction}
    if kind == "choices":
        choices = list(detail)
        return {"choices": choices, "type": type(choices[0])}
    if kind == "quantity":
        return {"type": number(detail)}
    if kind == "int":
        return {"type": positive_int}
    return {"type": str}


def options(args: argparse.Namespace, *sections: str) -> dict[str, Any]:
    """The options of `sections` (calc.plan.options) the flags of add_options gave."""
    from calc.commands._flags import FLAGS

    return {option: getattr(args, OPTION + option) for section in sections
            for option in FLAGS[section]
            if getattr(args, OPTION + option, None) is not None}


ACTIVATIONS = ("micro_batch", "recompute", "flash_attention", "dropout")


def add_activations(parser: argparse.ArgumentParser) -> None:
    """The flags that set the stored activations of one micro-batch (the layout's options
    ACTIVATIONS) and --paper-2022; `activations(args)` reads them back."""
    add_options(parser, "layout", only=ACTIVATIONS)
    parser.add_argument("--paper-2022", action="store_true",
                        help="Korthikanti et al. 2022's setting: eager attention and dropout "
                             "(--no-flash-attention --dropout)")


def activations(args: argparse.Namespace) -> dict[str, object]:
    """The ACTIVATIONS options add_activations' flags set; an explicit flag wins over
    --paper-2022, which wins over the defaults (calc.spec.layout.CURRENT_PRACTICE)."""
    from calc.spec.layout import PAPER_2022

    chosen: dict[str, object] = dict(PAPER_2022) if args.paper_2022 else {}
    given = options(args, "layout")
    return {**chosen, **{key: value for key, value in given.items() if key in ACTIVATIONS}}


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

    formulas = command_formulas(command, getattr(args, "model", None))
    print(render(formulas, args.format, args.table), end="")
    return True


def require_torch(command: str) -> None:
    """One line, not a traceback, when a command that builds models in torch runs without it;
    each such command (verify, bench) is also the name of the extra that installs torch."""
    from importlib.util import find_spec

    if find_spec("torch") is None:
        raise CalcError(f"{command} needs torch: {install(command)} (or pip install "
                        f"torch==2.13.0)")


if __name__ == "__main__":  # python -m calc.commands._args: write calc/commands/_flags.py
    from pathlib import Path

    Path(__file__).with_name("_flags.py").write_text(flags_source(), encoding="utf-8")
