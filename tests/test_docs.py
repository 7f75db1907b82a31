"""docs/ and README blocks are what their commands print now; a stale block fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from calc.commands.docs import blocks, body, output, refresh
from calc.errors import CalcError

ROOT = Path(__file__).resolve().parents[1]
MAIN = "python -m calc llama2-7b --tokens 2e12 --gpu a100"


def test_committed_docs_are_fresh():
    """Regenerate with `python -m calc docs` when this fails."""
    seen, stale = refresh(ROOT, check=True)
    assert seen >= 10  # presets, gpus, conventions (5), compare (2), the 1e24 sweep
    assert [f"{b.path}: {b.command}" for b in stale] == []


def test_a_stale_block_is_caught_and_rewritten(tmp_path, cli):
    """The README mechanism: the main command's output between the markers."""
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n<!-- output: {MAIN} -->\n```text\nold numbers\n```\n"
                      f"<!-- /output -->\noutro\n")
    seen, stale = refresh(tmp_path, check=True)
    assert (seen, len(stale)) == (1, 1) and "old numbers" in readme.read_text()
    refresh(tmp_path)
    text = readme.read_text()
    expected = cli(*MAIN.split()[3:]).out
    assert text == (f"intro\n<!-- output: {MAIN} -->\n```text\n{expected}```\n"
                    f"<!-- /output -->\noutro\n")
    assert refresh(tmp_path, check=True) == (1, [])


def test_one_line_marker_and_cli(tmp_path, cli):
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text("Quoted in prose: `<!-- output: nonsense -->` is not a block.\n"
                    "<!-- output: python -m calc gpus --format markdown --><!-- /output -->\n")
    check = cli("docs", "--check", "--root", str(tmp_path))
    assert check.code == 1 and "docs/page.md" in check.out and "1 stale" in check.out
    assert cli("docs", "--root", str(tmp_path)).code == 0
    assert "| a100" in page.read_text()
    assert cli("docs", "--check", "--root", str(tmp_path)).code == 0


def test_unclosed_marker_is_an_error(tmp_path):
    text = "<!-- output: python -m calc gpus -->\nno end\n"
    with pytest.raises(CalcError, match="has no <!-- /output -->"):
        blocks(Path("x.md"), text)


@pytest.mark.parametrize("command, message", [
    ("ls -l", "cannot run"),
    ("python -m calc no-such-model", "docs: `python -m calc no-such-model`: unknown model"),
])
def test_bad_commands(command, message):
    with pytest.raises(CalcError, match=message):
        output(command, ROOT)


def test_body_fences_by_format():
    assert body("python -m calc gpt2 --format json", "{}\n") == "\n```json\n{}\n```\n"
    assert body("python -m calc gpt2 --format markdown", "| a |\n") == "\n| a |\n"
