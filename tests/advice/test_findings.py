"""Tests for replay_cli.advice.findings: each kind on groups built to show it (and on groups built
to make a careless definition say something false), every number a finding states recomputed
from the per-row report with plain numpy, the headline rows and the order of the findings."""

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_cli import ForecastSettings, api, findings, highlights
from replay_cli import catalogue as C
from replay_cli.advice import findings as findings_module
from replay_cli.advice.findings import (
    KINDS,
    Context,
    _headline,
    explosion_unbounded,
    fail_faster,
    forecast_drift,
    signal_change,
    time_only_step,
)
from replay_cli.advice.rule import Rule
from replay_cli.maths.thresholds import GAIN_EPS
from replay_cli.report.model import Report
from replay_cli.report.options import ReportOptions
from replay_cli.rollouts.validation import rollouts_from_frame

from factories import config, replay_frame, rollouts


def kinds(result):
    return dict(
        result.verdict.findings.filter(pl.col("config_id").is_not_null())
        .select("kind", "value")
        .rows()
    )


def texts(result, kind):
    return result.verdict.findings.filter(pl.col("kind") == kind)["text"].to_list()


def by_group(rows: pl.DataFrame):
    """The training rows of a per-row report, one list of dicts per (config, step, group)."""
    train = rows.filter(pl.col("split") != "validation")
    return [
        g.to_dicts()
        for _, g in train.group_by(["config_id", "step", "group_id"], maintain_order=True)
    ]


def numpy_inverted(group, column):
    t = [r for r in group if not r["masked"] and r["kept"]]
    won = np.array([r[column] or 0.0 for r in t if r["resolved"]])
    lost = np.array([r[column] or 0.0 for r in t if not r["resolved"]])
    return bool(len(won) and len(lost) and won.min() < lost.max())


def numpy_fail_push(group):
    """(1/n) Σ over failures A_i (m_i - mean minutes of the failures), n trainable rows."""
    t = [r for r in group if not r["masked"] and r["kept"]]
    lost = [r for r in t if not r["resolved"]]
    if not t or not lost:
        return 0.0
    a = np.array([r["advantage"] for r in lost])
    m = np.array([r["minutes"] for r in lost])
    return float((a * (m - m.mean())).sum() / len(t))


# ---- fail faster: the forecast's failure minutes at T, against shaping off's -------------------


def test_fail_faster_is_the_forecasts_fail_minute_change_at_t():
    frame = rollouts(reward=[0.0] * 4, openhands_run_time=[600.0, 1200.0, 1800.0, 2400.0])
    result = replay_frame(frame, {"apply_to": "all"})
    row = result.result.summary.row(0, named=True)
    change, off = row["forecast/fail_minutes_vs_off"], row["forecast/fail_minutes_off"]
    assert change == pytest.approx(row["forecast/fail_minutes"] - off, rel=1e-12)
    assert -change > 0.05 * off  # charged failures learn to end sooner, past the rule's limit
    assert kinds(result)["fail_faster"] == change
    (text,) = texts(result, "fail_faster")
    assert text == (
        f"λ=1/60 all: teaches failures to give up sooner: after 50 steps a failure ends "
        f"{-change:.2g} min sooner than under shaping off (limit 5.0% of shaping off's "
        f"{off:.2g} min; no long problems in this input); apply_to=correct charges no failure."
    )
    # Charging resolved rollouts only keeps the failures tied: nothing to report.
    correct = replay_frame(frame, {"apply_to": "correct"})
    assert correct.result.summary["forecast/fail_minutes_vs_off"][0] == 0.0
    assert "fail_faster" not in kinds(correct)


def test_fail_faster_names_the_long_problems_and_the_correct_twin_from_the_forecast():
    # Three groups of rising length: the longest is the long bucket, with its own change.
    times = [[60.0, 120.0, 180.0, 240.0], [600.0, 900.0, 1200.0, 1500.0], [3000.0, 3600.0] * 2]
    three = pl.concat(
        rollouts(group_id=[g] * 4, reward=[0.0] * 4, openhands_run_time=t)
        for g, t in enumerate(times)
    )
    configs = [config({"apply_to": "all"}), config({"apply_to": "correct"})]
    result = api.replay(rollouts_from_frame(three), configs)
    long = result.result.summary["forecast/fail_minutes_vs_off@long"].to_list()
    assert long[0] < 0
    assert long[1] == 0.0
    (text,) = texts(result, "fail_faster")
    assert f"; on long problems {-long[0]:.2g} min sooner than under shaping off)" in text
    assert text.endswith(
        "; 'λ=1/60 correct' charges no failure, and its failures end as soon as under shaping "
        "off as its effort drifts."
    )


def _failing_faster(long: float | None) -> dict:
    return {
        "config_id": "a",
        "label": "λ=1/60 all",
        "lambda_time": 1 / 60,
        "apply_to": "all",
        C.FORECAST_STEPS: 50.0,
        C.F_FAIL_VS_OFF: -3.0,
        C.F_FAIL_OFF: 30.0,
        C.F_FAIL_VS_OFF_LONG: long,
    }


