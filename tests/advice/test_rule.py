"""Tests for replay_cli.advice.rule: each criterion on summary rows built to fail it alone, the
low end of the interval against the bar, the resolve rate without a ratio, what counts as shaping
off, the one `kept` on a row and on resamples, and a criterion planted in `CRITERIA` that the rule,
the confidence and scarcity all apply."""

import numpy as np
import polars as pl
import pytest

from replay_cli.advice import rule
from replay_cli.advice.recommendation import recommend
from replay_cli.advice.rule import CRITERIA, Rule, shaping_off

from advice_rows import FAILING, OFF, kept, resamples, summary


def test_the_one_step_measure_is_not_read_by_the_rule():
    step = {
        "step/resolve_vs_off": 0.1,
        "step/resolve_vs_off_low": 0.05,
        "step/resolve_vs_off_low@long": 0.05,
        "step/fail_minutes_vs_off": -9.0,
        "step/solve_minutes_vs_off": 5.0,
    }
    verdict = recommend(summary(OFF, step))
    assert verdict["config_id"].to_list() == ["c1", "c0"]
    assert verdict["role"].to_list() == ["recommended", "runner-up"]


def test_every_criterion_is_tested_here():
    assert sorted(FAILING) == sorted(c.name for c in CRITERIA)


@pytest.mark.parametrize("name", sorted(FAILING))
def test_each_criterion_alone_makes_a_config_avoided(name):
    verdict = recommend(summary({}, FAILING[name]))
    bad = verdict.filter(pl.col("config_id") == "c1").row(0, named=True)
    assert bad["role"] == "avoid"
    assert bad["failed"] == [name]
    good = verdict.filter(pl.col("config_id") == "c0").row(0, named=True)
    assert good["role"] == "recommended"


def test_the_low_end_decides_not_the_point_value():
    # The point value keeps 97% of shaping off's resolve rate, its interval reaches down to 94%.
    noisy = summary(kept(0.97, 0.94))
    assert recommend(noisy)["failed"].to_list() == [["resolve"]]
    noisy_long = summary(kept(0.97, 0.94, "@long"))
    assert recommend(noisy_long)["failed"].to_list() == [["resolve_long"]]
    # Without a bootstrap (no low end), the point value is all there is.
    bare = summary(kept(0.97, None)).drop("forecast/resolve_vs_off_low")
    assert recommend(bare)["failed"].to_list() == [[]]
    assert recommend(summary(kept(0.94, None)))["failed"].to_list() == [["resolve"]]


def test_the_thresholds_are_inclusive_and_configurable():
    at_limit = summary(kept(0.98, 0.95), kept(0.99, 0.95, "@long"))
    assert recommend(at_limit)["failed"].to_list() == [[], []]
    strict = Rule(min_resolve_vs_off=0.96, min_resolve_vs_off_long=0.955)
    verdict = recommend(at_limit, strict).sort("config_id")
    assert verdict["failed"].to_list() == [["resolve"], ["resolve_long"]]


def test_failures_that_end_sooner_are_a_warning_not_a_criterion():
    """What giving up costs is in the resolve rate after T steps, which the rule reads; failures
    that end sooner without costing it save compute. The fail_faster finding keeps its limit (a
    share of shaping off's failure minutes at T)."""
    sooner = {"forecast/fail_minutes_vs_off": -9.0}
    assert recommend(summary(sooner))["failed"].to_list() == [[]]
    assert Rule().fail_limit({"forecast/fail_minutes_off": 40.0}) == pytest.approx(2.0)
    assert Rule(max_fail_faster=0.1).fail_limit({"forecast/fail_minutes_off": 40.0}) == (
        pytest.approx(4.0)
    )


NO_RATIO = {"forecast/resolve_vs_off": None, "forecast/resolve_vs_off_low": None}


def test_a_resolve_rate_without_a_ratio_may_not_fall_below_shaping_offs():
    # Shaping off resolves nothing after T steps: no ratio, and nothing is below 0.
    none = {**NO_RATIO, "forecast/resolve_off": 0.0, "forecast/resolve_start": 0.0}
    assert recommend(summary({**none, "forecast/resolve": 0.0}))["failed"].to_list() == [[]]
    # A report without the ratio: the rates themselves are compared.
    base = {**NO_RATIO, "forecast/resolve_off": 0.40, "forecast/resolve_start": 0.30}
    verdict = recommend(
        summary({**base, "forecast/resolve": 0.41}, {**base, "forecast/resolve": 0.35})
    ).sort("config_id")
    assert verdict["failed"].to_list() == [[], ["resolve"]]
    assert verdict["reasons"][1] == (
        "it ends at 35.0% resolved after 50 steps, against shaping off's 40.0% (it gains +5.0 of "
        "shaping off's +10.0 points), below shaping off's"
    )


