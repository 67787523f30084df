"""Tests for replay_cli.advice.recommendation: each criterion of the rule on summary rows built to
fail it alone, the ranking on the step measure, the verdict when nothing qualifies (keep shaping
off, the best trade), overrides and YAML that launch exactly the recommended config, how often
each config wins over bootstrap resamples, and properties over random summaries."""

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_cli import api
from replay_cli.advice.recommendation import (
    CRITERIA,
    NEEDED,
    Rule,
    launch_overrides,
    launch_yaml,
    recommend,
    shaping_off,
)
from replay_cli.advice.verdict import Decision, keep_off_text
from replay_cli.maths.thresholds import MINUTES_EPS
from replay_cli.parameters import parse_overrides, read_run_config, to_config

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
    "trained_digest": None,
    "inversion/introduced_group_rate": 0.0,
    "adv/explosion_trained_frac": 0.0,
    "adv/abs_max": 3.0,
    "step/resolve": 0.02,
    "step/resolve_off": 0.02,
    "step/resolve@long": 0.02,
    "step/resolve_off@long": 0.02,
    "step/resolve_vs_off": 1.0,
    "step/resolve_vs_off_low": 0.97,
    "step/resolve_vs_off@long": 1.0,
    "step/resolve_vs_off_low@long": 0.96,
    "step/fail_minutes_vs_off": 0.0,
    "step/solve_minutes_vs_off": -0.5,
    "step/kl_budget": 0.001,
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
    "resolve": {"step/resolve_vs_off_low": 0.94},
    "resolve_long": {"step/resolve_vs_off@long": 0.8, "step/resolve_vs_off_low@long": 0.65},
    "fail_faster": {"step/fail_minutes_vs_off": -0.03},
    "uncharged_only": {"signal/uncharged_only_rate": 0.02},
    "forecast_long": {
        "forecast/steps": 50.0,
        "forecast/resolve_vs_off@long": 0.96,
        "forecast/resolve_vs_off_low@long": 0.93,
    },
}


def test_a_summary_without_the_rules_columns_is_unrated():
    old = summary({}).drop("step/solve_minutes_vs_off", "step/fail_minutes_vs_off")
    verdict = recommend(old)
    assert verdict["role"].to_list() == ["unrated"]
    assert "no step/solve_minutes_vs_off, step/fail_minutes_vs_off" in verdict["reasons"][0]
    d = Decision.of(verdict)
    assert d.recommended is None
    assert d.near_misses == []
    assert d.unrated is not None


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
    assert "80% of shaping off's (low end 65%), needs 95%" in reasons["c0"]
    assert "1.0% of trained rows keep |advantage| > 3 (up to 54.6)" in reasons["c1"]
    assert (
        "they end 0.03 min per step sooner than under shaping off (limit 0.02 min)"
        in (reasons["c2"])
    )


def test_the_low_end_decides_not_the_point_value():
    # The point value keeps 99% of shaping off's progress, its interval reaches down to 90%.
    noisy = summary({"step/resolve_vs_off": 0.99, "step/resolve_vs_off_low": 0.90})
    assert recommend(noisy)["failed"].to_list() == [["resolve"]]
    # Without a bootstrap (no low end), the point value is all there is.
    bare = summary({"step/resolve_vs_off": 0.99}).drop("step/resolve_vs_off_low")
    assert recommend(bare)["failed"].to_list() == [[]]


def test_the_threshold_is_inclusive_and_configurable():
    at_limit = summary({"step/fail_minutes_vs_off": -0.02}, {"step/resolve_vs_off_low": 0.95})
    assert recommend(at_limit)["role"].to_list().count("avoid") == 0
    strict = Rule(max_fail_faster=0.01, min_resolve_vs_off=0.96)
    assert recommend(at_limit, strict)["role"].to_list() == ["avoid", "avoid"]


def test_the_fail_limit_follows_the_step_budget():
    # Four times the budget: steps twice as large, so the limit doubles.
    bigger = summary({"step/fail_minutes_vs_off": -0.035, "step/kl_budget": 0.004})
    assert recommend(bigger)["failed"].to_list() == [[]]
    assert Rule().fail_limit({"step/kl_budget": 0.004}) == pytest.approx(0.04)


def test_fastest_successes_win_and_ties_go_to_the_smaller_lambda():
    rows = summary(
        {"step/solve_minutes_vs_off": -0.5, "lambda_time": 1 / 30},
        {"step/solve_minutes_vs_off": -0.8, "lambda_time": 1 / 30},
        {"step/solve_minutes_vs_off": -0.8, "lambda_time": 1 / 120},
        {"step/solve_minutes_vs_off": -0.1, "lambda_time": 1 / 240},
    )
    verdict = recommend(rows)
    assert verdict["config_id"].to_list() == ["c2", "c1", "c0", "c3"]
    assert verdict["role"].to_list() == ["recommended", "runner-up", "eligible", "eligible"]