@pytest.mark.parametrize(
    ("long", "twin", "words"),
    [
        (
            0.5,
            0.4,
            (
                "on long problems 0.5 min later than under shaping off); 'λ=1/60 correct' "
                "charges no failure, and its failures end 0.4 min later than under shaping off "
                "as its effort drifts."
            ),
        ),
        (
            -0.5,
            -0.4,
            (
                "on long problems 0.5 min sooner than under shaping off); 'λ=1/60 correct' "
                "charges no failure, and its failures end 0.4 min sooner than under shaping off "
                "as its effort drifts."
            ),
        ),
        (
            0.0,
            1e-12,
            (
                "on long problems as soon as under shaping off); 'λ=1/60 correct' charges no "
                "failure, and its failures end as soon as under shaping off as its effort drifts."
            ),
        ),
    ],
)
def test_fail_faster_words_each_change_by_its_sign(long, twin, words):
    row = _failing_faster(long)
    twin_row = {**row, "config_id": "b", "label": "λ=1/60 correct", "apply_to": "correct"}
    twin_row[C.F_FAIL_VS_OFF] = twin
    ctx = Context(pl.DataFrame([row, twin_row]), {}, Rule())
    found = fail_faster(row, ctx)
    assert found.value == -3.0
    assert found.text == (
        "teaches failures to give up sooner: after 50 steps a failure ends 3 min sooner than "
        "under shaping off (limit 5.0% of shaping off's 30 min; " + words
    )


def test_fail_faster_is_the_rules_criterion_inclusive_and_configurable():
    # 5% of shaping off's 30 minutes is 1.5: failures ending exactly that much sooner pass.
    at = _failing_faster(None) | {C.F_FAIL_VS_OFF: -1.5}
    assert fail_faster(at, bare_context()) is None
    past = fail_faster(at | {C.F_FAIL_VS_OFF: -1.6}, bare_context())
    assert past.text.startswith(
        "teaches failures to give up sooner: after 50 steps a failure ends 1.6 min sooner than "
        "under shaping off (limit 5.0% of shaping off's 30 min; no long problems in this input)"
    )
    assert past.text.endswith("; apply_to=correct charges no failure.")
    looser = Context(pl.DataFrame(), {}, Rule(max_fail_faster=0.06))
    assert fail_faster(at | {C.F_FAIL_VS_OFF: -1.6}, looser) is None
    # Without the forecast there is nothing to say.
    assert fail_faster(at | {C.F_FAIL_VS_OFF: None}, bare_context()) is None


def test_the_forecast_trains_beyond_the_logged_groups():
    """Groups whose rollouts all took the same minutes give the step no time signal, but the
    forecast draws each problem's efforts from what its bucket shows (the effort prior): a time
    charge on failures is forecast to teach them to give up sooner, and the finding says so."""
    frame = rollouts(
        reward=[0.0] * 8,
        group_id=[0, 0, 1, 1, 2, 2, 3, 3],
        openhands_run_time=[60.0] * 2 + [120.0] * 2 + [180.0] * 2 + [120.0] * 2,
    )
    result = replay_frame(frame, {"lambda_time": 1 / 480}, {"precision": "float64"})
    row = result.result.summary.row(0, named=True)
    assert row["step/fail_minutes_vs_off"] == 0.0
    change = row["forecast/fail_minutes_vs_off"]
    assert change < -0.05 * row["forecast/fail_minutes_off"]
    assert kinds(result)["fail_faster"] == change


def test_the_uncharged_twin_is_not_said_to_leave_failures_alone_where_the_forecast_drifts():
    # λ=1/120 correct charges no failure and its one step leaves them about as shaping off's,
    # but over the forecast its effort drifts and failures on long problems end sooner.
    result = api.replay(
        api.load(["data_samples/rollouts_medium.parquet"]),
        [
            config({"lambda_time": lam, "apply_to": a})
            for lam in (0.0, 1 / 120)
            for a in ("all", "correct")
        ],
        api.report_options(forecast=ForecastSettings(steps=50, seeds=2)),
    )
    twin = result.result.summary.filter(pl.col("label") == "λ=1/120 correct").row(0, named=True)
    drift = twin[C.F_FAIL_VS_OFF]
    assert drift < -0.1
    # From the start window the twin's own drift crosses the limit too: it has its own finding.
    (text,) = [t for t in texts(result, "fail_faster") if t.startswith("λ=1/120 all: ")]
    assert text.startswith("λ=1/120 all: teaches failures to give up sooner")
    assert text.endswith(
        f"; 'λ=1/120 correct' charges no failure, and its failures end {-drift:.2g} min sooner "
        "than under shaping off as its effort drifts."
    )


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (-0.13, "on long problems 0.13 min sooner than under shaping off"),
        (0.05, "on long problems 0.05 min later than under shaping off"),
        (0.0, "on long problems as soon as under shaping off"),
        (None, "no long problems in this input"),
    ],
)
def test_the_long_problem_clause_keeps_the_sign(change, words):
    assert findings_module._on_long(change) == words


def test_call_bonus_signal_is_not_called_fail_faster():
    # Equal run times, calls differ: the bonus breaks the tie, the time term cannot.
    frame = rollouts(reward=[0.0] * 4, openhands_run_time=[600.0] * 4, calls=[5, 10, 20, 40])
    result = replay_frame(
        frame, {"lambda_time": 0.0, "lambda_call_bonus": 0.1, "call_bonus_ref": 40.0}
    )
    assert result.result.summary["signal/time_only_rate"][0] == 1.0  # there is shaping-only signal
    assert result.result.summary["push/minutes_fail"][0] == 0.0
    assert (
        result.result.summary["push/calls_fail"][0] > 0
    )  # it teaches more calls, not faster failure
    assert "fail_faster" not in kinds(result)


# ---- inversions: only what shaping introduces is blamed on the time term ----------------------


