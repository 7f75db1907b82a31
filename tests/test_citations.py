"""Nothing in the repository cites material a reader of it cannot open.

Every fact cites its primary source (a paper and table, a datasheet, a model card, a named
checkpoint's config.json); a path outside the repository, or the reading material calc was
first built from, is no citation. The phrases are assembled here so this file does not match.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("../" + "shared", "shared/" + "reference", "source " + "chapter")


def tracked_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True)
    return [name for name in out.stdout.decode().split("\0") if name]


def test_no_tracked_file_cites_outside_the_repository():
    offenders: dict[str, str] = {}
    for name in tracked_files():
        path = ROOT / name
        if not path.is_file():  # deleted in the work tree, not yet in the index
            continue
        text = path.read_bytes().decode("utf-8", errors="replace").lower()
        found = [phrase for phrase in FORBIDDEN if phrase in text]
        if found:
            offenders[name] = ", ".join(found)
    assert not offenders, f"cite the primary source instead: {offenders}"