def test_a_resolve_rate_a_rounding_below_shaping_offs_is_kept():
    base = {**NO_RATIO, "forecast/resolve_off": 0.1}
    at_eps = summary({**base, "forecast/resolve": 0.1 - 1e-12})
    assert recommend(at_eps)["failed"].to_list() == [[]]
    past = summary({**base, "forecast/resolve": 0.1 - 3e-12})
    assert recommend(past)["failed"].to_list() == [["resolve"]]


def test_lambda_zero_without_bonus_or_floor_counts_as_shaping_off():
    rows = summary(
        {"lambda_time": 0.0},
        {"lambda_time": 0.0, "floor": 0.05},
        {"lambda_time": 0.0, "lambda_call_bonus": 0.1, "call_bonus_ref": 40.0},
        {"lambda_time": 1.0},
        {"enabled": False},
    )
    assert shaping_off(rows).to_list() == [True, False, False, False, True]


def test_kept_reads_the_low_end_on_a_row_and_each_resamples_own_low_end():
    row = kept(0.97, 0.94)  # the interval reaches 3% below the point
    assert rule.kept(row, "") == 0.94
    assert rule.kept(row, "", "point") == 0.97
    assert rule.width(row, "") == pytest.approx(0.03)
    # A resample sees its own point and the same width: its low end is 3% below its value.
    assert rule.kept(row, "", resampled=np.array([1.0, 0.97])) == pytest.approx([0.97, 0.94])
    assert rule.meets(row, "", 0.95, np.array([1.0, 0.97])).tolist() == [True, False]
    # Without an interval the point value is what is kept, in every resample as drawn.
    bare = kept(0.97, None)
    assert rule.kept(bare, "") == 0.97
    assert rule.width(bare, "") is None
    assert rule.kept(bare, "", resampled=np.array([0.96])).tolist() == [0.96]
    # Without a ratio nothing is kept as a share: the rates themselves are compared.
    none = {"forecast/resolve": 0.3, "forecast/resolve_off": 0.4}
    assert rule.kept(none, "") is None
    assert rule.meets(none, "", 0.95) is False
    assert rule.meets({**none, "forecast/resolve": 0.4}, "", 0.95) is True


STRICT = rule.Criterion.on_resolve("resolve_long_strict", "@long", lambda _: 0.98)
"""A throwaway criterion: on long problems, the low end at 98% of shaping off's."""


def test_a_criterion_planted_in_the_list_is_applied_by_the_rule_the_confidence_and_scarcity(
    monkeypatch,
):
    # c2 makes successes faster, but on long problems its low end is 96.5%: above 95%, below 98%.
    slower = {**kept(1.0, 0.99), **kept(1.0, 0.99, "@long"), "forecast/solve_minutes_vs_off": -0.3}
    faster = {**kept(1.0, 0.99), **kept(0.975, 0.965, "@long")}
    frame = summary(OFF, slower, faster)
    table = resamples(
        {
            "c0": [(1.0, 1.0, 0.0, 0.0)] * 4,
            "c1": [(1.0, 1.0, -0.3, 0.0)] * 4,
            # Spread by 2 and read 1% below, 0.985 clears 98% and 0.975 does not.
            "c2": [(1.0, 0.985, -0.5, 0.0)] * 2 + [(1.0, 0.975, -0.5, 0.0)] * 2,
        }
    )
    wide = summary(OFF, {**kept(1.0, 0.97), **kept(1.0, 0.97, "@long")})
    before = recommend(frame, resamples=table)
    assert before["config_id"][0] == "c2"
    assert dict(before.select("config_id", "won_share").rows())["c2"] == 1.0
    assert recommend(wide)["role"].to_list() == ["recommended", "runner-up"]

    monkeypatch.setattr(rule, "CRITERIA", [*rule.CRITERIA, STRICT])
    after = recommend(frame, resamples=table).sort("config_id")
    # The rule: c2 fails the planted criterion alone, with its sentence and bar.
    assert after["role"].to_list() == ["runner-up", "recommended", "avoid"]
    assert after["failed"].to_list() == [[], [], ["resolve_long_strict"]]
    assert after["reasons"][2].endswith("low end of its interval 96.5%, needs 98%")
    # The confidence: c2 wins only the resamples whose own low end clears 98%.
    assert dict(after.select("config_id", "won_share").rows()) == {"c0": 0.0, "c1": 0.5, "c2": 0.5}
    # Scarcity: an interval 3% wide can no longer tell 98% from parity.
    (reason,) = recommend(wide).filter(pl.col("config_id") == "c1")["reasons"].to_list()
    assert reason.startswith("not enough data to decide: after T steps the resolve rate")
    assert "telling the rule's 98% from parity needs −2.0%" in reason