def test_inversion_present_with_shaping_off_is_not_blamed_on_time():
    # A penalised resolved rollout (reward 0.2) below an unresolved one with partial credit (0.5).
    frame = rollouts(reward=[0.2, 0.5, 0.0], resolved=[True, False, False])
    for lam in (0.0, 1 / 60):
        result = replay_frame(frame, {"lambda_time": lam})
        summary = result.result.summary.row(0, named=True)
        assert summary["inversion/group_rate"] == 1.0
        assert summary["inversion/group_rate_off"] == 1.0
        assert summary["inversion/introduced_group_rate"] == 0.0
        assert "inversion_introduced" not in kinds(result)
        assert texts(result, "inversion_present_unshaped")
        assert not any("outweighs" in t for t in result.verdict.findings["text"])


def test_introduced_inversion_recomputed_from_the_rows():
    frame = rollouts(reward=[1.0, 0.0], openhands_run_time=[3600.0, 60.0])
    configs = [config({"lambda_time": lam}) for lam in (1 / 120, 1 / 30)]
    result = api.replay(rollouts_from_frame(frame), configs)
    groups = by_group(result.result.rows)
    introduced = [
        numpy_inverted(g, "reward_shaped") and not numpy_inverted(g, "reward_raw") for g in groups
    ]
    assert introduced == [False, True]  # 1 - 2.0 < 0 - 1/30 only at the steep lambda
    rows = result.verdict.findings.filter(pl.col("kind") == "inversion_introduced")
    assert rows["config_id"].to_list() == [configs[1].config_id]
    assert rows["value"][0] == 1.0
    assert "introduces none at λ ∈ {1/120}" in rows["text"][0]
    assert "(the time charge reorders them)" in rows["text"][0]


def test_an_inversion_the_call_bonus_causes_is_not_blamed_on_time():
    # lambda 0: the unresolved rollout's call bonus (2.0) lifts it above the success (1.0).
    frame = rollouts(reward=[1.0, 0.0], calls=[0, 40])
    result = replay_frame(
        frame, {"lambda_time": 0.0, "lambda_call_bonus": 2.0, "call_bonus_ref": 40.0}
    )
    (text,) = texts(result, "inversion_introduced")
    assert "(the call bonus reorders them)" in text
    assert "time" not in text


def test_negative_floor_gives_the_set_of_inversion_free_lambdas():
    # With a floor of -0.8 the success and the failure both reach it at a steep lambda (a tie),
    # but at a middle lambda the success is floored below the failure: inversion is not monotone.
    frame = rollouts(reward=[1.0, 0.0], openhands_run_time=[5400.0, 1800.0])
    lambdas = (1 / 120, 1 / 45, 1 / 20)
    configs = [config({"lambda_time": lam, "floor": -0.8}) for lam in lambdas]
    result = api.replay(rollouts_from_frame(frame), configs)
    rates = result.result.summary["inversion/introduced_group_rate"].to_list()
    assert rates == [0.0, 1.0, 0.0]
    (text,) = texts(result, "inversion_introduced")
    assert "introduces none at λ ∈ {1/120, 1/20}" in text
    assert "(the time charge and the floor reorder them)" in text
    assert "largest" not in text
    # The tie at the steep lambda is no inversion, and the floor tie has its own finding.
    tie = result.verdict.findings.filter(pl.col("kind") == "floor_tie")
    assert tie["config_id"].to_list() == [configs[2].config_id]


def test_the_inversion_free_lambdas_are_those_of_configs_with_the_rows_other_settings():
    # The same λs with and without the floor: unfloored, the success falls below the failure from
    # λ=1/60 on; floored at -0.8, λ=1/20 ties them on the floor instead. Each row's set of
    # inversion-free λs is read from the configs that differ from it in λ alone.
    frame = rollouts(reward=[1.0, 0.0], openhands_run_time=[5400.0, 1800.0])
    lambdas = (1 / 120, 1 / 45, 1 / 20)
    configs = [config({"lambda_time": lam, "floor": f}) for f in (-0.8, None) for lam in lambdas]
    result = api.replay(rollouts_from_frame(frame), configs)
    found = result.verdict.findings.filter(pl.col("kind") == "inversion_introduced")
    text = dict(found.select("config_id", "text").rows())
    floored, unfloored = configs[1], configs[4]
    assert "introduces none at λ ∈ {1/120, 1/20}" in text[floored.config_id]
    assert "introduces none at λ ∈ {1/120}" in text[unfloored.config_id]
    assert set(text) == {c.config_id for c in (configs[1], configs[4], configs[5])}


# ---- explosions: judged after the clip, each side by its own bound -----------------------------


def lone_success():
    # The resolved row's peers differ by one second: a leave-one-out std of about 1e-4, so the
    # success explodes upward.
    return rollouts(
        reward=[1.0, 0.0, 0.0, 0.0], openhands_run_time=[600.0, 600.0, 600.0, 601.0], step=[3] * 4
    )


def lone_failure():
    # Mirror image: the unresolved row explodes downward among successes a second apart.
    return rollouts(
        reward=[1.0, 1.0, 1.0, 0.0], openhands_run_time=[600.0, 600.0, 601.0, 600.0], step=[3] * 4
    )


def test_one_sided_clip_bounds_its_own_side():
    upward = replay_frame(lone_success(), {}, {"precision": "float64", "clip_high": 3.0})
    assert upward.result.summary["adv/explosion_frac"][0] > 0
    assert upward.result.summary["adv/explosion_trained_frac"][0] == 0.0
    assert "explosion_unbounded" not in kinds(upward)
    (bounded,) = texts(upward, "explosion_bounded")
    top = upward.result.groups["max_abs_advantage_unclipped"].max()
    assert f", up to {top:.4g} unclipped." in bounded
    downward = replay_frame(lone_failure(), {}, {"precision": "float64", "clip_high": 3.0})
    trained = downward.result.rows.filter(~pl.col("masked"))["advantage"].abs()
    assert downward.result.summary["adv/explosion_trained_frac"][0] == pytest.approx(
        float((trained > 3).mean())
    )
    found = downward.verdict.findings.filter(pl.col("kind") == "explosion_unbounded").row(
        0, named=True
    )
    # The number quoted is what training sees (after the clip), not the unclipped extreme.
    assert found["value"] == pytest.approx(float(trained.max()))
    assert f"up to {trained.max():.4g}" in found["text"]
    assert "after its clip" in found["text"]
    # The group of the largest unclipped |A| need not hold the trained explosion: not named.
    assert "the largest at step" not in found["text"]


