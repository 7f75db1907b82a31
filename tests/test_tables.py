"""Table primitives: the short decimal form every report prints beside exact counts."""

from __future__ import annotations

import pytest

from calc.tables import human


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