OFF = {"enabled": False, "step/solve_minutes_vs_off": 0.0, "step/resolve_vs_off_low": 1.0}


def test_shaping_off_wins_when_every_shaped_config_fails_and_launches_shaping_off():
    rows = summary(OFF, FAILING["fail_faster"], FAILING["inversion"])
    verdict = recommend(rows)
    d = Decision.of(verdict)
    assert d.recommended["config_id"] == "c0"
    assert d.keep_off
    assert d.recommended["overrides"] == (
        "++grpo.time_efficiency.enabled=false ++grpo.advantage_clip_low=-3.0 "
        "++grpo.advantage_clip_high=3.0"
    )
    assert "lambda_time" not in d.recommended["yaml"]
    assert d.runner_up is None


def test_lambda_zero_as_shaping_off_launches_enabled_false_not_lambda_zero():
    rows = summary({"lambda_time": 0.0, "step/solve_minutes_vs_off": 0.0})
    (row,) = recommend(rows).to_dicts()
    assert row["shaping_off"]
    assert row["overrides"].startswith("++grpo.time_efficiency.enabled=false")
    assert "lambda_time" not in row["overrides"]


def test_keeping_shaping_off_names_the_best_trade_with_its_numbers():
    near = {
        "step/resolve_vs_off": 0.9,
        "step/resolve_vs_off_low": 0.85,
        "step/resolve_vs_off@long": 0.88,
        "step/resolve_vs_off_low@long": 0.8,
        "step/solve_minutes_vs_off": -0.34,
    }
    far = {**near, "step/resolve_vs_off": 0.7, "step/resolve_vs_off_low": 0.6}
    hazard = {**near, **FAILING["inversion"], "step/resolve_vs_off": 0.95}
    verdict = recommend(summary(OFF, far, near, hazard))
    d = Decision.of(verdict)
    assert d.keep_off
    assert d.best_trade["config_id"] == "c2"  # keeps the most, fails only the resolve criteria
    assert d.best_trade["trade"] == (
        "'config 2' buys −0.34 min per step on successes for −10.0% of resolve progress per "
        "step (−12.0% on long problems)"
    )
    assert keep_off_text(d) == (
        "no shaped config keeps 95% of shaping off's resolve progress with confidence; the best "
        "trade is below"
    )


def test_keeping_shaping_off_says_why_truly():
    slower = {"step/solve_minutes_vs_off": 0.2}  # eligible, but makes successes slower
    d = Decision.of(recommend(summary(OFF, slower)))
    assert d.keep_off
    assert d.shaped_eligible == 1
    assert keep_off_text(d) == (
        "the shaped configs that pass the rule make successes no faster than shaping off"
    )


def test_resolve_progress_where_shaping_off_makes_none_may_not_fall_below_it():
    base = {"step/resolve_vs_off": None, "step/resolve_vs_off_low": None}
    base |= {"step/resolve_off": -0.001}
    kept = summary({**base, "step/resolve": -0.0005}, {**base, "step/resolve": -0.002})
    verdict = recommend(kept).sort("config_id")
    assert verdict["failed"].to_list() == [[], ["resolve"]]
    assert "resolve progress is −0.2 points per step, below shaping off's −0.1 points" in (
        verdict["reasons"][1].replace("-", "−")
    )


def test_nothing_eligible_names_the_near_misses():
    rows = summary(
        {**FAILING["fail_faster"]},
        {**FAILING["fail_faster"], **FAILING["inversion"]},
        {**FAILING["explosion"]},
    )
    d = Decision.of(recommend(rows))
    assert d.recommended is None
    assert [(m["config_id"], m["failed"]) for m in d.near_misses] == [
        ("c0", ["fail_faster"]),
        ("c2", ["explosion"]),
    ]


CASES = [
    ({"lambda_time": 1 / 60, "apply_to": "correct"}, {"clip_low": -3.0, "clip_high": 3.0}),
    ({"lambda_time": 0.0125, "floor": 0.05, "lambda_call_bonus": 0.1, "call_bonus_ref": 40.0}, {}),
    ({"enabled": False}, {"clip_high": 2.5}),
    ({"mask_flagged": False}, {"baseline": "mean", "normalize": False}),
]


