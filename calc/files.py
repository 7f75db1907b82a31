"""The files a user names: reading a TOML or JSON object, and writing an output safely.

Spec files, presets and Hugging Face config.json files all come through `read_mapping`. Every
file calc writes (a plot, a saved bench, the docs' generated blocks) is checked by
`output_path` before any work starts (an existing file is kept unless forced) and written by
`write_atomic` through a temporary file, so an interrupted run leaves the old file whole.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from calc.errors import CalcError


def read_mapping(path: str | Path, what: str = "spec file") -> dict[str, Any]:
    """The top-level object of a TOML file, or of a JSON file (suffix .json); CalcError naming
    `what` and the file on any problem."""
    path = Path(path)
    name = f"{what} {str(path)!r}"
    if not path.exists():
        raise CalcError(f"{name} does not exist")
    if path.is_dir():
        raise CalcError(f"{name} is a directory, not a TOML or JSON file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CalcError(f"{name} cannot be read: {error}") from None
    if not text.strip():
        raise CalcError(f"{name} is empty; expected a TOML or JSON object")
    kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
    try:
        if kind == "JSON":
            import json  # a JSON file only: the presets are TOML (start-up, bench/startup.py)

            data = json.loads(text)
        else:
            data = tomllib.loads(text)
    except ValueError as error:  # json.JSONDecodeError, tomllib.TOMLDecodeError
        raise CalcError(f"{name} is not valid {kind}: {error}") from None
    if not isinstance(data, dict):
        raise CalcError(f"{name} holds a {type(data).__name__}, expected an object")
    return data


def output_path(path: str | Path, what: str, *, force: bool = False,
                suffixes: Sequence[str] = (), flag: str = "--force") -> Path:
    """The file `path` names, checked before the work that writes it: not a folder, in a folder
    that exists and can be written, with one of `suffixes` (if given; a name without a suffix
    gets the first), and not an existing file unless `force`. CalcError naming `what`."""
    path = Path(path)
    name = f"{what} {str(path)!r}"
    if path.is_dir():
        raise CalcError(f"{name} is a folder; give a file name")
    if suffixes and not path.suffix:
        path = path.with_name(path.name + suffixes[0])
        name = f"{what} {str(path)!r}"
    if suffixes and path.suffix.lower() not in suffixes:
        raise CalcError(f"{name}: {path.suffix!r} is not a format calc writes here; use "
                        f"{', '.join(suffixes)}")
    folder = path.parent
    if not folder.is_dir():
        raise CalcError(f"{name}: the folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CalcError(f"{name}: the folder {str(folder)!r} cannot be written")
    if path.exists() and not path.is_file():
        raise CalcError(f"{name} exists and is not a regular file")
    if path.exists() and not force:
        raise CalcError(f"{name} already exists; add {flag} to overwrite it")
    return path


def write_atomic(path: str | Path, content: str | bytes | Callable[[Path], None]) -> Path:
    """Write `content` (text, bytes, or a function that writes a given path) to a temporary
    file beside `path`, then rename it over `path`: readers see the old file or the new one,
    never half of one. Returns `path`."""
    import tempfile  # only when writing: it imports shutil and random, which reading never needs

    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                         suffix=path.suffix)
    os.close(handle)
    try:
        if callable(content):
            content(Path(temporary))
        elif isinstance(content, str):
            Path(temporary).write_text(content, encoding="utf-8")
        else:
            Path(temporary).write_bytes(content)
        if path.exists():  # keep the old file's permissions
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        else:
            os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
