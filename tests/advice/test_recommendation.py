"""Tests for replay_cli.advice.recommendation: the ranking on the outcome after T steps, the
verdict when nothing qualifies (keep shaping off, the best trade and its cap), the unrated
verdicts (an earlier report, no forecast, small data), configs that train alike, the budget
check, and properties over random summaries."""

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_cli import api
from replay_cli import catalogue as C
from replay_cli.advice.recommendation import recommend
from replay_cli.advice.rule import CRITERIA, RULE_READS, Rule, shaping_off
from replay_cli.advice.texts import NO_FORECAST
from replay_cli.advice.verdict import Decision, keep_off_text
from replay_cli.maths.thresholds import MINUTES_EPS
from replay_cli.rollouts.validation import rollouts_from_frame

from advice_rows import FAILING, FORECAST, GOOD, OFF, kept, summary
from factories import config, replay_frame, rollouts


def test_without_the_forecast_every_config_passing_the_static_criteria_is_unrated():
    rows = summary(OFF, {}, FAILING["resolve"], FAILING["inversion"]).drop(FORECAST)
    verdict = recommend(rows).sort("config_id")
    assert verdict["role"].to_list() == ["unrated", "unrated", "unrated", "avoid"]
    assert verdict["reasons"].to_list()[:3] == [NO_FORECAST] * 3
    # A static failure still avoids; a horizon criterion is not judged without the forecast.
    assert verdict["failed"].to_list() == [[], [], [], ["inversion"]]
    assert verdict["reasons"][3].startswith("shaping puts a resolved rollout below an unresolved")
    assert verdict["rank"].to_list() == [None] * 4
    d = Decision.of(verdict)
    assert d.recommended is None
    assert d.unrated == NO_FORECAST
    assert d.near_misses == []
    # One of the columns the rule reads is enough to be missing.
    one = summary({}).drop("forecast/solve_minutes_off")
    assert recommend(one)["reasons"].to_list() == [NO_FORECAST]


def test_fastest_successes_win_and_ties_go_to_the_smaller_lambda():
    rows = summary(
        {"forecast/solve_minutes_vs_off": -0.5, "lambda_time": 1 / 30},
        {"forecast/solve_minutes_vs_off": -0.8, "lambda_time": 1 / 30},
        {"forecast/solve_minutes_vs_off": -0.8, "lambda_time": 1 / 120},
        {"forecast/solve_minutes_vs_off": -0.1, "lambda_time": 1 / 240},
    )
    verdict = recommend(rows)
    assert verdict["config_id"].to_list() == ["c2", "c1", "c0", "c3"]
    assert verdict["role"].to_list() == ["recommended", "runner-up", "eligible", "eligible"]


def test_the_recommendation_table_carries_what_the_rule_read_under_its_summary_names():
    verdict = recommend(summary(OFF, {"forecast/solve_minutes_vs_off": -0.7}))
    for name in (*RULE_READS, "forecast/steps"):
        assert name in verdict.columns
    best = verdict.row(0, named=True)
    assert best["config_id"] == "c1"
    assert best["forecast/solve_minutes_vs_off"] == -0.7
    assert best["forecast/resolve_vs_off_low@long"] == 0.96
    assert best["forecast/steps"] == 50.0
    assert best["reasons"] == (
        "successes end 0.7 min sooner than under shaping off after 50 steps; it ends at 30.0% "
        "resolved on long problems after 50 steps, 100.0% of shaping off's 30.0% (it gains +10.0 "
        "of shaping off's +10.0 points), over all problems 100.0% of shaping off's (low end "
        "97.0%); failures end as soon as under shaping off; no introduced inversion or unbounded "
        "explosion"
    )


def test_shaping_off_wins_when_every_shaped_config_fails_and_launches_shaping_off():
    rows = summary(OFF, FAILING["uncharged_only"], FAILING["inversion"])
    verdict = recommend(rows)
    d = Decision.of(verdict)
    assert d.recommended["config_id"] == "c0"
    assert d.recommended["reasons"] == (
        "shaping off: the reference every config is measured against"
    )
    assert d.keep_off
    assert d.recommended["overrides"] == (
        "++grpo.time_efficiency.enabled=false ++grpo.advantage_clip_low=-3.0 "
        "++grpo.advantage_clip_high=3.0"
    )
    assert "lambda_time" not in d.recommended["yaml"]
    assert d.runner_up is None
    assert d.best_trade is None  # both fail a criterion besides the resolve rate