@pytest.mark.parametrize(("shaping", "advantage"), CASES)
def test_launch_overrides_and_yaml_rebuild_the_same_config(tmp_path, shaping, advantage):
    cfg = config(shaping, advantage)
    row = api.replay(api.load(["data_samples/rollouts_small.parquet"]), [cfg]).summary
    row = row.row(0, named=True)
    off = not cfg.shaping.enabled
    values, ignored = parse_overrides(launch_overrides(row, off).split())
    assert ignored == []
    assert to_config(values).config_id == cfg.config_id
    path = tmp_path / "run.yaml"
    path.write_text(launch_yaml(row, off))
    assert to_config(read_run_config(path)).config_id == cfg.config_id


@pytest.mark.parametrize("estimator", ["verl-grpo", "trl-grpo", "dr-grpo"])
def test_a_peer_estimator_is_never_launched_as_a_nemo_rl_estimator_name(estimator):
    # NeMo-RL has no estimator by a peer's name: the replay emulates the peer, the launch line
    # is NeMo-RL's, and `++grpo.adv_estimator.name=verl-grpo` would fail at the trainer.
    row = {**GOOD, "estimator": estimator, "config_id": "c0", "label": "peer"}
    overrides = launch_overrides(row)
    assert "adv_estimator.name" not in overrides
    assert "++grpo.time_efficiency.lambda_time=" in overrides
    assert "name:" not in launch_yaml(row)


