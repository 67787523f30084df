"""Tests for replay_cli.advice.recommendation: each criterion of the rule on summary rows built to
fail it alone, the ranking, the verdict when nothing qualifies, overrides that launch exactly the
recommended config, and properties over random summaries."""

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_cli import api
from replay_cli.advice.recommendation import (
    CRITERIA,
    NEEDED,
    SAME_NUMBERS_NEEDED,
    Rule,
    decision,
    launch_overrides,
    recommend,
    shaping_off,
)
from replay_cli.maths.thresholds import PUSH_EPS
from replay_cli.parameters import parse_overrides, to_config

from factories import config

GOOD = {
    "enabled": True,
    "lambda_time": 1 / 60,
    "apply_to": "correct",
    "floor": None,
    "lambda_call_bonus": 0.0,
    "call_bonus_ref": None,
    "clip_low": -3.0,
    "clip_high": 3.0,
    "semantics": "nemo-rl",
    "estimator": "grpo",
    "inversion/introduced_group_rate": 0.0,
    "adv/explosion_trained_frac": 0.0,
    "adv/abs_max": 3.0,
    "push/resolve": 0.2,
    "push/resolve_off": 0.2,
    "push/resolve@long": 0.2,
    "push/resolve_off@long": 0.2,
    "push/resolve_vs_off": 1.0,
    "push/resolve_vs_off@long": 1.0,
    "push/minutes_fail": 0.0,
    "push/minutes_pass": -0.5,
    "signal/uncharged_only_rate": 0.0,
}


def summary(*rows: dict) -> pl.DataFrame:
    full = [
        {"config_id": f"c{i}", "label": f"config {i}", **GOOD, **row} for i, row in enumerate(rows)
    ]
    return pl.DataFrame(full, infer_schema_length=None)


FAILING = {
    "launchable": {"semantics": "internal"},
    "inversion": {"inversion/introduced_group_rate": 0.02},
    "explosion": {"adv/explosion_trained_frac": 0.01, "adv/abs_max": 54.6},
    "resolve": {"push/resolve_vs_off": 0.94},
    "resolve_long": {"push/resolve_vs_off@long": 0.65},
    "fail_faster": {"push/minutes_fail": -0.06},
    "uncharged_only": {"signal/uncharged_only_rate": 0.02},
}


def test_a_summary_without_the_rules_columns_is_unrated():
    old = summary({}).drop("push/minutes_pass", "push/resolve_off")
    verdict = recommend(old)
    assert verdict["role"].to_list() == ["unrated"]
    assert "no push/resolve_off, push/minutes_pass" in verdict["reasons"][0]
    assert decision(verdict)["recommended"] is None
    assert decision(verdict)["near_misses"] == []


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


def test_reasons_quote_the_numbers():
    verdict = recommend(
        summary(FAILING["resolve_long"], FAILING["explosion"], FAILING["fail_faster"])
    )
    reasons = dict(verdict.select("config_id", "reasons").rows())
    assert "65% of shaping off's (needs 95%)" in reasons["c0"]
    assert "1.0% of trained rows keep |advantage| > 3 (up to 54.6)" in reasons["c1"]
    assert "fail-time push -0.06, limit -0.05" in reasons["c2"]


def test_the_threshold_is_inclusive_and_configurable():
    at_limit = summary({"push/minutes_fail": -0.05}, {"push/resolve_vs_off": 0.95})
    assert recommend(at_limit)["role"].to_list().count("avoid") == 0
    strict = Rule(max_fail_faster=0.01, min_resolve_vs_off=0.96)
    assert recommend(at_limit, strict)["role"].to_list() == ["avoid", "avoid"]


def test_strongest_solve_push_wins_and_ties_go_to_the_smaller_lambda():
    rows = summary(
        {"push/minutes_pass": -0.5, "lambda_time": 1 / 30},
        {"push/minutes_pass": -0.8, "lambda_time": 1 / 30},
        {"push/minutes_pass": -0.8, "lambda_time": 1 / 120},
        {"push/minutes_pass": -0.1, "lambda_time": 1 / 240},
    )
    verdict = recommend(rows)
    assert verdict["config_id"].to_list() == ["c2", "c1", "c0", "c3"]
    assert verdict["role"].to_list() == ["recommended", "runner-up", "eligible", "eligible"]


