"""Table primitives: the short decimal form every report prints beside exact counts, and the
text format's tables (calc.tables.simple_table draws what tabulate's "simple" format draws; the
main report's path no longer imports tabulate: bench/startup.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.tables import human, simple_table
from tests.draws import examples


@pytest.mark.parametrize(("value", "unit", "text"), [
    (6_738_415_616, "", "6.74 B"),
    (999_885_952, "", "1 B"),  # Gemma 3 1B: rounds up across the prefix, not "1e+03 M"
    (999_499_999, "", "999 M"),
    (999_500_000, "FLOP", "1 GFLOP"),
    (14_300_000_000, "FLOP", "14.3 GFLOP"),
    (-2_500_000, "", "-2.5 M"),
    (0.5, "", "0.5"),
])
def test_human_rounds_before_it_picks_the_prefix(value, unit, text):
    assert human(value, unit) == text


# Cells as calc's tables hold them: words, numbers, units, blanks, wrapped lines.
CELL = st.text(alphabet=" ab·≈×-,.09%\n", max_size=14) | st.sampled_from(["", "True", "1.0"])


@st.composite
def tables(draw) -> tuple[list[list[str]], list[str], list[str]]:
    n = draw(st.integers(1, 5))
    row = st.lists(CELL, min_size=n, max_size=n)
    aligns = st.lists(st.sampled_from(["left", "right"]), min_size=n, max_size=n)
    return draw(st.lists(row, max_size=6)), draw(row), draw(aligns)


@settings(max_examples=examples(600), deadline=None)
@given(tables())
def test_simple_table_is_tabulates_simple_format(table):
    tabulate = pytest.importorskip("tabulate").tabulate
    rows, headers, aligns = table
    expected = tabulate(rows, headers=headers, tablefmt="simple", colalign=aligns,
                        disable_numparse=True)
    assert simple_table(rows, headers, aligns) == expected


def test_a_wrapped_cell_spans_lines_and_numbers_align_right():
    drawn = simple_table([["a long\nname", "1,024"], ["b", "7"]], ["component", "count"],
                         ["left", "right"])
    assert drawn.splitlines() == ["component      count",
                                  "-----------  -------",
                                  "a long         1,024",
                                  "name",
                                  "b                  7"]