def test_explosion_names_the_std_that_divided_it():
    result = replay_frame(lone_success(), {}, {"precision": "float64"})
    top_row = result.result.rows.sort("advantage_unclipped", descending=True).row(0, named=True)
    assert top_row["normalized"]
    assert top_row["std"] < 1e-3
    found = result.verdict.findings.filter(pl.col("kind") == "explosion_unbounded").row(
        0, named=True
    )
    assert found["severity"] == "hazard"
    assert "(no clip)" in found["text"]
    assert f"divided by a std of {top_row['std']:.2g}" in found["text"]
    assert "++grpo.advantage_clip_low=-3 ++grpo.advantage_clip_high=3" in found["text"]


def test_an_undivided_row_is_never_said_to_be_divided():
    # Without normalisation nothing is divided: large rewards explode by their size alone.
    frame = rollouts(reward=[10.0, 0.0, 0.0, 0.0])
    result = replay_frame(frame, {"lambda_time": 0.0}, {"normalize": False})
    assert result.result.groups["std_at_max_abs"][0] is None
    (text,) = texts(result, "explosion_unbounded")
    assert "divided" not in text


def test_clipped_twin_in_the_sweep_is_named():
    configs = [
        config({}, {"precision": "float64"}),
        config({}, {"precision": "float64", "clip_low": -3.0, "clip_high": 3.0}),
    ]
    result = api.replay(rollouts_from_frame(lone_success()), configs)
    (text,) = texts(result, "explosion_unbounded")
    assert "'λ=1/60 all float64 clip[-3,3]' is its clipped twin here" in text or (
        "'λ=1/60 all clip[-3,3] float64' is its clipped twin here" in text
    )


# ---- uncharged-only signal: the cause named is the one present ---------------------------------


def test_signal_only_from_uncharged_masked_rows():
    # Every charged row is floored to 0.05; the masked row keeps 0.0 and still votes.
    frame = rollouts(reward=[0.0] * 4, mask_sample=[False, False, False, True])
    result = replay_frame(frame, {"floor": 0.05})
    assert result.result.groups["uncharged_only_signal"][0]
    assert kinds(result)["uncharged_only_signal"] == 1.0
    (text,) = texts(result, "uncharged_only_signal")
    assert "masked rows" in text
    assert "--exclude-masked" in text
    excluded = replay_frame(frame, {"floor": 0.05}, {"exclude_masked": True})
    assert "uncharged_only_signal" not in kinds(excluded)


def test_zeroed_rows_are_not_blamed_on_masks():
    # Internal item 2: a zeroed row is reset to 0.0 while its charged siblings are floored up to
    # 0.05. No row is masked, so the advice must not be --exclude-masked.
    frame = rollouts(reward=[0.0] * 4, zeroed_by_penalty=[False, False, False, True])
    result = replay_frame(frame, {"semantics": "internal", "floor": 0.05})
    assert result.result.summary["input/masked_frac"][0] == 0.0
    summary = result.result.summary.row(0, named=True)
    assert summary["signal/uncharged_only_reset_rate"] == 1.0
    assert summary["signal/uncharged_only_masked_rate"] == 0.0
    assert summary["signal/uncharged_only_gate_rate"] == 0.0
    (text,) = texts(result, "uncharged_only_signal")
    assert "zeroing penalty" in text
    assert "masked" not in text
    assert "--exclude-masked" not in text


def test_time_spread_among_charged_rows_is_not_uncharged_only():
    frame = rollouts(
        reward=[0.0] * 4,
        openhands_run_time=[600.0, 1200.0, 1800.0, 2400.0],
        mask_sample=[False, False, False, True],
    )
    result = replay_frame(frame, {})
    assert result.result.groups["time_only_signal"][0]
    assert not result.result.groups["uncharged_only_signal"][0]


# ---- validation, gained and lost signal, floor ties -------------------------------------------


def validation_frame():
    return rollouts(
        reward=[1.0, 0.0, 1.0, 1.0],
        group_id=[0, 0, 1, 1],
        split=["train", "train", "validation", "validation"],
        openhands_run_time=[600.0, 600.0, 1200.0, 1200.0],
    )


def test_charged_validation_is_not_comparable():
    internal = replay_frame(validation_frame(), {"semantics": "internal"})
    row = internal.result.summary.row(0, named=True)
    assert row["input/validation_charged"] == 2
    found = internal.verdict.findings.filter(pl.col("kind") == "validation_not_comparable")
    assert found["value"][0] == pytest.approx(-20 / 60)
    assert "2 validation rows are charged (internal item 4)" in found["text"][0]
    total, acc = row["validation/total_reward/mean"], row["validation/accuracy"]
    assert (
        f"validation/total_reward/mean is {total:.4g} against a raw accuracy of {acc:.4g}"
        in (found["text"][0])
    )


def test_validation_not_charged_says_nothing():
    # Internal semantics without item 4 and nemo-rl semantics both leave validation uncharged.
    for shaping in ({"semantics": "internal", "internal_items": (1, 2, 3)}, {}):
        result = replay_frame(validation_frame(), shaping)
        assert result.result.summary["input/validation_charged"][0] == 0
        assert "validation_not_comparable" not in kinds(result)