def test_shaping_off_wins_when_every_shaped_config_fails():
    rows = summary(
        {"enabled": False, "push/minutes_pass": 0.0, "push/resolve_vs_off": 1.0},
        FAILING["fail_faster"],
        FAILING["inversion"],
    )
    d = decision(recommend(rows))
    assert d["recommended"]["config_id"] == "c0"
    assert d["recommended"]["reasons"].startswith("shaping off")
    assert d["recommended"]["overrides"] == (
        "++grpo.time_efficiency.enabled=false ++grpo.advantage_clip_low=-3.0 "
        "++grpo.advantage_clip_high=3.0"
    )
    assert d["runner_up"] is None


def test_resolve_push_where_shaping_off_has_none_may_not_fall_below_it():
    # Shaping off pushes against resolving here (a penalised success): no ratio to keep.
    base = {"push/resolve_vs_off": None, "push/resolve_off": -0.1}
    kept = summary({**base, "push/resolve": -0.05}, {**base, "push/resolve": -0.2})
    verdict = recommend(kept).sort("config_id")
    assert verdict["failed"].to_list() == [[], ["resolve"]]
    assert "resolve push is -0.2, below shaping off's -0.1" in verdict["reasons"][1]


def test_keeping_shaping_off_says_why_truly():
    from replay_cli import findings

    off = {"enabled": False, "push/minutes_pass": 0.0}
    slower = {"push/minutes_pass": 0.2}  # eligible, but teaches solving slower
    text = findings(summary(off, slower), pl.LazyFrame())["text"][0]
    assert text == (
        "Keep shaping off ('config 0'): the shaped configs that pass the recommendation rule "
        "teach solving no faster."
    )
    text = findings(summary(off, FAILING["fail_faster"]), pl.LazyFrame())["text"][0]
    assert text.endswith("no shaped config of this sweep passes the recommendation rule.")


def test_nothing_eligible_names_the_near_misses():
    rows = summary(
        {**FAILING["fail_faster"]},
        {**FAILING["fail_faster"], **FAILING["inversion"]},
        {**FAILING["explosion"]},
    )
    d = decision(recommend(rows))
    assert d["recommended"] is None
    assert [(m["config_id"], m["failed"]) for m in d["near_misses"]] == [
        ("c0", ["fail_faster"]),
        ("c2", ["explosion"]),
    ]


@pytest.mark.parametrize(
    ("shaping", "advantage"),
    [
        ({"lambda_time": 1 / 60, "apply_to": "correct"}, {"clip_low": -3.0, "clip_high": 3.0}),
        (
            {
                "lambda_time": 0.0125,
                "floor": 0.05,
                "lambda_call_bonus": 0.1,
                "call_bonus_ref": 40.0,
            },
            {},
        ),
        ({"enabled": False}, {"clip_high": 2.5}),
        ({"mask_flagged": False}, {"baseline": "mean", "normalize": False}),
    ],
)
def test_launch_overrides_rebuild_the_same_config(synth_path, shaping, advantage):
    cfg = config(shaping, advantage)
    row = api.replay(api.load([synth_path]), [cfg]).summary.row(0, named=True)
    values, ignored = parse_overrides(launch_overrides(row).split())
    assert ignored == []
    assert to_config(values).config_id == cfg.config_id