NEAR = {
    **kept(0.92, 0.88),
    **kept(0.91, 0.87, "@long"),
    "forecast/solve_minutes_vs_off": -0.34,
}


def test_keeping_shaping_off_names_the_best_trade_with_its_numbers():
    less = {**NEAR, **kept(0.90, 0.86)}  # keeps less: the lower of overall and long is 90%
    hazard = {**NEAR, **FAILING["inversion"], **kept(0.95, 0.93)}
    verdict = recommend(summary(OFF, less, NEAR, hazard))
    d = Decision.of(verdict)
    assert d.keep_off
    assert d.best_trade["config_id"] == "c2"  # keeps the most, fails only the resolve criteria
    assert d.best_trade["trade"] == (
        "'config 2': successes end 0.34 min sooner than under shaping off after 50 steps, and it "
        "ends at 27.3% resolved on long problems after 50 steps, 91.0% of shaping off's 30.0% (it "
        "gains +7.3 of shaping off's +10.0 points); over all problems it keeps 92.0% of shaping "
        "off's resolve rate"
    )
    trades = dict(verdict.select("config_id", "trade").rows())
    assert trades["c1"] is not None  # a trade too, not the best
    assert trades["c3"] is None  # an inversion is no trade
    assert keep_off_text(d, Rule()) == (
        "no shaped config keeps 95% of shaping off's resolve rate after T steps with "
        "confidence (and passes the other criteria); the best trade is below"
    )


def test_the_best_trade_keeps_at_least_one_minus_the_trade_cost():
    # The lower of the point values overall and on long problems: 90% is at the cap, 89% past it.
    at_cap = {**NEAR, **kept(0.90, 0.86)}
    past_cap = {**NEAR, **kept(0.89, 0.85)}
    d = Decision.of(recommend(summary(OFF, at_cap)))
    assert d.best_trade["config_id"] == "c1"
    verdict = recommend(summary(OFF, past_cap))
    d = Decision.of(verdict)
    assert d.keep_off
    assert d.best_trade is None
    assert verdict["trade"].to_list() == [None, None]
    assert keep_off_text(d, Rule()) == (
        "no shaped config keeps 95% of shaping off's resolve rate after T steps with "
        "confidence (and passes the other criteria)"
    )
    # The sentence states the thresholds of the rule the verdict was judged by.
    strict = Rule(min_resolve_vs_off=0.97, min_resolve_vs_off_long=0.98)
    assert "keeps 97% of shaping off's" in keep_off_text(d, strict)
    # A larger cost accepted: the same config is offered.
    looser = Decision.of(recommend(summary(OFF, past_cap), Rule(max_trade_cost=0.11)))
    assert looser.best_trade["config_id"] == "c1"
    # The long problems count: 95% overall but 85% on long problems is past the cap.
    long_cost = {**NEAR, **kept(0.95, 0.93), **kept(0.85, 0.81, "@long")}
    assert Decision.of(recommend(summary(OFF, long_cost))).best_trade is None


def test_a_trade_must_make_successes_faster_by_the_rules_least():
    no_gain = {**NEAR, "forecast/solve_minutes_vs_off": -0.2}  # exactly 1% of 20 min: none
    assert Decision.of(recommend(summary(OFF, no_gain))).best_trade is None


def test_nothing_eligible_names_the_near_misses():
    rows = summary(
        {**FAILING["uncharged_only"]},
        {**FAILING["uncharged_only"], **FAILING["inversion"]},
        {**FAILING["explosion"]},
    )
    d = Decision.of(recommend(rows))
    assert d.recommended is None
    assert [(m["config_id"], m["failed"]) for m in d.near_misses] == [
        ("c0", ["uncharged_only"]),
        ("c2", ["explosion"]),
    ]