def test_signal_gained_and_lost_are_both_stated():
    # Group 0 (mixed): the success (90 min) lands exactly on the floor -0.5 and the failure
    # (60 min) is clamped to it: they tie and the group loses its signal. Group 1 (all fail, 5
    # and 10 minutes, above the floor) gains a time-only signal.
    frame = rollouts(
        reward=[1.0, 0.0, 0.0, 0.0],
        group_id=[0, 0, 1, 1],
        openhands_run_time=[5400.0, 3600.0, 300.0, 600.0],
    )
    result = replay_frame(frame, {"floor": -0.5})
    rows = result.result.rows.sort("group_id", "rollout_index")
    assert rows["reward_shaped"].to_list()[:2] == [-0.5, -0.5]
    assert rows["floored"].to_list()[:2] == [False, True]  # landing on it is no clamp
    groups = result.result.groups.sort("group_id")
    assert groups["has_signal"].to_list() == [False, True]
    assert groups["has_signal_raw"].to_list() == [True, False]
    assert groups["floor_tie"].to_list() == [True, False]
    assert groups["inverted"].to_list() == [False, False]  # a tie is never an inversion
    summary = result.result.summary.row(0, named=True)
    assert summary["signal/gained_rate"] == 0.5
    assert summary["signal/lost_rate"] == 0.5
    assert summary["signal/group_rate"] == summary["signal/group_rate_raw"]  # net 0 hides both
    (text,) = texts(result, "signal_change")
    assert "gained in 50% of groups (ties the shaping breaks) and lost in 50%" in text
    (tie,) = texts(result, "floor_tie")
    assert "both end on the floor -0.5" in tie
    assert "in 50% of groups (100% of mixed groups)" in tie


# ---- the verdict first, kinds in decision order, headlines, labels -----------------------------


def test_findings_follow_the_decision_order_without_repeating_the_decision(synth_path):
    configs = [config({"enabled": False})] + [
        config({"lambda_time": lam, "apply_to": a}, {"clip_low": -3.0, "clip_high": 3.0})
        for lam in (1 / 120, 1 / 30, 1 / 8)
        for a in ("all", "correct")
    ]
    result = api.replay(api.load([synth_path]), configs)
    found = result.verdict.findings
    # The decision is the verdict's own block, never repeated as a finding.
    assert "decision" not in found["severity"].to_list()
    order = list(KINDS)
    positions = [order.index(k) for k in found["kind"]]
    assert positions == sorted(positions)
    # More than three configs of one kind: one headline sentence, the per-config rows kept.
    per_config = found.filter(pl.col("config_id").is_not_null())
    for kind, n in per_config["kind"].value_counts().rows():
        head = found.filter((pl.col("kind") == kind) & pl.col("config_id").is_null())
        assert head.height == (1 if n > 3 else 0)
        if n > 3:
            assert head["text"][0].startswith(f"{n} configs ")


def test_labels_are_unique_when_any_parameter_varies(synth_path):
    variants = [
        {},
        {"normalize": False},
        {"exclude_masked": True},
        {"baseline": "mean"},
        {"std_guard": "legacy"},
        {"precision": "float64"},
    ]
    configs = [config({}, a) for a in variants] + [config({"mask_flagged": False})]
    configs.append(config({}, {}, metrics_by="batch"))
    summary = api.replay(api.load([synth_path]), configs).result.summary
    assert summary["label"].n_unique() == len(configs)


def test_labels_are_unique_when_the_difference_is_hidden(synth_path, tmp_path):
    # Disabled configs hide their shaping parameters; grpo hides scale_rewards.
    configs = [
        config({"enabled": False, "lambda_time": 1 / 120}),
        config({"enabled": False, "lambda_time": 1 / 60}),
        config({}, {"scale_rewards": "batch"}),
        config({}),
    ]
    out = tmp_path / "r"
    result = api.replay_to_report([synth_path], configs, out)
    labels = result.result.summary["label"].to_list()
    assert len(set(labels)) == 4
    assert labels[0] == "shaping off [λ=1/120]"  # λ as written everywhere, not its float
    assert labels[2] == "λ=1/60 all [scale_rewards=batch]"
    html = (out / "index.html").read_text()
    assert all(label.replace("'", "&#x27;") in html for label in labels)


def test_findings_equal_those_of_the_report_tables(synth_path, tmp_path):
    configs = [config({"enabled": False}), config({}), config({"apply_to": "correct"})]
    out = tmp_path / "r"
    result = api.replay_to_report([synth_path], configs, out)
    on_disk = pl.read_parquet(out / "findings.parquet")
    assert on_disk.equals(result.verdict.findings)
    again = findings(pl.read_parquet(out / "summary.parquet"), Report.read(out).top_groups)
    assert again.equals(on_disk)
    assert on_disk.columns == ["config_id", "kind", "severity", "value", "text", "headline"]


def test_highlights_are_shaping_off_the_verdict_and_the_best_trade(synth_path):
    configs = [config({"enabled": False})] + [
        config({"lambda_time": lam, "apply_to": a}, {"clip_low": -3.0, "clip_high": 3.0})
        for lam in (1 / 120, 1 / 15)
        for a in ("all", "correct")
    ]
    result = api.replay(api.load([synth_path]), configs)
    verdict = result.verdict.recommendation
    chosen = highlights(result.result.summary, verdict=verdict)
    expected = [configs[0].config_id] + [
        verdict.filter(pl.col(flag))["config_id"][0]
        for flag in (pl.col("role") == "recommended", pl.col("role") == "runner-up", "best_trade")
        if verdict.filter(flag).height
        and verdict.filter(flag)["config_id"][0] != configs[0].config_id
    ]
    assert chosen == expected
    wanted = [configs[2].config_id[:6], "λ=1/15 all clip[-3,3]"]
    assert highlights(result.result.summary, wanted) == [configs[2].config_id, configs[3].config_id]