ratio = st.one_of(st.none(), st.floats(0.0, 2.0))
rows = st.lists(
    st.fixed_dictionaries(
        {
            "lambda_time": st.sampled_from([0.0, 1 / 120, 1 / 60, 1 / 30]),
            "inversion/introduced_group_rate": st.sampled_from([0.0, 0.0, 0.1]),
            "adv/explosion_trained_frac": st.sampled_from([0.0, 0.0, 0.05]),
            "push/resolve_vs_off": ratio,
            "push/resolve_vs_off@long": ratio,
            "push/minutes_fail": st.floats(-1.0, 1.0),
            "push/minutes_pass": st.floats(-1.0, 1.0),
            "signal/uncharged_only_rate": st.sampled_from([0.0, 0.005, 0.2]),
        }
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(rows=rows)
def test_the_recommended_config_passes_every_criterion_and_is_the_strongest(rows):
    frame = summary(*rows)
    verdict = recommend(frame)
    assert verdict.height == frame.height
    assert verdict["config_id"].n_unique() == frame.height
    roles = verdict["role"].to_list()
    assert roles.count("recommended") <= 1
    assert roles.count("runner-up") <= roles.count("recommended")
    by_id = {r["config_id"]: r for r in frame.iter_rows(named=True)}
    rule = Rule()
    for v in verdict.iter_rows(named=True):
        passes = all(c.passes(by_id[v["config_id"]], rule) for c in CRITERIA)
        assert passes == (v["role"] != "avoid")
    eligible = verdict.filter(pl.col("role") != "avoid")["config_id"].to_list()
    if eligible:
        best = by_id[eligible[0]]["push/minutes_pass"]
        assert all(best <= by_id[c]["push/minutes_pass"] + 1e-9 for c in eligible)
    else:
        assert "recommended" not in roles


def test_lambda_zero_without_bonus_or_floor_counts_as_shaping_off():
    rows = summary(
        {"lambda_time": 0.0},
        {"lambda_time": 0.0, "floor": 0.05},
        {"lambda_time": 0.0, "lambda_call_bonus": 0.1, "call_bonus_ref": 40.0},
        {"lambda_time": 1.0},
        {"enabled": False},
    )
    assert shaping_off(rows).to_list() == [True, False, False, False, True]


def test_a_solve_push_within_push_eps_ties_with_none():
    # c0's push is exactly PUSH_EPS (rounding, counts as 0) and ties c1's 0: the smaller lambda
    # wins. A push just past it ranks by strength.
    tied = recommend(
        summary(
            {"lambda_time": 1 / 30, "push/minutes_pass": -PUSH_EPS},
            {"lambda_time": 1 / 60, "push/minutes_pass": 0.0},
        )
    )
    assert tied["config_id"][0] == "c1"
    stronger = recommend(
        summary(
            {"lambda_time": 1 / 30, "push/minutes_pass": -2 * PUSH_EPS},
            {"lambda_time": 1 / 60, "push/minutes_pass": 0.0},
        )
    )
    assert stronger["config_id"][0] == "c0"


def test_the_decision_lists_every_avoided_config_and_orders_the_rest_by_rank():
    rows = summary(
        FAILING["inversion"],
        {"push/minutes_pass": -0.2},
        FAILING["explosion"],
        {"push/minutes_pass": -0.6},
        {"push/minutes_pass": -0.4},
        {"push/minutes_pass": -0.5},
        {"push/minutes_pass": -0.3},
    )
    verdict = recommend(rows)
    d = decision(verdict)
    assert sorted(a["config_id"] for a in d["avoid"]) == ["c0", "c2"]
    ranked = verdict.filter(pl.col("rank").is_not_null())
    assert ranked["config_id"].to_list() == ["c3", "c5", "c4", "c6", "c1"]  # not summary order
    assert ranked["rank"].to_list() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(("missing", "ellipsis"), [(3, False), (4, True)])
def test_an_unrated_report_names_up_to_three_missing_columns(missing, ellipsis):
    rows = summary({}).drop(NEEDED[:missing])
    (reason,) = recommend(rows)["reasons"].to_list()
    assert ("…" in reason) == ellipsis


# What the shaped rewards and advantages look like: with these columns present, two configs whose
# every metric is equal are the same to a reader.
NUMBERS = dict.fromkeys(SAME_NUMBERS_NEEDED, 0.25)
NO_FLOOR = {**NUMBERS, "lambda_time": 1 / 120}
FLOOR_NEVER_BINDS = {**NO_FLOOR, "floor": -10.0}
WEAKER = {**NUMBERS, "lambda_time": 1 / 240, "push/minutes_pass": -0.4, "adv/std": 0.3}


def test_a_config_with_the_recommended_configs_numbers_is_not_the_runner_up():
    verdict = recommend(summary(NO_FLOOR, FLOOR_NEVER_BINDS, WEAKER))
    roles = dict(verdict.select("config_id", "role").rows())
    assert roles == {"c0": "recommended", "c1": "eligible", "c2": "runner-up"}
    assert verdict["config_id"].to_list() == ["c0", "c2", "c1"]
    assert verdict["rank"].to_list() == [0, 1, 2]
    twin = verdict.filter(pl.col("config_id") == "c1")["reasons"][0]
    assert twin == (
        "no alternative to the recommended 'config 0': it differs only in floor=-10 and every "
        "summary metric of this replay is the same"
    )
    assert decision(verdict)["runner_up"]["config_id"] == "c2"


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_among_configs_with_the_same_numbers_the_simpler_one_is_recommended(order):
    pair = [NO_FLOOR, FLOOR_NEVER_BINDS]
    verdict = recommend(summary(*(pair[i] for i in order)))
    recommended = verdict.row(0, named=True)
    assert recommended["role"] == "recommended"
    assert recommended["config_id"] == f"c{order.index(0)}"  # the one without a floor
    assert verdict["role"].to_list() == ["recommended", "eligible"]  # no runner-up


def test_a_config_with_shaping_offs_numbers_is_not_the_runner_up_to_it():
    off = {**NUMBERS, "enabled": False, "push/minutes_pass": 0.0}
    same = {**off, "enabled": True, "lambda_time": 0.0, "floor": -1.0}  # a floor alone, unbound
    slower = {**NUMBERS, "push/minutes_pass": 0.1, "adv/std": 0.5}
    verdict = recommend(summary(same, slower, off))
    assert verdict["config_id"].to_list() == ["c2", "c1", "c0"]
    assert verdict["role"].to_list() == ["recommended", "runner-up", "eligible"]
    assert "differs only in enabled=yes lambda_time=0 floor=-1" in verdict["reasons"][2]


def test_one_differing_metric_or_a_missing_column_is_not_the_same_numbers():
    differs = {**FLOOR_NEVER_BINDS, "time_efficiency/floored_frac": 0.01}
    assert recommend(summary(NO_FLOOR, differs))["role"].to_list() == ["recommended", "runner-up"]
    sparse = summary(NO_FLOOR, FLOOR_NEVER_BINDS).drop(SAME_NUMBERS_NEEDED[-1])
    assert recommend(sparse)["role"].to_list() == ["recommended", "runner-up"]


def test_nan_metrics_count_as_equal_and_nulls_as_equal():
    nan = {"adv/explosion_frac": float("nan"), "push/resolve_vs_off@long": None}
    verdict = recommend(summary({**NO_FLOOR, **nan}, {**FLOOR_NEVER_BINDS, **nan}))
    assert verdict["role"].to_list() == ["recommended", "eligible"]


def test_a_null_resolve_ratio_is_written_as_both_pushes_not_as_0_percent():
    no_long = {"push/resolve_vs_off@long": None, "push/resolve@long": 0.0}
    no_long["push/resolve_off@long"] = 0.0
    (reason,) = recommend(summary(no_long))["reasons"].to_list()
    assert (
        "resolve push 100% of shaping off's (pushes 0 against shaping off's 0 on long problems);"
        in (reason)
    )
    assert "0% on long problems" not in reason


def test_a_floor_that_never_binds_gives_a_replays_twin_and_one_that_binds_does_not():
    # rollouts_small: agent runs under an hour, so under apply_to=correct a success keeps
    # 1 - minutes/120 > 0.5 and neither floor binds; under apply_to=all a failure goes below 0.
    results = api.replay(
        api.load(["data_samples/rollouts_small.parquet"]),
        [
            config({"lambda_time": 1 / 120, "apply_to": "correct", "floor": -10.0}),
            config({"lambda_time": 1 / 120, "apply_to": "correct"}),
            config({"lambda_time": 1 / 120, "apply_to": "correct", "floor": 0.5}),
            config({"lambda_time": 1 / 120, "apply_to": "all", "floor": 0.0}),
        ],
    )
    assert results.summary["time_efficiency/floored_frac"].to_list()[:3] == [0.0, 0.0, 0.0]
    assert results.summary["time_efficiency/floored_frac"][3] > 0
    loose = Rule(min_resolve_vs_off=0.0, min_resolve_vs_off_long=0.0, max_fail_faster=10.0)
    verdict = recommend(results.summary, loose)
    reasons = dict(verdict.select("label", "reasons").rows())
    assert verdict["label"][0] == "λ=1/120 correct"
    assert reasons["λ=1/120 correct floor=-10"].startswith("no alternative to the recommended")
    assert reasons["λ=1/120 correct floor=0.5"].startswith("no alternative to the recommended")
    assert not reasons["λ=1/120 all floor=0"].startswith("no alternative")


behaviours = [
    {**NUMBERS, "push/minutes_pass": -0.5},
    {**NUMBERS, "push/minutes_pass": -0.5, "adv/std": 0.7},  # same push, other numbers
    {**NUMBERS, "push/minutes_pass": -0.2, "total_reward/mean": 0.6},
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
def test_the_runner_up_is_the_first_eligible_config_with_other_numbers(rows):
    frame = summary(*({**behaviours[b], **params} for b, params in rows))
    verdict = recommend(frame)
    numbers = {r["config_id"]: {k: v for k, v in r.items() if "/" in k} for r in frame.to_dicts()}
    ranked = verdict.filter(pl.col("rank").is_not_null())
    assert ranked["rank"].to_list() == list(range(ranked.height))
    if ranked.is_empty():
        return
    best = ranked["config_id"][0]
    twins = [c for c in ranked["config_id"][1:] if numbers[c] == numbers[best]]
    others = [c for c in ranked["config_id"][1:] if numbers[c] != numbers[best]]
    roles = dict(verdict.select("config_id", "role").rows())
    reasons = dict(verdict.select("config_id", "reasons").rows())
    assert all(roles[c] == "eligible" for c in twins)
    assert all(reasons[c].startswith("no alternative to the recommended") for c in twins)
    assert [c for c in others if roles[c] == "runner-up"] == others[:1]
    # Among configs with the recommended's push and lambda, none is simpler than it.
    row = frame.filter(pl.col("config_id") == best).row(0, named=True)
    for c in twins:
        twin = frame.filter(pl.col("config_id") == c).row(0, named=True)
        if twin["lambda_time"] == row["lambda_time"]:
            assert (twin["floor"], twin["apply_to"]) != (None, "all") or (
                row["floor"],
                row["apply_to"],
            ) == (None, "all")


def test_an_input_without_long_problems_is_said_so_not_written_as_a_push():
    none_long = {"push/resolve_vs_off@long": None, "push/resolve@long": None}
    none_long["push/resolve_off@long"] = None
    (reason,) = recommend(summary(none_long))["reasons"].to_list()
    assert "resolve push 100% of shaping off's (no long problems in this input);" in reason


def test_a_resolve_push_exactly_push_eps_below_shaping_offs_is_kept():
    # Where shaping off has no push to keep, falling below it by rounding (PUSH_EPS) is no loss.
    base = {"push/resolve_vs_off": None, "push/resolve_off": -0.1}
    at_eps = summary({**base, "push/resolve": -0.1 - PUSH_EPS})
    assert recommend(at_eps)["failed"].to_list() == [[]]
    past = summary({**base, "push/resolve": -0.1 - 2 * PUSH_EPS})
    assert recommend(past)["failed"].to_list() == [["resolve"]]