def test_fewer_problems_than_the_rule_needs_is_not_enough_data_to_decide():
    rows = summary(OFF, {}, FAILING["inversion"])
    few = rows.with_columns(pl.lit(49.0).alias("forecast/problems_sampled"))
    verdict = recommend(few).sort("config_id")
    why = (
        "not enough data to decide: the forecast rests on 49 problems, and the rule needs at "
        'least 50 (docs/report.md, "Small data")'
    )
    assert verdict["role"].to_list() == ["unrated", "unrated", "avoid"]
    assert verdict["reasons"].to_list()[:2] == [why, why]
    assert Decision.of(verdict).unrated == why
    # At the threshold, and with a smaller one, the rule decides.
    enough = rows.with_columns(pl.lit(50.0).alias("forecast/problems_sampled"))
    assert recommend(enough)["role"].to_list() == ["recommended", "runner-up", "avoid"]
    fewer = Rule(min_problems=40)
    assert recommend(few, fewer)["role"].to_list() == ["recommended", "runner-up", "avoid"]


def test_an_interval_too_wide_to_tell_the_bar_from_parity_is_not_enough_data():
    # The narrowest shaped interval reaches 8% below its point (the wider one 12%): a config at
    # parity with shaping off could not show 95%. 200 problems * (8% / 5%)^2 = 512: about 520.
    rows = summary(OFF, kept(1.0, 0.92), kept(1.0, 0.88), FAILING["explosion"])
    verdict = recommend(rows).sort("config_id")
    assert verdict["role"].to_list() == ["unrated", "unrated", "unrated", "avoid"]
    assert verdict["reasons"][1] == (
        "not enough data to decide: after T steps the resolve rate against shaping off's is "
        "known only to −8.0% (the narrowest interval's low side, 200 problems), and telling the "
        "rule's 95% from parity needs −5.0%: about 520 problems would be needed"
    )
    # The long problems' side counts (the wider of the two per config), and thousands are
    # written with a separator: 500 * (10% / 5%)^2.
    wide_long = summary(OFF, {**kept(0.99, 0.98), **kept(1.0, 0.90, "@long")})
    wide_long = wide_long.with_columns(pl.lit(500.0).alias("forecast/problems_sampled"))
    (reason,) = recommend(wide_long).filter(pl.col("config_id") == "c1")["reasons"].to_list()
    assert "known only to −10.0%" in reason
    assert reason.endswith("about 2,000 problems would be needed")


def test_an_interval_as_wide_as_the_margin_still_decides():
    at_margin = summary(OFF, kept(1.0, 0.95))
    assert recommend(at_margin)["role"].to_list() == ["recommended", "runner-up"]
    # A lower bar leaves a wider margin: 8% is then narrow enough.
    wide = summary(OFF, kept(1.0, 0.92))
    assert recommend(wide)["role"].to_list() == ["unrated", "unrated"]
    lower = Rule(min_resolve_vs_off=0.9, min_resolve_vs_off_long=0.9)
    assert recommend(wide, lower)["role"].to_list() == ["recommended", "runner-up"]


ratio = st.one_of(st.none(), st.floats(0.0, 2.0))


random_rows = st.lists(
    st.fixed_dictionaries(
        {
            "lambda_time": st.sampled_from([0.0, 1 / 120, 1 / 60, 1 / 30]),
            "inversion/introduced_group_rate": st.sampled_from([0.0, 0.0, 0.1]),
            "adv/explosion_trained_frac": st.sampled_from([0.0, 0.0, 0.05]),
            "forecast/resolve_vs_off": ratio,
            "forecast/resolve_vs_off@long": ratio,
            "width": st.sampled_from([None, 0.0, 0.01, 0.04]),  # narrow enough to decide
            "forecast/fail_minutes_vs_off": st.floats(-3.0, 3.0),
            "forecast/solve_minutes_vs_off": st.floats(-1.0, 1.0),
            "signal/uncharged_only_rate": st.sampled_from([0.0, 0.005, 0.2]),
        }
    ),
    min_size=1,
    max_size=8,
)


def with_lows(row: dict) -> dict:
    """The row with interval low ends `width` below its points (none without a width)."""
    row = dict(row)
    width = row.pop("width")
    for scope in ("", "@long"):
        point = row[f"forecast/resolve_vs_off{scope}"]
        low = None if point is None or width is None else point - width
        row[f"forecast/resolve_vs_off_low{scope}"] = low
    return row