def test_top_groups_of_chunks_equal_those_of_the_whole_table(synth_path):
    from replay_cli.maths.top_groups import top_groups, top_of_config

    configs = [config({}), config({"lambda_time": 1 / 30, "floor": 0.05})]
    groups = api.replay(rollouts_from_frame(pl.read_parquet(synth_path)), configs).result.groups
    whole = top_groups(groups)
    assert whole.height == 2 * 5
    pieces = [
        top_of_config(part)
        for (_,), one in groups.partition_by("config_id", as_dict=True).items()
        for part in one.partition_by("step")
    ]
    assert top_groups(pl.concat(pieces)).equals(whole)
    values = whole.filter(pl.col("config_id") == configs[0].config_id)
    assert values["max_abs_advantage_unclipped"].is_sorted(descending=True)


# ---- clean configs: nothing to warn about is never warned about ---------------------------------

ONLY_WHEN_EXPLODING = {"explosion_unbounded"}
FORECAST_KINDS = {"fail_faster", "forecast_drift"}
"""Kinds read from the forecast, which trains beyond the logged groups (efforts the bucket shows,
test_the_forecast_trains_beyond_the_logged_groups): silent for shaping off, a forecast for a
time charge whatever the groups logged."""


@settings(max_examples=40, deadline=None)
@given(
    groups=st.lists(
        st.lists(st.tuples(st.booleans(), st.integers(1, 60)), min_size=2, max_size=8),
        min_size=1,
        max_size=5,
    ),
    lam=st.sampled_from([1 / 480, 1 / 120, 1 / 30]),
    precision=st.sampled_from(["float64", "float32"]),
)
def test_clean_configs_get_no_findings(groups, lam, precision):
    # Binary rewards. Shaping off, and time shaping where every rollout of a group took the same
    # minutes (a constant shift per group): nothing is inverted, tied on a floor, gained or lost,
    # charged on validation or signalled by uncharged rows alone; shaping off's forecast is its
    # own, so it drifts and teaches nothing. Only a genuine explosion (a lone success among many
    # failures: |A| > 3 with binary rewards) may show.
    resolved = [ok for g in groups for ok, _ in g]
    minutes = [float(g[0][1]) for g in groups for _ in g]
    gids = [k for k, g in enumerate(groups) for _ in g]
    frame = rollouts(
        reward=[1.0 if ok else 0.0 for ok in resolved],
        resolved=resolved,
        group_id=gids,
        openhands_run_time=[60.0 * m for m in minutes],
    )
    for shaping in ({"enabled": False}, {"lambda_time": lam}):
        # The forecast's kinds are quiet only for shaping off, whose forecast runs (a short one:
        # shaping off against itself is still itself); a time charge's replay skips it.
        shaped = shaping.get("enabled", True)
        options = ReportOptions(
            forecast=None if shaped else ForecastSettings(steps=5, seeds=2, check_budgets=False)
        )
        cfg = config(shaping, {"precision": precision})
        result = api.replay(rollouts_from_frame(frame), [cfg], options)
        quiet = ONLY_WHEN_EXPLODING | (FORECAST_KINDS if shaped else set())
        fired = set(kinds(result)) & set(KINDS) - quiet
        assert not fired, (shaping, fired, result.verdict.findings["text"].to_list())


def test_shaping_that_only_gains_signal_is_stated():
    frame = rollouts(reward=[0.0, 0.0], openhands_run_time=[300.0, 600.0])
    (text,) = texts(replay_frame(frame, {}), "signal_change")
    assert "gained in 100% of groups (ties the shaping breaks) and lost in 0%" in text


def test_the_internal_reset_is_named_among_the_terms_that_reorder():
    frame = rollouts(reward=[1.0, 0.0], openhands_run_time=[3600.0, 60.0])
    result = replay_frame(frame, {"semantics": "internal", "lambda_time": 1 / 30})
    (text,) = texts(result, "inversion_introduced")
    assert "(the time charge and internal item 2's reset to 0 reorder them)" in text


def bare_context():
    return Context(pl.DataFrame(), {}, Rule())


def test_a_rate_at_the_gain_epsilon_is_no_change():
    row = {"signal/gained_rate": GAIN_EPS, "signal/lost_rate": GAIN_EPS}
    assert signal_change(row, bare_context()) is None
    row = {"signal/gained_rate": 2 * GAIN_EPS, "signal/lost_rate": 0.0}
    row |= {"signal/group_rate_raw": 0.5, "signal/group_rate": 0.5}
    assert signal_change(row, bare_context()) is not None


@pytest.mark.parametrize(
    ("low", "high", "quoted"),
    [(998.8, 1000.0, True), (999.0, 1000.0, False), (9.995, 10.0, False), (9.98, 10.0, True)],
)
def test_the_platform_range_is_quoted_beyond_1e_3_relative(low, high, quoted):
    row = {
        "config_id": "c",
        "label": "c",
        "adv/explosion_trained_frac": 0.1,
        "adv/abs_max": high,
        "adv/abs_max_low": low,
        "adv/abs_max_high": high,
        "adv/explosion_certain_frac": 0.05,
    }
    found = explosion_unbounded(row, bare_context())
    assert (f"({low:.4g} to {high:.4g} by platform, " in found.text) == quoted


# ---- statements true on groups built to break them (issue 38) ----------------------------------

