"""Tests for replay_cli.advice.verdict: the decision a recommendation table holds, the sentence
saying how sure the pick is, why shaping off is kept, and the rule a verdict carries."""

import pytest

from replay_cli.advice.recommendation import recommend
from replay_cli.advice.rule import Rule
from replay_cli.advice.verdict import Decision, confidence_text, judge, keep_off_text

from advice_rows import OFF, kept, summary


def test_a_verdict_with_a_pick_lists_no_near_misses():
    rows = [OFF, {}, kept(0.5, 0.47)]  # the last fails the resolve criterion
    d = Decision.of(recommend(summary(*rows)))
    assert d.recommended is not None
    assert d.near_misses == []


CONFIDENT = {
    "label": "config 1",
    "forecast/steps": 50.0,
    "forecast/resolve_vs_off_low": 0.955,
    "forecast/resolve_vs_off_low@long": 0.96,
    "won_share": 0.6,
    "set_share": 0.8,
    "alike": ["config 2"],
}


@pytest.mark.parametrize(
    ("row", "text"),
    [
        (
            CONFIDENT,
            (
                "The low end of the interval of its resolve rate after 50 steps is 96.0% of "
                "shaping off's on long problems and 95.5% over all problems. 'config 2' trains "
                "alike here (within the interval); the rule picks 'config 1', whose successes end "
                "soonest. A new log of this size would pick it or a config that trains alike about "
                "80.0% of the time (the rule applied again in each bootstrap resample of the "
                "problems)."
            ),
        ),
        (
            {**CONFIDENT, "alike": ["config 2", "config 3"]},
            (
                "The low end of the interval of its resolve rate after 50 steps is 96.0% of "
                "shaping off's on long problems and 95.5% over all problems. 'config 2', "
                "'config 3' train alike here (within the interval); the rule picks 'config 1', "
                "whose successes end soonest. A new log of this size would pick it or a config "
                "that trains alike about 80.0% of the time (the rule applied again in each "
                "bootstrap resample of the problems)."
            ),
        ),
        (
            {**CONFIDENT, "alike": [], "set_share": None},
            (
                "The low end of the interval of its resolve rate after 50 steps is 96.0% of "
                "shaping off's on long problems and 95.5% over all problems. A new log of this "
                "size would pick it about 60.0% of the time (the rule applied again in each "
                "bootstrap resample of the problems)."
            ),
        ),
        (
            {**CONFIDENT, "forecast/resolve_vs_off_low": None, "alike": [], "set_share": None},
            (
                "The low end of the interval of its resolve rate after 50 steps is 96.0% of "
                "shaping off's on long problems. A new log of this size would pick it about "
                "60.0% of the time (the rule applied again in each bootstrap resample of the "
                "problems)."
            ),
        ),
        (
            {**CONFIDENT, "shaping_off": True, "alike": []},
            (
                "A new log of this size would pick it about 80.0% of the time (the rule applied "
                "again in each bootstrap resample of the problems)."
            ),
        ),
        (
            {**CONFIDENT, "forecast/resolve_vs_off_low@long": None, "alike": []}
            | {"won_share": None, "set_share": None},
            "No bootstrap was run (--resamples 0): no interval.",
        ),
    ],
)
def test_the_confidence_sentence(row, text):
    assert confidence_text(row) == text


def test_a_pick_every_resample_repeats_is_almost_always_not_a_certainty():
    row = {"label": "config 1", "shaping_off": True, "set_share": 1.0, "alike": []}
    assert confidence_text(row) == (
        "A new log of this size would pick it almost always (99% or more; the rule applied "
        "again in each bootstrap resample of the problems)."
    )


def test_a_verdict_judged_without_a_rule_carries_the_default_rule():
    verdict = judge(summary(OFF, {}))
    assert verdict.rule == Rule()
    assert verdict.decision.recommended is not None


def test_keeping_shaping_off_says_why_truly():
    slower = {"forecast/solve_minutes_vs_off": 0.2}  # eligible, but makes successes slower
    d = Decision.of(recommend(summary(OFF, slower)))
    assert d.keep_off
    assert d.shaped_eligible == 1
    assert keep_off_text(d, Rule()) == (
        "the shaped configs that pass the rule make successes no faster than shaping off"
    )
