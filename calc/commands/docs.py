"""Generated blocks in markdown: what a command prints, kept between two markers.

    <!-- output: python -m calc compare gpt2 llama2-7b --format markdown -->
    ...what the command prints...
    <!-- /output -->

`python -m calc docs` rewrites every such block in README.md and docs/*.md under the current
folder; `--check` rewrites nothing and fails when a block is stale (tests/test_docs.py runs it,
so a stale committed table fails the tests). Adding a table is one line — an opening and a
closing marker, even on the same line — and a run of `python -m calc docs`. A marker counts
only at the start of a line, so prose can quote one.

A command is `python -m calc ARGS` (run in-process through calc.commands.run) or `python FILE.py
ARGS` (a script under the root, run with runpy). Markdown and HTML output goes in as it is;
other formats go in a fenced block (```text, ```json, ...).

`python -m calc docs --layout` prints the map of the package the README's Layout section holds:
each package and module directly under calc/ (and the preset data) with the first sentence of its
docstring, read from the files on disk, so a new package appears once it has a docstring.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import re
import runpy
import shlex
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from calc.commands import run as run_command
from calc.commands._args import Parser
from calc.errors import CalcError
from calc.files import write_atomic

OPEN, CLOSE = "<!-- output: ", "<!-- /output -->"
_OPENING = re.compile(r"^" + re.escape(OPEN), re.MULTILINE)  # at a line's start: not in prose
FILES = ("README.md", "docs/*.md")
RAW_FORMATS = ("markdown", "html")


@dataclass(frozen=True)
class Block:
    path: Path
    command: str
    start: int  # where the body starts (just after the opening marker)
    end: int  # where the closing marker starts
    body: str


def blocks(path: Path, text: str) -> list[Block]:
    """The marked blocks of one file, in order; CalcError on a marker without its pair."""
    found = []
    position = 0
    while match := _OPENING.search(text, position):
        opening = match.start()
        head_end = text.find("-->", opening + len(OPEN))
        closing = text.find(CLOSE, head_end)
        nested = _OPENING.search(text, head_end)
        if head_end < 0 or closing < 0 or (nested and nested.start() < closing):
            line = text.count("\n", 0, opening) + 1
            raise CalcError(f"{path}:{line}: {OPEN.strip()} has no {CLOSE} after it")
        command = text[opening + len(OPEN):head_end].strip()
        start = head_end + len("-->")
        found.append(Block(path, command, start, closing, text[start:closing]))
        position = closing + len(CLOSE)
    return found


def output(command: str, root: Path) -> str:
    """What `command` prints, run in this process."""
    argv = shlex.split(command)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if argv[:3] == ["python", "-m", "calc"]:
            try:
                code = run_command(argv[3:])
            except CalcError as error:
                raise CalcError(f"docs: `{command}`: {error}") from None
        elif len(argv) >= 2 and argv[0] == "python" and argv[1].endswith(".py"):
            code = _script(root / argv[1], argv[1:])
        else:
            raise CalcError(f"docs: cannot run {command!r}; a block's command is "
                            f"`python -m calc ARGS` or `python SCRIPT.py ARGS`")
    if code:
        raise CalcError(f"docs: `{command}` exited {code}: {err.getvalue().strip()}")
    return out.getvalue()


def _script(path: Path, argv: list[str]) -> int:
    saved = sys.argv
    sys.argv = [str(path), *argv[1:]]
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    finally:
        sys.argv = saved
    return 0


def body(command: str, text: str) -> str:
    """A block's body: the output as it is (markdown, html) or in a fence named by format."""
    argv = shlex.split(command)
    fmt = argv[argv.index("--format") + 1] if "--format" in argv[:-1] else "text"
    if fmt in RAW_FORMATS:
        return f"\n{text}"
    return f"\n```{fmt}\n{text}```\n"


def files(root: Path) -> list[Path]:
    return sorted({p for pattern in FILES for p in root.glob(pattern) if p.is_file()})


