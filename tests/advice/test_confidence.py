"""Tests for replay_cli.advice.confidence: how often each config wins over bootstrap resamples
(each with its own interval ends), which configs train alike, and the stated share against how
often a pick repeats."""

import numpy as np
import polars as pl
import pytest

from replay_cli.advice.recommendation import recommend
from replay_cli.advice.rule import Rule
from replay_cli.advice.verdict import confidence_text

from advice_rows import FAILING, OFF, kept, resamples, summary


def won_shares(frame: pl.DataFrame, table: pl.DataFrame, rule: Rule | None = None) -> dict:
    return dict(recommend(frame, rule, resamples=table).select("config_id", "won_share").rows())


def test_the_won_share_re_applies_the_rule_to_each_resample_at_its_own_interval_ends():
    frame = summary(
        OFF, {"forecast/solve_minutes_vs_off": -0.3}, {"forecast/solve_minutes_vs_off": -0.25}
    )
    table = resamples(
        {
            "c0": [(1.0, 1.0, 0.0, 0.0)] * 4,
            # c1's interval reaches 3% below its point (1.0 - 0.97) overall: a resample at 0.97
            # has its low end at 0.94, below the bar, though 0.97 itself is above it.
            "c1": [(1.0, 1.0, -0.3, 0.0), (0.97, 1.0, -0.3, 0.0)] * 2,
            # c2 passes in every resample but the last, where it keeps 90% overall.
            "c2": [(1.0, 1.0, -0.25, 0.0)] * 3 + [(0.9, 1.0, -0.25, 0.0)],
        }
    )
    assert won_shares(frame, table) == {"c0": 0.25, "c1": 0.5, "c2": 0.25}
    # On long problems the interval reaches 4% below: 0.98 is then 0.94 at its low end.
    long = table.with_columns(
        pl.when((pl.col("config_id") == "c1") & (pl.col("resample") == 0))
        .then(0.98)
        .otherwise(pl.col("forecast/resolve_vs_off@long"))
        .alias("forecast/resolve_vs_off@long")
    )
    assert won_shares(frame, long) == {"c0": 0.25, "c1": 0.25, "c2": 0.5}
    # A config avoided for a criterion the bootstrap does not move never wins.
    hazard = summary(OFF, {**FAILING["inversion"], "forecast/solve_minutes_vs_off": -0.3})
    table = resamples({"c0": [(1.0, 1.0, 0.0, 0.0)] * 2, "c1": [(1.0, 1.0, -0.3, 0.0)] * 2})
    assert won_shares(hazard, table) == {"c0": 1.0, "c1": 0.0}


def test_a_config_above_the_bar_at_its_point_but_not_at_its_low_end_rarely_wins():
    """A new log of the same size sees its own point and about the same width: a config whose
    point clears 95% but whose low end does not is picked where a resample's low end clears it,
    not wherever the resample's point does."""
    values = np.random.default_rng(7).normal(0.97, 0.0153, 400)
    low = float(np.quantile(values, 0.025))
    assert 0.93 < low < 0.95  # the point passes, the low end fails
    frame = summary(OFF, {**kept(0.97, low), "forecast/solve_minutes_vs_off": -0.5})
    table = resamples(
        {
            "c0": [(1.0, 1.0, 0.0, 0.0)] * len(values),
            "c1": [(float(v), 1.0, -0.5, 0.0) for v in values],
        }
    )
    verdict = recommend(frame, resamples=table)
    assert verdict["role"].to_list() == ["recommended", "avoid"]
    won = dict(verdict.select("config_id", "won_share").rows())
    # A new log: its deviation from this one's point spread by the rule's factor (2), read at
    # its low end.
    spread = Rule().spread
    assert spread == 2.0
    shifted = float(np.mean(0.97 + spread * (values - 0.97) - (0.97 - low) >= 0.95))
    assert won["c1"] == pytest.approx(shifted)
    assert won["c0"] == pytest.approx(1 - shifted)
    assert won["c1"] < 0.5  # read at each resample's point it would win most of them:
    assert np.mean(values >= 0.95) > 0.85


