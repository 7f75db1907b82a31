"""Which random cases the property tests draw, and how many.

The suite gates every landing, so by default (profile "ci") its cases are the same on every run,
a seed derived from each test, and each test draws a budget sized to its cost: the whole suite
runs in about five minutes on two cores. A test building transformers' model of a drawn config
pays a second or more a case, so those draw fewer cases than the formula checks, which cost
milliseconds.

HYPOTHESIS_PROFILE=explore draws new cases, EXPLORE_FACTOR times as many: how a new bug is found,
after adding a field to a strategy or before a release.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore")
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)

EXPLORE_FACTOR = 4


def examples(budget: int) -> int:
    """The number of cases a test draws: its budget, EXPLORE_FACTOR times that when exploring."""
    return budget * EXPLORE_FACTOR if PROFILE == "explore" else budget


# A test of one model type's or one spec feature's random configs, each case building a model
# (transformers' or calc's reference model) in a second or more: the broad tests, over every type
# and every option, draw more, and each of their cases covers some feature too. No deadline (a
# case's time is its model's), and the health checks' warnings about slow or filtered draws are
# what such a test is.
one_feature = settings(max_examples=examples(12), deadline=None,
                       suppress_health_check=list(HealthCheck))