@settings(max_examples=200, deadline=None)
@given(rows=random_rows)
def test_the_recommended_config_passes_every_criterion_and_is_the_fastest(rows):
    frame = summary(*(with_lows(r) for r in rows))
    verdict = recommend(frame)
    assert verdict.height == frame.height
    assert verdict["config_id"].n_unique() == frame.height
    roles = verdict["role"].to_list()
    assert "unrated" not in roles
    assert roles.count("recommended") <= 1
    assert roles.count("runner-up") <= roles.count("recommended")
    by_id = {r["config_id"]: r for r in frame.iter_rows(named=True)}
    rule = Rule()
    for v in verdict.iter_rows(named=True):
        passes = all(c.passes(by_id[v["config_id"]], rule) for c in CRITERIA)
        assert passes == (v["role"] != "avoid")
    eligible = verdict.filter(pl.col("role") != "avoid")["config_id"].to_list()
    if eligible:
        off = shaping_off(frame).to_list()
        least = rule.min_faster * GOOD["forecast/solve_minutes_off"]

        def key(c: str) -> float:
            gain = by_id[c]["forecast/solve_minutes_vs_off"]
            small = abs(gain) <= MINUTES_EPS or (gain < 0 and -gain <= least)
            return 0.0 if off[int(c[1:])] or small else gain

        assert key(eligible[0]) == min(key(c) for c in eligible)
    else:
        assert "recommended" not in roles


def test_a_solve_gain_below_the_rules_least_ties_with_none():
    # c0 makes successes exactly min_faster of shaping off's 20 min faster (too little to count)
    # and ties c1's 0: the smaller lambda wins. A gain just past it ranks by size.
    least = Rule().faster_limit(GOOD)
    assert least == pytest.approx(0.2)
    tied = recommend(
        summary(
            {"lambda_time": 1 / 30, "forecast/solve_minutes_vs_off": -least},
            {"lambda_time": 1 / 60, "forecast/solve_minutes_vs_off": 0.0},
        )
    )
    assert tied["config_id"][0] == "c1"
    faster = recommend(
        summary(
            {"lambda_time": 1 / 30, "forecast/solve_minutes_vs_off": -least * (1 + 1e-9)},
            {"lambda_time": 1 / 60, "forecast/solve_minutes_vs_off": 0.0},
        )
    )
    assert faster["config_id"][0] == "c0"
    # The least follows shaping off's minutes at T: 0.15 min counts against 10 min (0.1).
    shorter = {"forecast/solve_minutes_off": 10.0}
    counted = recommend(
        summary(
            {**shorter, "lambda_time": 1 / 30, "forecast/solve_minutes_vs_off": -0.15},
            {**shorter, "lambda_time": 1 / 60, "forecast/solve_minutes_vs_off": 0.0},
        )
    )
    assert counted["config_id"][0] == "c0"
    # Where nothing counts as faster, shaping off is kept (a rounding-sized λ buys nothing).
    tiny = summary(OFF, {"lambda_time": 1e-6, "forecast/solve_minutes_vs_off": -0.002})
    assert Decision.of(recommend(tiny)).keep_off


def test_the_decision_lists_every_avoided_config_and_orders_the_rest_by_rank():
    rows = summary(
        FAILING["inversion"],
        {"forecast/solve_minutes_vs_off": -0.2},
        FAILING["explosion"],
        {"forecast/solve_minutes_vs_off": -0.6},
        {"forecast/solve_minutes_vs_off": -0.4},
        {"forecast/solve_minutes_vs_off": -0.5},
        {"forecast/solve_minutes_vs_off": -0.3},
    )
    verdict = recommend(rows)
    d = Decision.of(verdict)
    assert sorted(a["config_id"] for a in d.avoid) == ["c0", "c2"]
    ranked = verdict.filter(pl.col("rank").is_not_null())
    assert ranked["config_id"].to_list() == ["c3", "c5", "c4", "c6", "c1"]  # not summary order
    assert ranked["rank"].to_list() == [0, 1, 2, 3, 4]


NO_FLOOR = {"trained_digest": "aaaa", "lambda_time": 1 / 120}


FLOOR_NEVER_BINDS = {**NO_FLOOR, "floor": -10.0}