ratio = st.one_of(st.none(), st.floats(0.0, 2.0))
random_rows = st.lists(
    st.fixed_dictionaries(
        {
            "lambda_time": st.sampled_from([0.0, 1 / 120, 1 / 60, 1 / 30]),
            "inversion/introduced_group_rate": st.sampled_from([0.0, 0.0, 0.1]),
            "adv/explosion_trained_frac": st.sampled_from([0.0, 0.0, 0.05]),
            "step/resolve_vs_off": ratio,
            "step/resolve_vs_off_low": ratio,
            "step/resolve_vs_off@long": ratio,
            "step/fail_minutes_vs_off": st.floats(-0.1, 0.1),
            "step/solve_minutes_vs_off": st.floats(-1.0, 1.0),
            "signal/uncharged_only_rate": st.sampled_from([0.0, 0.005, 0.2]),
        }
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(rows=random_rows)
def test_the_recommended_config_passes_every_criterion_and_is_the_fastest(rows):
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
        off = shaping_off(frame).to_list()

        def key(c: str) -> float:
            gain = by_id[c]["step/solve_minutes_vs_off"]
            small = abs(gain) <= MINUTES_EPS or (gain < 0 and -gain <= rule.min_faster)
            return 0.0 if off[int(c[1:])] or small else gain

        assert key(eligible[0]) == min(key(c) for c in eligible)
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


def test_a_solve_gain_below_the_rules_least_ties_with_none():
    # c0 makes successes exactly min_faster faster (too little to count) and ties c1's 0: the
    # smaller lambda wins. A gain just past it ranks by size.
    least = Rule().min_faster
    tied = recommend(
        summary(
            {"lambda_time": 1 / 30, "step/solve_minutes_vs_off": -least},
            {"lambda_time": 1 / 60, "step/solve_minutes_vs_off": 0.0},
        )
    )
    assert tied["config_id"][0] == "c1"
    faster = recommend(
        summary(
            {"lambda_time": 1 / 30, "step/solve_minutes_vs_off": -least * (1 + 1e-9)},
            {"lambda_time": 1 / 60, "step/solve_minutes_vs_off": 0.0},
        )
    )
    assert faster["config_id"][0] == "c0"
    # Where nothing counts as faster, shaping off is kept (a rounding-sized λ buys nothing).
    tiny = summary(OFF, {"lambda_time": 1e-6, "step/solve_minutes_vs_off": -0.002})
    assert Decision.of(recommend(tiny)).keep_off


def test_the_decision_lists_every_avoided_config_and_orders_the_rest_by_rank():
    rows = summary(
        FAILING["inversion"],
        {"step/solve_minutes_vs_off": -0.2},
        FAILING["explosion"],
        {"step/solve_minutes_vs_off": -0.6},
        {"step/solve_minutes_vs_off": -0.4},
        {"step/solve_minutes_vs_off": -0.5},
        {"step/solve_minutes_vs_off": -0.3},
    )
    verdict = recommend(rows)
    d = Decision.of(verdict)
    assert sorted(a["config_id"] for a in d.avoid) == ["c0", "c2"]
    ranked = verdict.filter(pl.col("rank").is_not_null())
    assert ranked["config_id"].to_list() == ["c3", "c5", "c4", "c6", "c1"]  # not summary order
    assert ranked["rank"].to_list() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(("missing", "ellipsis"), [(3, False), (4, True)])
def test_an_unrated_report_names_up_to_three_missing_columns(missing, ellipsis):
    rows = summary({}).drop(NEEDED[:missing])
    (reason,) = recommend(rows)["reasons"].to_list()
    assert ("…" in reason) == ellipsis


NO_FLOOR = {"trained_digest": "aaaa", "lambda_time": 1 / 120}
FLOOR_NEVER_BINDS = {**NO_FLOOR, "floor": -10.0}
WEAKER = {"trained_digest": "bbbb", "lambda_time": 1 / 240, "step/solve_minutes_vs_off": -0.4}


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
    # failure to 0, where apply_to=correct leaves it: the same rewards and advantages.
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
    floored = results.summary["time_efficiency/floored_frac"].to_list()
    assert floored[:3] == [0.0, 0.0, 0.0]
    assert floored[3] > 0  # bookkeeping differs, training does not
    digests = results.summary["trained_digest"].to_list()
    assert len(set(digests[:4])) == 1
    assert digests[4] != digests[0]
    loose = Rule(min_resolve_vs_off=0.0, min_resolve_vs_off_long=0.0, max_fail_faster=10.0)
    verdict = recommend(results.summary, loose)
    reasons = dict(verdict.select("label", "reasons").rows())
    assert verdict["label"][0] == "λ=1/120 correct"
    for twin in ("λ=1/120 correct floor=-10", "λ=1/120 correct floor=0.5", "λ=1/120 all floor=0"):
        assert reasons[twin].startswith("no alternative to the recommended")
    assert not reasons["λ=1/120 all floor=-0.1"].startswith("no alternative")


behaviours = [
    {"trained_digest": "x", "step/solve_minutes_vs_off": -0.5},
    {"trained_digest": "y", "step/solve_minutes_vs_off": -0.5},  # same gain, trains otherwise
    {"trained_digest": "z", "step/solve_minutes_vs_off": -0.2},
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


def test_an_input_without_long_problems_is_said_so_not_written_as_a_number():
    none_long = {"step/resolve_vs_off@long": None, "step/resolve_vs_off_low@long": None}
    none_long |= {"step/resolve@long": None, "step/resolve_off@long": None}
    (reason,) = recommend(summary(none_long))["reasons"].to_list()
    assert "(no long problems in this input)" in reason
    assert "0% on long problems" not in reason


def test_resolve_progress_a_rounding_below_shaping_offs_is_kept():
    base = {"step/resolve_vs_off": None, "step/resolve_vs_off_low": None}
    base |= {"step/resolve_off": -0.1}
    at_eps = summary({**base, "step/resolve": -0.1 - 1e-12})
    assert recommend(at_eps)["failed"].to_list() == [[]]
    past = summary({**base, "step/resolve": -0.1 - 3e-12})
    assert recommend(past)["failed"].to_list() == [["resolve"]]


def resamples(values: dict[str, list[tuple[float, float, float, float]]]) -> pl.DataFrame:
    """A bootstrap table: per config, per resample (overall, long, solve, fail)."""
    rows = []
    for cid, per in values.items():
        for b, (overall, long, solve, fail) in enumerate(per):
            rows.append(
                {
                    "config_id": cid,
                    "resample": b,
                    "step/resolve_vs_off": overall,
                    "step/resolve_vs_off@long": long,
                    "step/solve_minutes_vs_off": solve,
                    "step/fail_minutes_vs_off": fail,
                }
            )
    return pl.DataFrame(rows)


def test_the_won_share_re_applies_the_rule_to_each_resample():
    frame = summary(OFF, {"step/solve_minutes_vs_off": -0.3}, {"step/solve_minutes_vs_off": -0.1})
    table = resamples(
        {
            "c0": [(1.0, 1.0, 0.0, 0.0)] * 4,
            # c1 keeps enough in two resamples of four; c2 in all four but is slower.
            "c1": [(0.99, 0.99, -0.3, 0.0), (0.90, 0.99, -0.3, 0.0)] * 2,
            "c2": [(0.99, 0.99, -0.1, 0.0)] * 3 + [(0.99, 0.99, -0.1, -0.5)],
        }
    )
    won = dict(recommend(frame, resamples=table).select("config_id", "won_share").rows())
    assert won == {"c0": 0.25, "c1": 0.5, "c2": 0.25}
    # A config avoided for a criterion the bootstrap does not move never wins.
    hazard = summary(OFF, {**FAILING["inversion"], "step/solve_minutes_vs_off": -0.3})
    table = resamples({"c0": [(1.0, 1.0, 0.0, 0.0)] * 2, "c1": [(1.0, 1.0, -0.3, 0.0)] * 2})
    won = dict(recommend(hazard, resamples=table).select("config_id", "won_share").rows())
    assert won == {"c0": 1.0, "c1": 0.0}


def test_a_verdict_with_a_pick_lists_no_near_misses():
    rows = [OFF, {}, {"step/resolve_vs_off_low": 0.5}]  # the last fails the resolve criterion
    d = Decision.of(recommend(summary(*rows)))
    assert d.recommended is not None
    assert d.near_misses == []


CONFIDENT = {
    "resolve_vs_off": 0.97,
    "resolve_vs_off_low": 0.955,
    "resolve_vs_off_long": 0.99,
    "resolve_vs_off_low_long": 0.96,
    "won_share": 0.8,
}


@pytest.mark.parametrize(
    ("row", "text"),
    [
        (
            CONFIDENT,
            (
                "It keeps 97.0% of shaping off's resolve progress per step (low end of the "
                "interval 95.5%; on long problems 99.0%, low end 96.0%). The rule picks it in "
                "80.0% of the bootstrap resamples of the problems."
            ),
        ),
        (
            {**CONFIDENT, "resolve_vs_off_low_long": None, "won_share": None},
            (
                "It keeps 97.0% of shaping off's resolve progress per step (low end of the "
                "interval 95.5%)."
            ),
        ),
        (
            {**CONFIDENT, "shaping_off": True},
            "The rule picks it in 80.0% of the bootstrap resamples of the problems.",
        ),
        (
            {**CONFIDENT, "resolve_vs_off": None, "won_share": None},
            "No bootstrap was run (--resamples 0): no interval.",
        ),
        (
            {**CONFIDENT, "resolve_vs_off_low": None, "won_share": None},
            "No bootstrap was run (--resamples 0): no interval.",
        ),
    ],
)
def test_the_confidence_sentence(row, text):
    from replay_cli.advice.verdict import confidence_text

    assert confidence_text(row) == text


def test_a_verdict_judged_without_a_rule_carries_the_default_rule():
    from replay_cli.advice.verdict import judge

    verdict = judge(summary(OFF, {}))
    assert verdict.rule == Rule()
    assert verdict.decision.recommended is not None


def _forecast(default: float, half: float, twice: float) -> dict:
    return {
        "forecast/resolve_vs_off_low@long": default,
        "forecast/resolve_vs_off_low_half@long": half,
        "forecast/resolve_vs_off_low_twice@long": twice,
    }


@pytest.mark.parametrize(
    ("a", "b", "check"),
    [
        (
            _forecast(0.97, 0.97, 0.97),
            _forecast(0.97, 0.97, 0.97),
            "the verdict holds at half and at twice the step budget",
        ),
        (
            _forecast(0.97, 0.90, 0.97),
            _forecast(0.97, 0.97, 0.97),
            "at half the step budget the rule would pick 'config 2'",
        ),
        (
            _forecast(0.97, 0.97, 0.90),
            _forecast(0.97, 0.97, 0.90),
            "at twice the step budget the rule would pick 'config 0'",
        ),
    ],
)
def test_the_budget_check_names_what_the_rule_picks_at_half_and_twice(a, b, check):
    off = {**OFF, **_forecast(1.0, 1.0, 1.0)}
    faster = {"step/solve_minutes_vs_off": -0.8}  # config 1 wins at the default budget
    verdict = recommend(summary(off, {**faster, **a}, b))
    best = verdict.filter(pl.col("role") == "recommended")
    assert best["config_id"][0] == "c1"
    assert best["budget_check"][0] == check


def test_a_rounding_sized_gain_wins_no_resample_from_shaping_off():
    """A resample's solve-minute gain within MINUTES_EPS is no gain: the tie goes to shaping off,
    as in the point ranking."""
    frame = summary(OFF, {"step/solve_minutes_vs_off": -0.3})
    table = resamples({"c0": [(1.0, 1.0, 0.0, 0.0)] * 3, "c1": [(1.0, 1.0, -1e-12, 0.0)] * 3})
    won = dict(recommend(frame, resamples=table).select("config_id", "won_share").rows())
    assert won == {"c0": 1.0, "c1": 0.0}


def test_an_unrated_reason_names_three_missing_columns_then_an_ellipsis():
    dropped = [
        "step/solve_minutes_vs_off",
        "step/fail_minutes_vs_off",
        "step/resolve_vs_off",
        "step/resolve_vs_off@long",
    ]
    verdict = recommend(summary({}).drop(dropped))
    (reason,) = verdict["reasons"].to_list()
    assert reason.count("step/") == 3
    assert ", …): replay it with this version to rate it" in reason