GATE = {"apply_to": "correct", "lambda_time": 1 / 10, "floor": 0.5}
"""Charged successes of 10+ minutes all end on the floor 0.5; uncharged rows keep 1.0."""


def _masked_odd_row():
    """Four resolved rows, raw rewards all 1: three charged to the floor, one masked timeout
    (resolved, uncharged). The only spread is the masked row against its floored siblings."""
    return {
        "reward": [1.0] * 4,
        "resolved": [True] * 4,
        "mask_sample": [False, False, False, True],
        "openhands_run_time": [600.0, 900.0, 1200.0, 3600.0],
    }


def _gate_odd_row():
    """Raw rewards all 1, one row unresolved: apply_to=correct leaves it uncharged at 1."""
    return {
        "reward": [1.0] * 4,
        "resolved": [True, True, True, False],
        "mask_sample": [False] * 4,
        "openhands_run_time": [600.0, 900.0, 1200.0, 600.0],
    }


def _groups(*makers):
    columns = {}
    for k, make in enumerate(makers):
        for name, values in make().items():
            columns.setdefault(name, []).extend(values)
        columns.setdefault("group_id", []).extend([k] * 4)
    return rollouts(**columns)


def test_uncharged_only_names_only_the_causes_present_in_its_groups():
    # Every uncharged-only group's odd row is a masked, resolved timeout: the correct gate,
    # though on, uncharged nothing there, so it must not be blamed.
    result = replay_frame(_groups(_masked_odd_row, _masked_odd_row), GATE)
    summary = result.result.summary.row(0, named=True)
    assert summary["signal/uncharged_only_rate"] == 1.0
    assert summary["signal/uncharged_only_masked_rate"] == 1.0
    assert summary["signal/uncharged_only_gate_rate"] == 0.0
    assert summary["signal/uncharged_only_reset_rate"] == 0.0
    (text,) = texts(result, "uncharged_only_signal")
    assert "masked rows" in text
    assert "--exclude-masked" in text
    assert "correct gate" not in text
    assert "unresolved" not in text


def test_uncharged_only_names_the_gate_where_the_gate_is_the_cause():
    result = replay_frame(_groups(_masked_odd_row, _gate_odd_row), GATE)
    summary = result.result.summary.row(0, named=True)
    assert summary["signal/uncharged_only_masked_rate"] == 0.5
    assert summary["signal/uncharged_only_gate_rate"] == 0.5
    (text,) = texts(result, "uncharged_only_signal")
    assert "masked rows" in text
    assert "correct gate did not charge" in text
    only_gate = replay_frame(_groups(_gate_odd_row), GATE)
    (text,) = texts(only_gate, "uncharged_only_signal")
    assert "correct gate did not charge" in text
    assert "masked" not in text
    assert "--exclude-masked" not in text


def test_the_validation_finding_fires_only_when_a_charged_validation_reward_changes():
    frame = rollouts(
        reward=[1.0, 0.0, 1.0, 0.0],
        group_id=[0, 0, 1, 1],
        split=["train", "train", "validation", "validation"],
        openhands_run_time=[600.0, 1200.0, 1800.0, 600.0],
    )
    changed = replay_frame(frame, {"validation_shaped": True}, metrics_by="batch")
    assert changed.result.summary["input/validation_changed"][0] == 2
    assert texts(changed, "validation_not_comparable")
    # The same rows with validation times of 0: charged, but nothing is deducted.
    free = frame.with_columns(
        pl.when(pl.col("split") == "validation")
        .then(0.0)
        .otherwise(pl.col("openhands_run_time"))
        .alias("openhands_run_time")
    )
    unchanged = replay_frame(free, {"validation_shaped": True}, metrics_by="batch")
    assert unchanged.result.summary["input/validation_charged"][0] == 2
    assert unchanged.result.summary["input/validation_changed"][0] == 0
    assert texts(unchanged, "validation_not_comparable") == []


def test_a_floor_tie_is_a_tie_whichever_side_was_charged():
    # apply_to=correct, floor 0: a slow success is clamped to 0, where the uncharged failure
    # sits; `all` with floor 0 trains exactly alike, and both get the finding.
    frame = rollouts(reward=[1.0, 1.0, 0.0], openhands_run_time=[600.0, 7200.0, 600.0])
    results = {
        a: replay_frame(
            frame, {"apply_to": a, "lambda_time": 1 / 60, "floor": 0.0}, {"precision": "float64"}
        )
        for a in ("all", "correct")
    }
    for result in results.values():
        assert result.result.groups["floor_tie"].to_list() == [True]
        assert texts(result, "floor_tie")
    digests = {a: r.result.summary["trained_digest"][0] for a, r in results.items()}
    assert digests["all"] == digests["correct"]  # the same trained rows


# ---- the forecast drift, the jump at a tiny λ and the headline's three (mutation survivors) ----


def _drifting(low: float | None = 0.80, point: float | None = 0.97) -> dict:
    return {
        C.F_RESOLVE_VS_OFF_LONG: point,
        C.F_RESOLVE_VS_OFF_LOW_LONG: low,
        C.FORECAST_STEPS: 50,
        C.F_FAIL_START_LONG: 30.0,
        C.F_FAIL_LONG: 21.5,
        C.F_RESOLVE_START_LONG: 0.30,
        C.F_RESOLVE_LONG: 0.24,
        C.F_RESOLVE_OFF_LONG: 0.31,
    }