def test_a_rounding_sized_gain_wins_no_resample_from_shaping_off():
    """A resample's solve-minute gain within MINUTES_EPS is no gain: the tie goes to shaping off,
    as in the point ranking; so is one within the rule's least (1% of shaping off's minutes)."""
    frame = summary(OFF, {"forecast/solve_minutes_vs_off": -0.3})
    for gain in (-1e-12, -0.2):
        table = resamples({"c0": [(1.0, 1.0, 0.0, 0.0)] * 3, "c1": [(1.0, 1.0, gain, 0.0)] * 3})
        assert won_shares(frame, table) == {"c0": 1.0, "c1": 0.0}


NOISE = [0.05, -0.05] * 10
"""Twenty resamples' noise, symmetric around 0."""


def test_configs_whose_difference_holds_0_train_alike_and_share_the_pick():
    frame = summary(
        OFF,
        {"forecast/solve_minutes_vs_off": -0.6},
        {"forecast/solve_minutes_vs_off": -0.59},
        {"forecast/solve_minutes_vs_off": -0.3},
    )
    table = resamples(
        {
            "c0": [(1.0, 1.0, 0.0, 0.0)] * 20,
            # c1 and c2 differ by noise around 0: each is fastest in half the resamples.
            "c1": [(1.0, 1.0, -0.6 + e, 0.0) for e in NOISE],
            "c2": [(1.0, 1.0, -0.6 - e, 0.0) for e in NOISE],
            # c3 is 0.3 min slower than c1 in every resample (give or take the noise).
            "c3": [(1.0, 1.0, -0.3, 0.0)] * 20,
        }
    )
    verdict = recommend(frame, resamples=table)
    assert verdict["config_id"].to_list() == ["c1", "c2", "c3", "c0"]
    assert dict(verdict.select("config_id", "won_share").rows()) == {
        "c0": 0.0,
        "c1": 0.5,
        "c2": 0.5,
        "c3": 0.0,
    }
    best = verdict.row(0, named=True)
    assert best["alike"] == ["config 2"]
    assert best["set_share"] == 1.0
    assert verdict["set_share"].to_list()[1:] == [None] * 3
    assert verdict["alike"].to_list()[1:] == [[]] * 3
    assert confidence_text(best, verdict.to_dicts()) == (
        "The low end of the interval of its resolve rate after 50 steps is 96.0% of shaping "
        "off's on long problems and 97.0% over all problems. 'config 2' trains alike here "
        "(within the interval); the rule picks 'config 1', whose successes end soonest. A new "
        "log of this size would pick it or a config that trains alike almost always (99% or "
        "more; an estimate: the rule applied again in each bootstrap resample of the problems, "
        "widened by the rule's spread)."
    )


def test_configs_clearly_apart_do_not_share_the_pick():
    frame = summary(
        OFF, {"forecast/solve_minutes_vs_off": -0.6}, {"forecast/solve_minutes_vs_off": -0.3}
    )
    # c1 loses long resolves in five resamples of twenty: c2, clearly slower, wins them.
    longs = [0.9] * 5 + [1.0] * 15
    table = resamples(
        {
            "c0": [(1.0, 1.0, 0.0, 0.0)] * 20,
            "c1": [(1.0, x, -0.6 + e, 0.0) for e, x in zip(NOISE, longs, strict=True)],
            "c2": [(1.0, 1.0, -0.3 + e, 0.0) for e in NOISE],
        }
    )
    verdict = recommend(frame, resamples=table)
    best = verdict.row(0, named=True)
    assert best["config_id"] == "c1"
    assert best["won_share"] == 0.75
    assert best["alike"] == []
    assert best["set_share"] == 0.75
    assert confidence_text(best).endswith(
        "A new log of this size would pick it about 75.0% of the time (an estimate: the rule "
        "applied again in each bootstrap resample of the problems, widened by the rule's spread)."
    )
    # A difference that holds 0 on solve minutes but not on long problems is no likeness.
    apart_long = resamples(
        {
            "c0": [(1.0, 1.0, 0.0, 0.0)] * 20,
            "c1": [(1.0, 1.0, -0.6 + e, 0.0) for e in NOISE],
            "c2": [(1.0, 0.99, -0.6 - e, 0.0) for e in NOISE],
        }
    )
    twins = summary(
        OFF, {"forecast/solve_minutes_vs_off": -0.6}, {"forecast/solve_minutes_vs_off": -0.59}
    )
    assert recommend(twins, resamples=apart_long)["alike"][0].to_list() == []


