"""Tests for replay_cli.advice.texts: the outcome at the horizon in words, reasons that quote
their numbers, and minute changes worded by their sign."""

import re

import pytest

from replay_cli.advice.recommendation import recommend
from replay_cli.advice.texts import horizon_text, kept_text, trade_text, why_eligible

from advice_rows import FAILING, summary


def test_reasons_quote_the_numbers():
    verdict = recommend(summary(FAILING["resolve_long"], FAILING["explosion"]))
    reasons = dict(verdict.select("config_id", "reasons").rows())
    assert reasons["c0"] == (
        "it ends at 24.0% resolved on long problems after 50 steps, 80.0% of shaping off's 30.0% "
        "(it gains +4.0 of shaping off's +10.0 points); low end of its interval 77.0%, needs 95%"
    )
    assert (
        reasons["c1"] == "1.0% of trained rows keep |advantage| > 3 (up to 54.6): clip to [-3, 3]"
    )


@pytest.mark.parametrize(
    ("solve", "words"),
    [
        (-0.34, "successes end 0.34 min sooner than under shaping off"),
        # λ = 0 with a floor and an asymmetric clip: eligible, and successes end later.
        (0.0045, "successes end 0.0045 min later than under shaping off"),
        (0.0, "successes end as soon as under shaping off"),
    ],
)
def test_a_trade_and_a_reason_keep_the_sign_of_the_solve_minutes(solve, words):
    row = {"lambda_time": 0.0, "floor": 0.05, "clip_low": None, "clip_high": 3.0}
    verdict = recommend(summary({**row, "forecast/solve_minutes_vs_off": solve}))
    (reason,) = verdict["reasons"].to_list()
    assert reason.startswith(words + " after 50 steps; it ends at")
    shaped = summary({"forecast/solve_minutes_vs_off": solve}).row(0, named=True)
    assert trade_text(shaped).startswith(f"'config 0': {words} after 50 steps, and it ends at")


def test_the_eligible_reasons_say_sooner_or_later_by_the_sign():
    rows = summary(
        {"forecast/solve_minutes_vs_off": -0.7, "forecast/fail_minutes_vs_off": 0.4},
        {"forecast/solve_minutes_vs_off": 0.3, "forecast/fail_minutes_vs_off": -0.6},
    )
    reasons = dict(recommend(rows).select("config_id", "reasons").rows())
    assert reasons["c0"].startswith("successes end 0.7 min sooner than under shaping off after")
    assert "; failures end 0.4 min later than under shaping off;" in reasons["c0"]
    assert reasons["c1"].startswith("successes end 0.3 min later than under shaping off after")
    assert "; failures end 0.6 min sooner than under shaping off;" in reasons["c1"]


HORIZON = {
    "forecast/steps": 50.0,
    "forecast/resolve@long": 0.507,
    "forecast/resolve_off@long": 0.520,
    "forecast/resolve_start@long": 0.379,
    "forecast/resolve_vs_off@long": 0.507 / 0.520,
}


def test_the_horizon_text_words_the_outcome_at_t():
    assert horizon_text(HORIZON) == (
        "ends at 50.7% resolved on long problems after 50 steps, 97.5% of shaping off's 52.0% "
        "(it gains +12.8 of shaping off's +14.1 points)"
    )
    overall = {
        "forecast/steps": 20.0,
        "forecast/resolve": 0.30,
        "forecast/resolve_off": 0.25,
        "forecast/resolve_start": 0.28,
        "forecast/resolve_vs_off": 1.2,
    }
    # Where shaping off loses resolve rate, it is said to move it (no share of a fall).
    assert horizon_text(overall, "") == (
        "ends at 30.0% resolved after 20 steps, 120.0% of shaping off's 25.0% (shaping off moves "
        "it −3.0 points)"
    )
    no_ratio = {**HORIZON, "forecast/resolve_vs_off@long": None}
    assert horizon_text(no_ratio).startswith(
        "ends at 50.7% resolved on long problems after 50 steps, against shaping off's 52.0% ("
    )
    no_start = {**HORIZON, "forecast/resolve_start@long": None}
    assert horizon_text(no_start).endswith("97.5% of shaping off's 52.0%")
    assert horizon_text({}) == "has no outcome on long problems (no long problems in this input)"
    assert horizon_text({}, "") == "has no forecast"


def test_an_input_without_long_problems_is_said_so_not_written_as_a_number():
    none_long = {
        "forecast/resolve_vs_off@long": None,
        "forecast/resolve_vs_off_low@long": None,
        "forecast/resolve@long": None,
        "forecast/resolve_off@long": None,
        "forecast/resolve_start@long": None,
    }
    (reason,) = recommend(summary(none_long))["reasons"].to_list()
    assert "; it has no outcome on long problems (no long problems in this input), over all" in (
        reason
    )
    assert "0.0% resolved on long problems" not in reason


def test_kept_is_only_ever_a_ratio_of_end_levels_and_progress_is_a_gain():
    # One meaning per word: "keeps" is followed by a share of shaping off's (a %), never by
    # points; the points of progress from the start are what a config "gains".
    row = {**summary({}).row(0, named=True), **HORIZON, "forecast/solve_minutes_vs_off": -0.5}
    texts = [why_eligible(row), trade_text(row), kept_text(row, "@long", 0.95), horizon_text(row)]
    for text in texts:
        for amount in re.findall(r"\bkeeps? (\S+)", text):
            assert amount.endswith("%"), text
    assert "(it gains +12.8 of shaping off's +14.1 points)" in why_eligible(row)
    assert "it keeps 100.0% of shaping off's resolve rate" in trade_text(row)