WEAKER = {"trained_digest": "bbbb", "lambda_time": 1 / 240, "forecast/solve_minutes_vs_off": -0.4}


def test_a_config_that_trains_like_the_recommended_one_is_not_the_runner_up():
    verdict = recommend(summary(NO_FLOOR, FLOOR_NEVER_BINDS, WEAKER))
    roles = dict(verdict.select("config_id", "role").rows())
    assert roles == {"c0": "recommended", "c1": "eligible", "c2": "runner-up"}
    assert verdict["config_id"].to_list() == ["c0", "c2", "c1"]
    assert verdict["rank"].to_list() == [0, 1, 2]
    twin = verdict.filter(pl.col("config_id") == "c1")["reasons"][0]
    assert twin == (
        "no alternative to the recommended 'config 0': it differs only in floor=-10 and trains "
        "on the same rewards and advantages"
    )
    assert Decision.of(verdict).runner_up["config_id"] == "c2"


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_among_configs_that_train_alike_the_simpler_one_is_recommended(order):
    pair = [NO_FLOOR, FLOOR_NEVER_BINDS]
    verdict = recommend(summary(*(pair[i] for i in order)))
    recommended = verdict.row(0, named=True)
    assert recommended["role"] == "recommended"
    assert recommended["config_id"] == f"c{order.index(0)}"  # the one without a floor
    assert verdict["role"].to_list() == ["recommended", "eligible"]  # no runner-up


def test_bookkeeping_columns_do_not_make_configs_differ_but_no_digest_never_matches():
    differs = {**FLOOR_NEVER_BINDS, "time_efficiency/floored_frac": 0.01}
    assert recommend(summary(NO_FLOOR, differs))["role"].to_list() == ["recommended", "eligible"]
    unknown = summary(
        {**NO_FLOOR, "trained_digest": None}, {**FLOOR_NEVER_BINDS, "trained_digest": None}
    )
    assert recommend(unknown)["role"].to_list() == ["recommended", "runner-up"]


def test_configs_that_train_alike_on_real_rows_are_twins_whatever_their_settings_say():
    # rollouts_small: agent runs under an hour, so at λ=1/120 a success keeps 1 - minutes/120 >
    # 0.5 and no floor up to 0.5 binds on it; under apply_to=all a floor of 0 returns every
    # failure to 0, where apply_to=correct leaves it: the same rewards and advantages, and so
    # the same forecast.
    results = api.replay(
        api.load(["data_samples/rollouts_small.parquet"]),
        [
            config({"lambda_time": 1 / 120, "apply_to": "correct", "floor": -10.0}),
            config({"lambda_time": 1 / 120, "apply_to": "correct"}),
            config({"lambda_time": 1 / 120, "apply_to": "correct", "floor": 0.5}),
            config({"lambda_time": 1 / 120, "apply_to": "all", "floor": 0.0}),
            config({"lambda_time": 1 / 120, "apply_to": "all", "floor": -0.1}),
        ],
    )
    floored = results.result.summary["time_efficiency/floored_frac"].to_list()
    assert floored[:3] == [0.0, 0.0, 0.0]
    assert floored[3] > 0  # bookkeeping differs, training does not
    digests = results.result.summary["trained_digest"].to_list()
    assert len(set(digests[:4])) == 1
    assert digests[4] != digests[0]
    solve = results.result.summary["forecast/solve_minutes_vs_off"].to_list()
    assert solve[:4] == [solve[0]] * 4
    # Four problems: the default rule would not decide; this one reads whatever there is.
    loose = Rule(
        min_resolve_vs_off=0.0,
        min_resolve_vs_off_long=0.0,
        max_fail_faster=10.0,
        min_problems=1,
    )
    verdict = recommend(results.result.summary, loose)
    reasons = dict(verdict.select("label", "reasons").rows())
    assert verdict["label"][0] == "λ=1/120 correct"
    for twin in ("λ=1/120 correct floor=-10", "λ=1/120 correct floor=0.5", "λ=1/120 all floor=0"):
        assert reasons[twin].startswith("no alternative to the recommended")
    assert not reasons["λ=1/120 all floor=-0.1"].startswith("no alternative")