def test_the_alike_level_is_configurable():
    # The difference c2 - c1 is -0.1 in 3 resamples of 20 and +0.1 in the rest: a 90% interval
    # (5% to 95%) holds 0, a 50% interval (25% to 75%) does not.
    shift = [-0.1] * 3 + [0.1] * 17
    frame = summary(
        OFF, {"forecast/solve_minutes_vs_off": -0.6}, {"forecast/solve_minutes_vs_off": -0.5}
    )
    table = resamples(
        {
            "c0": [(1.0, 1.0, 0.0, 0.0)] * 20,
            "c1": [(1.0, 1.0, -0.6, 0.0)] * 20,
            "c2": [(1.0, 1.0, -0.6 + d, 0.0) for d in shift],
        }
    )
    assert recommend(frame, resamples=table)["alike"][0].to_list() == ["config 2"]
    narrow = Rule(alike_level=0.5)
    assert recommend(frame, narrow, resamples=table)["alike"][0].to_list() == []


@pytest.mark.parametrize("distance", [0.0, 1.0, 2.0, 3.0])
def test_the_stated_share_is_within_15_points_of_how_often_the_pick_repeats(distance):
    """The two-way choice the confidence is calibrated for: a faster config is picked where its
    low end clears the bar. Its true low end sits `distance` standard errors above the bar, so a
    log picks it with probability Φ(distance). Over 150 independent logs (each its point and a
    normal bootstrap around it), the mean stated share of each log's pick is within 15 points
    of how often the other logs make the same pick away from the bar (17 at it). Under the
    flat-prior spread √2 it is 21 points over at the bar and 16 at half a standard error."""
    rng = np.random.default_rng(11)
    se, z, bar = 0.01, 1.6449, 0.95
    truth = bar + (z + distance) * se
    picks, stated = [], []
    for _ in range(150):
        point = truth + se * rng.standard_normal()
        values = point + se * rng.standard_normal(400)
        low = float(np.quantile(values, 0.05))
        frame = summary(OFF, {**kept(point, low), "forecast/solve_minutes_vs_off": -0.5})
        table = resamples(
            {
                "c0": [(1.0, 1.0, 0.0, 0.0)] * len(values),
                "c1": [(float(v), 1.0, -0.5, 0.0) for v in values],
            }
        )
        verdict = recommend(frame, resamples=table)
        (pick,) = verdict.filter(pl.col("role") == "recommended").rows(named=True)
        picks.append(pick["config_id"])
        stated.append(pick.get("set_share") or pick["won_share"])
    picks = np.array(picks)
    repeat = np.mean([(np.sum(picks == p) - 1) / (len(picks) - 1) for p in picks])
    # At the bar itself no share that favours the pick can be calibrated: the pick repeats half
    # the time, and the spread that bounds the error elsewhere states about 65% there (the
    # two-way normal model's minimum worst case is 14.5 points; 16 measured on these logs).
    tolerance = 0.17 if distance == 0 else 0.15
    assert abs(np.mean(stated) - repeat) <= tolerance, (np.mean(stated), repeat)


def test_alike_reads_the_bootstraps_own_interval_of_the_difference_not_the_widened_spread():
    # c2 - c1 is +0.1 min give or take 0.075 in every resample: its 90% interval is about
    # [+0.03, +0.17] and holds no 0, so c2 does not train alike. The spread the share is read
    # from doubles each deviation ([-0.05, +0.25]: it holds 0), which must not decide likeness.
    spread = np.linspace(-0.075, 0.075, 20)
    frame = summary(
        OFF, {"forecast/solve_minutes_vs_off": -0.6}, {"forecast/solve_minutes_vs_off": -0.5}
    )
    table = resamples(
        {
            "c0": [(1.0, 1.0, 0.0, 0.0)] * 20,
            "c1": [(1.0, 1.0, -0.6, 0.0)] * 20,
            "c2": [(1.0, 1.0, -0.5 + e, 0.0) for e in spread],
        }
    )
    best = recommend(frame, resamples=table).row(0, named=True)
    assert best["config_id"] == "c1"
    assert best["alike"] == []
    # The widened spread makes c2 fastest where 2e < -0.1: 4 resamples of 20. The set is the
    # pick alone, so its share is the pick's own.
    assert best["won_share"] == 0.8
    assert best["set_share"] == 0.8