def test_forecast_drift_reads_the_low_end_of_the_interval_not_the_point():
    # The point keeps 97% of shaping off's resolve rate on long problems, the low end 80%.
    found = forecast_drift(_drifting(), bare_context())
    assert found.value == 0.80
    assert found.text == (
        "after 50 steps the forecast moves failures on long problems from 30.0 to 21.5 minutes "
        "and resolve there from 30% to 24%, against 31% with shaping off (low end of the "
        "interval: 80% of shaping off's, the rule needs 95%)."
    )
    assert forecast_drift(_drifting(0.99, point=0.90), bare_context()) is None
    looser = Context(pl.DataFrame(), {}, Rule(min_resolve_vs_off_long=0.8))
    assert forecast_drift(_drifting(), looser) is None


def test_forecast_drift_without_an_interval_reads_the_point_value_as_the_rule_does():
    found = forecast_drift(_drifting(None, point=0.90), bare_context())
    assert found.value == 0.90
    assert "(point value, no interval: 90% of shaping off's, the rule needs 95%)." in found.text
    assert forecast_drift(_drifting(None, point=0.96), bare_context()) is None
    assert forecast_drift(_drifting(None, point=None), bare_context()) is None


def test_the_forecast_headline_names_the_largest_losses_worst_first():
    # The kept share is what forecast_drift's value holds: the lowest keeps lose the most.
    kept = {"λ=1/120 all": 0.93, "λ=1/60 correct": 0.92, "λ=1/60 all": 0.89, "λ=1/30 all": 0.80}
    summary = pl.DataFrame(
        [
            {
                "config_id": f"c{i}",
                "label": label,
                **_drifting(None),
                C.F_RESOLVE_VS_OFF_LOW_LONG: k,
            }
            for i, (label, k) in enumerate(kept.items())
        ]
    )
    found = findings(summary)
    (head,) = found.filter(pl.col("config_id").is_null() & (pl.col("kind") == "forecast_drift"))[
        "text"
    ].to_list()
    assert head == (
        "4 configs lose resolve rate on long problems over the forecast; largest losses (the "
        "low end of the share of shaping off's kept): 'λ=1/30 all' (80%), 'λ=1/60 all' (89%), "
        "'λ=1/60 correct' (92%)."
    )
    assert found.filter(pl.col("config_id").is_null())["value"].to_list() == [0.80]


@pytest.mark.parametrize(("lam", "jump"), [(0.9e-4, True), (1e-4, False), (1.2e-4, False)])
def test_the_jump_at_a_tiny_lambda_is_named_below_1e_4_only(lam, jump):
    row = {C.TIME_ONLY_SHARE: 0.4, C.TIME_ONLY_GROUPS: 0.3, "lambda_time": lam}
    found = time_only_step(row, bare_context())
    assert found.value == 0.4
    assert ("the jump at λ → 0⁺" in found.text) == jump


def test_a_headline_names_the_three_largest_values_in_order():
    values = {"a": 0.1, "b": -0.5, "c": 0.3, "d": 0.05, "e": 0.2}
    rows = [{"config_id": k, "value": v} for k, v in values.items()]
    out = _headline("fail_faster", rows, {k: k.upper() for k in values})
    assert out["value"] == -0.5
    assert out["text"].startswith("5 configs ")
    largest = out["text"].split("largest: ")[1]
    assert [name.split("'")[1] for name in largest.split(", ")] == ["B", "C", "E"]


def test_validation_charged_on_no_row_says_nothing():
    row = {C.VALIDATION_CHARGED: 0, C.VALIDATION_CHANGED: None}
    assert findings_module.validation_not_comparable(row, bare_context()) is None


def test_validation_numbers_need_both_the_accuracy_and_the_reward():
    row = {C.VALIDATION_CHARGED: 4, C.VALIDATION_CHANGED: 2, C.VALIDATION_REWARD: 0.5}
    found = findings_module.validation_not_comparable(row, bare_context())
    assert found.value is None
    assert "validation/total_reward/mean is" not in found.text
    both = findings_module.validation_not_comparable(
        row | {C.VALIDATION_ACCURACY: 0.6}, bare_context()
    )
    assert both.value == pytest.approx(-0.1)
    assert "is 0.5 against a raw accuracy of 0.6" in both.text


def test_a_forecast_at_the_rules_share_exactly_is_no_drift():
    at = _drifting(Rule().min_resolve_vs_off_long)
    assert forecast_drift(at, bare_context()) is None


def test_no_top_groups_gives_no_tops():
    assert findings_module._tops(None) == {}
    assert findings_module._tops(pl.DataFrame(schema={"config_id": pl.String})) == {}


@pytest.mark.parametrize("odd", [_masked_odd_row, _gate_odd_row])
def test_the_reset_cause_needs_a_zeroed_row_not_just_item_2(odd):
    """Internal item 2 on, but the uncharged-only groups' odd rows are masked or gated, never
    zeroed: the reset is not among the causes."""
    result = replay_frame(_groups(odd), GATE | {"semantics": "internal", "internal_items": [2]})
    summary = result.result.summary.row(0, named=True)
    assert summary["signal/uncharged_only_rate"] == 1.0
    assert summary["signal/uncharged_only_reset_rate"] == 0.0
    (text,) = texts(result, "uncharged_only_signal")
    assert "zeroing penalty" not in text


def test_the_explosion_headline_is_true_without_a_clip():
    """Configs without a clip train on what they compute: their headline names no clip as
    having acted, and says the count and the largest values."""
    rows = [{"config_id": k, "value": v} for k, v in {"a": 65.5, "b": 59.6, "c": 30.0}.items()]
    out = _headline("explosion_unbounded", rows, {"a": "λ=1/60 all", "b": "B", "c": "C"})
    assert "after the clip" not in out["text"]
    assert out["text"].startswith(
        "3 configs train on |advantage| > 3 (after their clip, where they have one); largest: "
        "'λ=1/60 all' (65.5)"
    )