def test_configs_whose_clipped_advantages_differ_on_a_loss_masked_row_are_no_twins():
    # Row 0 is loss-masked (mask_sample) and alone below six 1.0s and a 0.9: its unclipped
    # advantage is about -26, so clip_low=-3 moves it to -3.0; every other row stays in
    # [-3, 3]. The report's rows (and the trainer's logged advantages) then differ, so the two
    # may not be called configs that "train on the same rewards and advantages".
    frame = rollouts(
        reward=[0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.9],
        mask_sample=[True] + [False] * 7,
    )
    results = api.replay(
        rollouts_from_frame(frame),
        [config({"lambda_time": 1 / 120}), config({"lambda_time": 1 / 120}, {"clip_low": -3.0})],
    )
    rows = results.result.rows.filter(pl.col("source_row") == 0)
    assert rows["advantage"][0] < -20
    assert rows["advantage"][1] == -3.0
    others = results.result.rows.filter(pl.col("source_row") > 0)
    assert others.filter(pl.col("advantage").abs() >= 3).is_empty()
    first, second = results.result.summary["trained_digest"].to_list()
    assert first != second
    loose = Rule(
        min_resolve_vs_off=0.0,
        min_resolve_vs_off_long=0.0,
        max_fail_faster=10.0,
        min_faster=0.0,
        min_problems=1,
    )
    verdict = recommend(results.result.summary, loose)
    assert verdict["role"].to_list() == ["recommended", "runner-up"]
    assert not any(r.startswith("no alternative") for r in verdict["reasons"].to_list())


behaviours = [
    {"trained_digest": "x", "forecast/solve_minutes_vs_off": -0.5},
    {"trained_digest": "y", "forecast/solve_minutes_vs_off": -0.5},  # same gain, trains otherwise
    {"trained_digest": "z", "forecast/solve_minutes_vs_off": -0.3},
]


settings_rows = st.lists(
    st.tuples(
        st.sampled_from(range(len(behaviours))),
        st.fixed_dictionaries(
            {
                "lambda_time": st.sampled_from([1 / 120, 1 / 60]),
                "floor": st.sampled_from([None, -10.0]),
                "apply_to": st.sampled_from(["all", "correct"]),
                "signal/uncharged_only_rate": st.sampled_from([0.0, 0.0, 0.2]),
            }
        ),
    ),
    min_size=1,
    max_size=7,
)


@settings(max_examples=200, deadline=None)
@given(rows=settings_rows)
def test_the_runner_up_is_the_first_eligible_config_that_trains_otherwise(rows):
    frame = summary(*({**behaviours[b], **params} for b, params in rows))
    verdict = recommend(frame)
    digest = dict(frame.select("config_id", "trained_digest").rows())
    ranked = verdict.filter(pl.col("rank").is_not_null())
    assert ranked["rank"].to_list() == list(range(ranked.height))
    if ranked.is_empty():
        return
    best = ranked["config_id"][0]
    twins = [c for c in ranked["config_id"][1:] if digest[c] == digest[best]]
    others = [c for c in ranked["config_id"][1:] if digest[c] != digest[best]]
    roles = dict(verdict.select("config_id", "role").rows())
    reasons = dict(verdict.select("config_id", "reasons").rows())
    assert all(roles[c] == "eligible" for c in twins)
    assert all(reasons[c].startswith("no alternative to the recommended") for c in twins)
    assert [c for c in others if roles[c] == "runner-up"] == others[:1]


def budgets(row: dict, half: dict | None = None, twice: dict | None = None) -> dict:
    """The row with the rule's numbers at half and at twice the step budget: its own at the
    default budget, with `half` and `twice` changes."""
    full = {**GOOD, **row}
    out = dict(row)
    for suffix, changes in (("_half", half or {}), ("_twice", twice or {})):
        at = {**full, **changes}
        out |= {C.at_check(name, suffix.lstrip("_")): at[name] for name in RULE_READS}
    return out


SLIPS = kept(0.93, 0.90, "@long")
"""At another budget: the resolve rate on long problems no longer clears the bar."""