def refresh(root: Path, check: bool = False) -> tuple[int, list[Block]]:
    """Rewrite (or with `check`, only compare) every block; (blocks seen, stale blocks)."""
    seen, stale = 0, []
    for path in files(root):
        found, old = refresh_file(root, path, check)
        seen += found
        stale += old
    if not seen:
        where = f"{' or '.join(FILES)} under {str(root)!r}"
        raise CalcError(f"docs: no {OPEN.strip()} blocks in {where}; run it from calc's "
                        f"repository root or give --root")
    return seen, stale


def refresh_file(root: Path, path: Path, check: bool = False) -> tuple[int, list[Block]]:
    """refresh for one file under `root`: (its blocks, its stale blocks)."""
    text = path.read_text(encoding="utf-8")
    found = blocks(path.relative_to(root), text)
    stale, new_text, last = [], [], 0
    for block in found:
        fresh = body(block.command, output(block.command, root))
        if fresh != block.body:
            stale.append(block)
        new_text += [text[last:block.start], fresh]
        last = block.end
    new_text.append(text[last:])
    if not check and found:
        rewritten = "".join(new_text)
        if rewritten != text:  # all or nothing: an interrupted run keeps the old file
            write_atomic(path, rewritten)
    return len(found), stale


# A sentence ends at . ! or ? and a space before a capital or a quote: "calc.views", "et al. 2020",
# "e.g. `estimate`" and "e.g. Llama" do not end one.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!e\.g\.)(?<!i\.e\.)(?<!al\.)\s+(?=[A-Z\"])")
LAYOUT_WIDTH = 99  # the README's lines stay under 100 characters


def summary(path: Path) -> str:
    """The first sentence of a module's docstring, on one line; CalcError when it has none."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not docstring:
        raise CalcError(f"docs: {path} has no docstring; the README's Layout section prints the "
                        f"first sentence of every package's and top-level module's docstring")
    paragraph = " ".join(docstring.split("\n\n")[0].split())
    return _SENTENCE_END.split(paragraph)[0]


def layout(package: Path, data: Path | None = None) -> str:
    """Each package and module directly under `package` (dunder modules aside: `__init__` is the
    package's own line) and the `data` package, one entry each: its path from the package's
    parent and the first sentence of its docstring, wrapped under LAYOUT_WIDTH."""
    root = package.parent
    entries = [(package, package / "__init__.py")]
    for path in sorted(package.iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            entries.append((path, path / "__init__.py"))
        elif path.suffix == ".py" and not path.name.startswith("__"):
            entries.append((path, path))
    if data is not None:
        entries.append((data, data / "__init__.py"))
    names = [path.relative_to(root).as_posix() + ("/" if path.is_dir() else "")
             for path, _ in entries]
    indent = " " * (max(map(len, names)) + 2)
    lines = []
    for name, (_, source) in zip(names, entries, strict=True):
        lines += textwrap.wrap(summary(source), LAYOUT_WIDTH, break_on_hyphens=False,
                               initial_indent=name.ljust(len(indent)), subsequent_indent=indent)
    return "\n".join(lines) + "\n"


def _package_layout() -> str:
    """calc's own layout: the package this process imported, and its preset data (presets/ in a
    checkout, calc/preset_data/ in an installed copy)."""
    package = Path(__file__).resolve().parents[1]
    data = importlib.util.find_spec("calc.preset_data")
    return layout(package, Path(data.origin).parent if data and data.origin else None)


def run(argv: Sequence[str]) -> int:
    parser = Parser(prog="python -m calc docs",
                    description=f"Rewrite every <!-- output: COMMAND --> block in "
                                f"{' and '.join(FILES)} with what COMMAND prints now.")
    parser.add_argument("--check", action="store_true",
                        help="rewrite nothing; exit 1 when a block is stale")
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="the folder holding README.md and docs/ (default: here)")
    parser.add_argument("--layout", action="store_true",
                        help="print the README's Layout block: every package and module of calc "
                             "with the first sentence of its docstring")
    args = parser.parse_args(argv)
    if args.layout:
        print(_package_layout(), end="")
        return 0
    seen, stale = refresh(args.root, check=args.check)
    for block in stale:
        verb = "is stale" if args.check else "rewritten"
        print(f"{block.path}: `{block.command}` {verb}")
    print(f"{seen} generated blocks, {len(stale)} {'stale' if args.check else 'rewritten'}")
    return 1 if args.check and stale else 0
