"""Experiments/tools/federated_convergence.py: the stated rule (the first evaluated round r >= 50
whose 50-round running mean gains < 0.1 point by round r + 100) on curves whose answer is known by
hand, and the table cell's wording."""
import os
import sys

import numpy as np

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "Experiments", "tools"))
import federated_convergence as F  # noqa: E402

ROUNDS = np.arange(10, 1001, 10)   # evaluated every 10 rounds, 1-based


def test_a_flat_curve_converges_at_the_first_round_the_window_allows():
    assert F.converged_round(ROUNDS, np.full(ROUNDS.size, 90.0)) == 50


def test_a_curve_gaining_more_than_the_threshold_per_horizon_never_converges():
    # 0.2 point per 100 rounds everywhere: every check sees a gain of 0.2 > 0.1
    assert F.converged_round(ROUNDS, 80 + 0.002 * ROUNDS) is None


def test_a_curve_that_stops_rising_converges_where_its_smoothed_gain_falls_below_the_threshold():
    # +1 point per 10 rounds up to round 300, flat after: the running mean over (r-50, r] at r
    # and at r + 100 differ by < 0.1 only once the whole window (r-50, r] is past round 300,
    # i.e. the first r with r - 40 >= 300 -> r = 340.
    acc = np.minimum(ROUNDS, 300) / 10.0 + 60
    assert F.converged_round(ROUNDS, acc) == 340


def test_the_rule_needs_a_full_horizon_after_r():
    # rising until round 950: no round r has r + 100 <= 1000 with a flat future
    acc = np.minimum(ROUNDS, 950) / 10.0
    assert F.converged_round(ROUNDS, acc) is None


def test_a_curve_without_values_has_no_answer():
    assert F.converged_round(ROUNDS, np.full(ROUNDS.size, np.nan)) is None
    assert F.converged_round([], []) is None


def test_cells_say_how_many_runs_had_not_converged():
    assert F.cell([100, 200, 300], 1000) == "200 ± 100"
    assert F.cell([None, 200, 300], 1000) == "not by 900 in 1 of 3 (others 250)"
    assert F.cell([None, None], 500) == "not by 400 in 2 of 2"
    assert F.cell([float("nan")] * 3, 1000) == "—"


def test_the_last_horizon_gain_sees_a_curve_that_rises_again_after_a_plateau():
    # flat at 90 from round 100 to 700, then +0.5 point per 100 rounds: the rule stops at the
    # plateau, the final gain reports the late rise (mean of 960..1000 minus mean of 860..900)
    acc = np.where(ROUNDS <= 700, 90.0, 90.0 + (ROUNDS - 700) * 0.005)
    assert F.converged_round(ROUNDS, acc) == 50
    assert np.isclose(F.final_gain(ROUNDS, acc), 0.5)
    assert np.isclose(F.final_gain(ROUNDS, np.full(ROUNDS.size, 90.0)), 0.0)
    assert np.isnan(F.final_gain(ROUNDS, np.full(ROUNDS.size, np.nan)))


def test_gain_cells_name_the_largest_gain_and_the_seeds_still_rising():
    assert F.gain_cell([0.49, 0.23, 0.07]) == "+0.49 (2 of 3 ≥ 0.1)"
    assert F.gain_cell([0.05, -0.02, 0.0]) == "+0.05"
    assert F.gain_cell([float("nan")] * 3) == "—"
