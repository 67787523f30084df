"""Tests for replay_cli.advice.verdict: the decision a recommendation table holds, the sentence
saying how sure the pick is, why shaping off is kept, and the rule a verdict carries."""

import pytest

from replay_cli.advice.recommendation import recommend
from replay_cli.advice.rule import Rule
from replay_cli.advice.verdict import Decision, confidence_text, judge, keep_off_text

from advice_rows import OFF, kept, resamples, summary


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
    "forecast/solve_minutes_vs_off": -0.6,
}
OTHERS = [
    {"label": "config 2", "forecast/solve_minutes_vs_off": -0.4},
    {"label": "config 3", "forecast/solve_minutes_vs_off": -0.3},
]


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
                "80.0% of the time (an estimate: "
                "the rule applied again in each bootstrap resample of the problems, widened by "
                "the rule's spread)."
            ),
        ),
        (
            {**CONFIDENT, "alike": ["config 2", "config 3"]},
            (
                "The low end of the interval of its resolve rate after 50 steps is 96.0% of "
                "shaping off's on long problems and 95.5% over all problems. 'config 2', "
                "'config 3' train alike here (within the interval); the rule picks 'config 1', "
                "whose successes end soonest. A new log of this size would pick it or a config "
                "that trains alike about 80.0% of the time (an estimate: "
                "the rule applied again in each bootstrap resample of the problems, widened by "
                "the rule's spread)."
            ),
        ),
        (
            {**CONFIDENT, "alike": [], "set_share": None},
            (
                "The low end of the interval of its resolve rate after 50 steps is 96.0% of "
                "shaping off's on long problems and 95.5% over all problems. A new log of this "
                "size would pick it about 60.0% of the time (an estimate: "
                "the rule applied again in each bootstrap resample of the problems, widened by "
                "the rule's spread)."
            ),
        ),
        (
            {**CONFIDENT, "forecast/resolve_vs_off_low": None, "alike": [], "set_share": None},
            (
                "The low end of the interval of its resolve rate after 50 steps is 96.0% of "
                "shaping off's on long problems. A new log of this size would pick it about "
                "60.0% of the time (an estimate: "
                "the rule applied again in each bootstrap resample of the problems, widened by "
                "the rule's spread)."
            ),
        ),
        (
            {**CONFIDENT, "shaping_off": True, "alike": []},
            (
                "A new log of this size would pick it about 80.0% of the time (an estimate: "
                "the rule applied again in each bootstrap resample of the problems, widened by "
                "the rule's spread)."
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
    assert confidence_text(row, OTHERS) == text


@pytest.mark.parametrize(
    ("theirs", "soonest"),
    [(-0.4, True), (-0.6, False), (-0.6001, False), (-0.7, False), (None, False)],
)
def test_soonest_is_claimed_only_beyond_rounding(theirs, soonest):
    # Equal minutes, a rounding-sized difference, a faster twin or one whose minutes are unknown:
    # no "soonest"; the tie-break that decided is named instead.
    others = [{"label": "config 2", "forecast/solve_minutes_vs_off": theirs}]
    text = confidence_text(CONFIDENT, others)
    assert ("whose successes end soonest" in text) is soonest
    assert ("by its tie-break (the smaller λ, then shaping off" in text) is not soonest
    assert "whose successes end soonest" not in confidence_text(CONFIDENT)  # no rows to read


def test_among_several_shaping_off_configs_none_ends_soonest():
    # Four λ=0 configs (shaping off, e.g. with and without the clip) train alike at 0 minutes:
    # the pick is the tie-break's, never "soonest".
    frame = summary(OFF, OFF, OFF, OFF)
    table = resamples({f"c{i}": [(1.0, 1.0, 0.0, 0.0)] * 20 for i in range(4)})
    verdict = recommend(frame, resamples=table)
    best = verdict.row(0, named=True)
    assert best["role"] == "recommended"
    assert best["shaping_off"]
    assert best["alike"] == ["config 1", "config 2", "config 3"]
    text = confidence_text(best, verdict.to_dicts())
    assert "soonest" not in text
    assert (
        "'config 1', 'config 2', 'config 3' train alike here (within the interval); the rule "
        "picks 'config 0' by its tie-break (the smaller λ, then shaping off, then the fewest "
        "settings away from their defaults): its successes end no sooner than each of theirs "
        "beyond rounding."
    ) in text


def test_a_pick_every_resample_repeats_is_almost_always_not_a_certainty():
    row = {"label": "config 1", "shaping_off": True, "set_share": 1.0, "alike": []}
    assert confidence_text(row) == (
        "A new log of this size would pick it almost always (99% or more; an estimate: the rule "
        "applied again in each bootstrap resample of the problems, widened by the rule's "
        "spread)."
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
