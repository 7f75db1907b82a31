"""docs/ and README blocks are what their commands print now; a stale block fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from calc.commands.docs import blocks, body, files, layout, output, refresh, refresh_file
from calc.errors import CalcError

ROOT = Path(__file__).resolve().parents[1]
MAIN = "python -m calc llama2-7b --tokens 2e12 --gpu a100"


@pytest.mark.parametrize("path", files(ROOT), ids=lambda path: str(path.relative_to(ROOT)))
def test_committed_docs_are_fresh(path):
    """Regenerate with `python -m calc docs` when this fails (one file per test: the pages'
    commands spread over the test processes)."""
    _, stale = refresh_file(ROOT, path, check=True)
    assert [f"{b.path}: {b.command}" for b in stale] == []


def test_the_docs_hold_their_blocks():
    seen = sum(len(blocks(path.relative_to(ROOT), path.read_text(encoding="utf-8")))
               for path in files(ROOT))
    assert seen >= 10  # presets, gpus, conventions (5), compare (2), the 1e24 sweep


def test_the_docs_index_lists_every_page():
    """docs/README.md links every page in docs/ (and no page that is not there)."""
    docs = ROOT / "docs"
    linked = set(re.findall(r"\]\(([\w.-]+\.md)\)", (docs / "README.md").read_text()))
    pages = {page.name for page in docs.glob("*.md")} - {"README.md"}
    assert sorted(pages - linked) == [], "add these pages to docs/README.md's table"
    assert sorted(linked - pages) == [], "docs/README.md links pages docs/ does not hold"


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


def test_the_layout_block_is_read_from_the_packages_on_disk(tmp_path):
    """A new package appears in the README's Layout block with its docstring's first sentence,
    a long one wrapped under the name; one without a docstring is refused."""
    package = tmp_path / "calc"
    (package / "plan").mkdir(parents=True)
    (package / "__init__.py").write_text('"""The package. More."""\n')
    (package / "__main__.py").write_text("from calc.cli import main\n")
    (package / "cli.py").write_text(
        '"""`python -m calc`: e.g. `estimate`, e.g. Llama (Touvron et al. 2023). Then."""\n')
    (package / "plan" / "__init__.py").write_text(
        '"""' + "One run's options, " * 5 + 'declared once.\n\nDetails."""\n')
    assert layout(package).splitlines() == [
        "calc/        The package.",
        "calc/cli.py  `python -m calc`: e.g. `estimate`, e.g. Llama (Touvron et al. 2023).",
        "calc/plan/   One run's options, One run's options, One run's options, One run's options,"
        " One run's",  # 98 characters: under the README's 100
        "             options, declared once.",
    ]
    (package / "views").mkdir()
    (package / "views" / "__init__.py").write_text("import calc\n")
    with pytest.raises(CalcError, match=r"views/__init__\.py has no docstring"):
        layout(package)
