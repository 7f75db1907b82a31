"""Reading the files a user names: a TOML or JSON object, or one clear line saying what is wrong.

Spec files, presets and Hugging Face config.json files all come through `read_mapping`.
"""

from __future__ import annotations

import json
import tomllib
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
        data = json.loads(text) if kind == "JSON" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as error:
        raise CalcError(f"{name} is not valid {kind}: {error}") from None
    if not isinstance(data, dict):
        raise CalcError(f"{name} holds a {type(data).__name__}, expected an object")
    return data