@pytest.mark.parametrize(
    ("a", "b", "check"),
    [
        ({}, {}, "the verdict holds at half and at twice the step budget"),
        (
            {"half": SLIPS},
            {},
            (
                "at half the step budget the rule would pick 'config 2'; the rule still picks it "
                "at twice the step budget"
            ),
        ),
        (
            {"twice": SLIPS},
            {"twice": SLIPS},
            (
                "at twice the step budget the rule would pick 'config 0'; the rule still picks it "
                "at half the step budget"
            ),
        ),
        (
            {"half": SLIPS, "twice": {"forecast/solve_minutes_vs_off": -0.3}},
            {},
            (
                "at half the step budget the rule would pick 'config 2'; at twice the step budget "
                "the rule would pick 'config 2'"
            ),
        ),
    ],
)
def test_the_budget_check_names_what_the_rule_picks_at_half_and_twice(a, b, check):
    off = budgets(OFF)
    faster = {"forecast/solve_minutes_vs_off": -0.8}  # config 1 wins at the default budget
    verdict = recommend(summary(off, budgets(faster, **a), budgets({}, **b)))
    best = verdict.filter(pl.col("role") == "recommended")
    assert best["config_id"][0] == "c1"
    assert best["budget_check"][0] == check
    assert verdict.filter(pl.col("role") != "recommended")["budget_check"].to_list() == [None] * 2


def test_the_budget_check_says_where_no_config_passes_and_needs_both_budgets():
    rows = summary(budgets({}, half=SLIPS), budgets({"forecast/solve_minutes_vs_off": -0.3}))
    rows = rows.with_columns(pl.lit(0.90).alias("forecast/resolve_vs_off_low_half@long"))
    (check,) = recommend(rows).filter(pl.col("role") == "recommended")["budget_check"]
    assert check == (
        "at half the step budget no config passes the rule; the rule still picks it at twice the "
        "step budget"
    )
    # Without the forecasts at both other budgets there is nothing to check.
    half_only = rows.drop([C.at_check(name, "twice") for name in RULE_READS])
    assert recommend(half_only)["budget_check"].to_list() == [None, None]


def test_the_budget_check_says_where_the_data_cannot_decide_at_another_budget():
    # At twice the budget every shaped interval reaches 12% below its point: not enough data to
    # decide there, which is no config failing the rule.
    wide = kept(0.97, 0.85, "@long")
    rows = summary(
        budgets(OFF),
        budgets({"forecast/solve_minutes_vs_off": -0.8}, twice=wide),
        budgets({}, twice=wide),
    )
    (check,) = recommend(rows).filter(pl.col("role") == "recommended")["budget_check"]
    assert check == (
        "at twice the step budget there is not enough data to decide; the rule still picks it at "
        "half the step budget"
    )


def test_a_validation_only_input_has_nothing_to_judge_and_says_so():
    """Not 'written before the recommendation rule' (that would send the user to replay again):
    a validation-only input has no training group, so nothing trains."""
    frame = rollouts(reward=[1.0, 0.0], split=["validation", "validation"])
    verdict = replay_frame(frame, {}).verdict.recommendation
    assert verdict["role"].to_list() == ["unrated"]
    assert verdict["reasons"][0] == (
        "nothing to judge: the input has no training group (every row is validation)"
    )


def test_the_check_names_the_horizon_where_the_pick_moves_and_both_where_it_holds():
    def checked(row: dict, twice_steps: dict | None = None) -> dict:
        out, full = budgets(row), {**GOOD, **row}
        for check, changes in (("half_steps", {}), ("twice_steps", twice_steps or {})):
            at = {**full, **changes}
            out |= {C.at_check(name, check): at[name] for name in RULE_READS}
        return out | {C.FORECAST_STEPS: 50.0}

    faster = {"forecast/solve_minutes_vs_off": -0.8}
    rows = summary(checked(OFF), checked(faster), checked({}))
    (check,) = recommend(rows).filter(pl.col("role") == "recommended")["budget_check"]
    assert check == (
        "the verdict holds at half and at twice the step budget and after 25 and 100 steps"
    )
    rows = summary(checked(OFF), checked(faster, twice_steps=SLIPS), checked({}))
    (check,) = recommend(rows).filter(pl.col("role") == "recommended")["budget_check"]
    # A failed check never hides the checks that held.
    assert check == (
        "after 100 steps the rule would pick 'config 2'; the rule still picks it at half and at "
        "twice the step budget and after 25 steps"
    )
