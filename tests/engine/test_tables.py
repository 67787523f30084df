"""Tests for replay_cli.engine.tables: trainer metric names and values, granularities and diagnostics."""

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_cli.engine.diagnostics import quantiles
from replay_cli.engine.pushes import length_bucket, length_edges
from replay_cli.engine.run import run_replay
from replay_cli.report.options import ReportOptions
from replay_cli.rollouts.validation import rollouts_from_frame

from factories import config, replay_rows, rollouts

NO_FORECAST = ReportOptions(forecast=None)
"""The tables' tests read the rows, groups and diagnostics: the forecast is not theirs to pay for."""


def one_group():
    return rollouts(
        reward=[1.0, 1.0, 0.0, 0.0],
        openhands_run_time=[600.0, 1200.0, 1800.0, 2400.0],
        mask_sample=[False, False, False, True],
        calls=[10, 20, 30, 40],
    )


def test_trainer_metrics_of_one_group():
    step = replay_rows(one_group(), {}).steps.row(0, named=True)
    assert step["time_efficiency/minutes/mean"] == pytest.approx(25.0)
    assert step["time_efficiency/minutes/max"] == pytest.approx(40.0)
    # The masked row is not charged but its minutes count, and it divides the mean.
    assert step["time_efficiency/deduction/mean"] == pytest.approx((1 / 6 + 1 / 3 + 1 / 2) / 4)
    assert step["time_efficiency/deduction/max"] == pytest.approx(0.5)
    assert step["time_efficiency/calls/mean"] == pytest.approx(25.0)
    assert step["time_efficiency/seconds_per_call"] == pytest.approx(60.0)
    assert step["time_efficiency/group_has_signal"] == 1.0
    assert step["time_efficiency/floored_frac"] == 0.0
    assert step["total_reward/mean"] == pytest.approx((5 / 6 + 2 / 3 - 0.5 + 0.0) / 4)


def test_seconds_per_call_guards_zero_calls():
    step = replay_rows(rollouts(reward=[1.0], calls=[0], openhands_run_time=[120.0]), {}).steps.row(
        0, named=True
    )
    assert step["time_efficiency/seconds_per_call"] == pytest.approx(120.0)


def test_bonus_metrics():
    frame = rollouts(reward=[1.0, 1.0], calls=[28, 100])
    step = replay_rows(frame, {"lambda_call_bonus": 0.1, "call_bonus_ref": 56.0}).steps.row(
        0, named=True
    )
    assert step["time_efficiency/bonus/mean"] == pytest.approx(0.075)
    assert step["time_efficiency/bonus_saturated_frac"] == pytest.approx(0.5)


def test_group_has_signal_needs_two_trainable_rows():
    frame = rollouts(
        reward=[0.0, 0.0], openhands_run_time=[60.0, 1800.0], mask_sample=[False, True]
    )
    step = replay_rows(frame, {}).steps.row(0, named=True)
    assert step["time_efficiency/group_has_signal"] == 0.0


def test_skipped_correct_rows_count_as_trainable_zero():
    frame = rollouts(reward=[1.0, 0.0], openhands_run_time=[600.0, 600.0])
    step = replay_rows(frame, {"apply_to": "correct"}).steps.row(0, named=True)
    assert step["time_efficiency/group_has_signal"] == 1.0


def test_internal_names_and_wall_time_signal():
    frame = rollouts(
        reward=[0.0, 0.0], openhands_run_time=[60.0, 1800.0], mask_sample=[False, True]
    )
    step = replay_rows(frame, {"semantics": "internal"}).steps.row(0, named=True)
    assert "time_efficiency/minutes/mean" not in step
    assert step["time_efficiency/minutes_mean"] == pytest.approx(15.5)
    assert step["time_efficiency/minutes_max"] == pytest.approx(30.0)
    assert step["time_efficiency/deduction_max"] == pytest.approx(0.5)
    assert step["time_efficiency/group_has_signal"] == 1.0


def two_groups():
    return rollouts(
        reward=[0.0] * 6,
        group_id=[0, 0, 1, 1, 1, 1],
        openhands_run_time=[600.0, 600.0, 2400.0, 2400.0, 2400.0, 2400.0],
    )


def test_group_granularity_averages_group_values_and_maxes_max_keys():
    step = replay_rows(two_groups(), {}, metrics_by="group").steps.row(0, named=True)
    assert step["time_efficiency/minutes/mean"] == pytest.approx(25.0)
    assert step["time_efficiency/minutes/max"] == pytest.approx(40.0)
    assert step["time_efficiency/group_has_signal"] == 0.0


def test_batch_granularity_treats_the_step_as_one_group():
    step = replay_rows(two_groups(), {}, metrics_by="batch").steps.row(0, named=True)
    assert step["time_efficiency/minutes/mean"] == pytest.approx(30.0)
    assert step["time_efficiency/group_has_signal"] == 1.0


def test_internal_max_names_are_averaged_across_groups():
    step = replay_rows(two_groups(), {"semantics": "internal"}, metrics_by="group").steps.row(
        0, named=True
    )
    assert step["time_efficiency/minutes_max"] == pytest.approx(25.0)


def test_summary_takes_max_of_max_curves_and_mean_of_the_rest():
    frame = rollouts(
        reward=[0.0, 0.0], step=[1, 2], group_id=[0, 1], openhands_run_time=[600.0, 1800.0]
    )
    summary = replay_rows(frame, {}).summary.row(0, named=True)
    assert summary["time_efficiency/minutes/max"] == pytest.approx(30.0)
    assert summary["time_efficiency/minutes/mean"] == pytest.approx(20.0)


def test_inversions_and_pairs():
    frame = rollouts(reward=[1.0, 1.0, 0.0, 0.0], openhands_run_time=[5400.0, 1800.0, 0.0, 0.0])
    summary = replay_rows(frame, {"apply_to": "correct"}).summary.row(0, named=True)
    assert summary["inversion/group_rate"] == 1.0
    assert summary["inversion/pair_rate"] == pytest.approx(0.5)


def test_ties_are_not_inversions():
    frame = rollouts(reward=[1.0, 0.0], resolved=[True, False], openhands_run_time=[3600.0, 0.0])
    summary = replay_rows(frame, {"apply_to": "correct"}).summary.row(0, named=True)
    assert summary["inversion/pair_rate"] == 0.0


def test_time_only_signal_in_an_all_fail_group():
    frame = rollouts(reward=[0.0, 0.0, 0.0, 0.0], openhands_run_time=[600.0, 900.0, 1200.0, 1500.0])
    summary = replay_rows(frame, {}).summary.row(0, named=True)
    assert summary["signal/group_rate"] == 1.0
    assert summary["signal/group_rate_raw"] == 0.0
    assert summary["signal/time_only_rate"] == 1.0
    assert summary["groups/all_fail"] == 1.0


def test_group_patterns():
    frame = rollouts(reward=[1.0, 1.0, 1.0, 0.0, 0.0, 0.0], group_id=[0, 0, 1, 1, 2, 2])
    summary = replay_rows(frame, {}).summary.row(0, named=True)
    assert (
        summary["groups/all_pass"],
        summary["groups/mixed"],
        summary["groups/all_fail"],
    ) == pytest.approx((1 / 3, 1 / 3, 1 / 3))


def test_masked_shift():
    frame = rollouts(reward=[1.0, 0.0, 0.0, 0.0], mask_sample=[False, False, False, True])
    summary = replay_rows(frame, {"enabled": False}).summary.row(0, named=True)
    assert summary["baseline/masked_shift"] == pytest.approx(1 / 9, abs=1e-6)


def test_clip_and_explosion_fractions():
    frame = rollouts(reward=[1.0, 1.0, 1.0, 1.0], openhands_run_time=[600.0, 610.0, 620.0, 3000.0])
    summary = replay_rows(frame, {}, {"clip_low": -3.0, "clip_high": 3.0}).summary.row(
        0, named=True
    )
    assert summary["adv/abs_max"] == 3.0
    assert summary["adv/explosion_frac"] > 0
    assert summary["adv/clip_frac"] == summary["adv/explosion_frac"]


def test_fragile_std_flags_tiny_normalising_std():
    # float64: in float32 the E[x^2] - E[x]^2 form cancels a spread this small to std 0, as torch
    # does, so the outer rows' exact ±1.96 are ±2.5e-5 on every platform. The middle row's exact
    # advantage is 0 and its float32 one within 2e-4 of it: not platform-dependent at 1e-3.
    frame = rollouts(reward=[1.0, 1.0, 1.0], openhands_run_time=[600.0, 600.06, 600.12])
    summary = replay_rows(frame, {}, {"precision": "float64"}).summary.row(0, named=True)
    assert summary["adv/fragile_std_frac"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("estimator", ["trl-grpo", "verl-grpo"])
def test_peer_estimators_flag_a_tiny_std_but_not_a_tied_group(estimator):
    tiny = rollouts(reward=[1.0, 1.0, 1.0], openhands_run_time=[600.0, 600.06, 600.12])
    summary = replay_rows(tiny, {}, {"estimator": estimator}).summary.row(0, named=True)
    assert summary["adv/fragile_std_frac"] == 1.0
    tied = rollouts(reward=[0.0, 0.0, 0.0], openhands_run_time=[600.0, 900.0, 1200.0])
    summary = replay_rows(tied, {"enabled": False}, {"estimator": estimator}).summary
    assert summary["adv/fragile_std_frac"][0] == 0.0


def test_sign_flip():
    # Raw: the resolved row is ahead. Shaped with a steep lambda under 'correct' it falls below the failures.
    frame = rollouts(reward=[1.0, 0.0, 0.0], openhands_run_time=[7200.0, 60.0, 60.0])
    summary = replay_rows(frame, {"apply_to": "correct"}).summary.row(0, named=True)
    assert summary["adv/sign_flip_frac"] == 1.0


def test_resolved_and_unresolved_means():
    summary = replay_rows(rollouts(reward=[1.0, 0.0]), {"enabled": False}).summary.row(
        0, named=True
    )
    assert summary["adv/resolved_mean"] == 1.0
    assert summary["adv/unresolved_mean"] == -1.0


def test_input_stats():
    frame = rollouts(
        reward=[1.0, 0.0, 0.0],
        mask_sample=[False, True, False],
        split=["train", "train", "validation"],
    )
    summary = replay_rows(frame, {}).summary.row(0, named=True)
    assert summary["input/rows"] == 3
    assert summary["input/validation_rows"] == 1
    assert summary["input/masked_frac"] == 0.5
    assert summary["input/groups"] == 1


@pytest.mark.parametrize("dtype", [pl.Float64, pl.Float32])
@pytest.mark.parametrize("n", [1, 2, 3, 10, 101, 1000])
def test_quantiles_equal_polars_linear_interpolation(n, dtype):
    values = pl.Series(np.random.default_rng(n).normal(size=n) * 3.0).cast(dtype)
    values = pl.concat([values, values.head(n // 3)])  # ties
    qs = {"p01": 0.01, "p05": 0.05, "p50": 0.5, "p95": 0.95, "p99": 0.99, "max": 1.0, "min": 0.0}
    before = values.to_list()
    got = quantiles(values, qs)
    assert values.to_list() == before, "the input is partitioned in a copy, never in place"
    # float32 values are interpolated in float64, as over the exact float64 copies.
    exact = values.cast(pl.Float64)
    assert got == {k: exact.quantile(q, interpolation="linear") for k, q in qs.items()}


def test_quantiles_of_nothing_are_null():
    assert quantiles(pl.Series([], dtype=pl.Float64), {"p50": 0.5}) == {"p50": None}


def test_summary_quantiles_are_those_of_trainable_advantages_and_finite_run_times(synth_path):
    from replay_cli import api
    from replay_cli.rollouts.validation import load_rollouts

    from factories import config

    rollouts = load_rollouts([synth_path])
    result = api.replay(rollouts, [config({"apply_to": "correct"})], NO_FORECAST).result
    summary = result.summary.row(0, named=True)
    rows = result.rows
    trainable = rows.filter((pl.col("split") != "validation") & ~pl.col("masked") & pl.col("kept"))[
        "advantage"
    ]
    for key, q in {"p01": 0.01, "p05": 0.05, "p50": 0.5, "p95": 0.95, "p99": 0.99}.items():
        assert summary[f"adv/{key}"] == trainable.quantile(q, interpolation="linear"), key
    # Run times are kept as float32 values (half the memory); quantiles interpolate in float64.
    run_times = rows["openhands_run_time"].cast(pl.Float32).cast(pl.Float64)
    finite = run_times.filter(run_times.is_finite())
    assert summary["input/run_time_p90"] == finite.quantile(0.9, interpolation="linear")
    assert summary["input/run_time_max"] == finite.max()


@settings(max_examples=40, deadline=None)
@given(
    resolved=st.lists(st.booleans(), min_size=2, max_size=8),
    seconds=st.lists(st.floats(0.0, 3600.0), min_size=8, max_size=8),
    lam=st.sampled_from([1 / 120, 1 / 60, 1 / 15]),
)
def test_pushes_split_the_minutes_covariance_and_vanish_among_tied_outcomes(resolved, seconds, lam):
    """The three minutes pushes add up to the group's whole covariance of the trained advantage
    with minutes; with shaping off and a binary reward, the within-outcome parts are 0."""
    n = len(resolved)
    frame = rollouts(reward=[1.0 if r else 0.0 for r in resolved], openhands_run_time=seconds[:n])
    result = replay_rows(frame, {"lambda_time": lam}, {"precision": "float64"})
    rows = result.rows.sort("rollout_index")
    a = np.nan_to_num(rows["advantage"].to_numpy().astype(float))
    m = rows["minutes"].to_numpy()
    group = result.groups.row(0, named=True)
    whole = float((a * (m - m.mean())).sum() / n)
    parts = group["push_minutes_fail"] + group["push_minutes_pass"] + group["push_minutes_between"]
    assert parts == pytest.approx(whole, rel=1e-9, abs=1e-9)
    assert group["push_minutes_fail_off"] == pytest.approx(0.0, abs=1e-12)
    assert group["push_minutes_pass_off"] == pytest.approx(0.0, abs=1e-12)


def test_group_has_signal_counts_the_unmasked_rows_whose_deductions_differ():
    # Two unmasked rows with different deductions beside a masked one: a signal, in either
    # semantics (the internal one looks at any spread of minutes), per group and per batch (the
    # validation group makes the batch a subset of the step's rows).
    frame = rollouts(
        reward=[0.0] * 5,
        openhands_run_time=[60.0, 1800.0, 600.0, 60.0, 60.0],
        mask_sample=[0, 0, 1, 0, 0],
        group_id=[0, 0, 0, 1, 1],
        split=["train"] * 3 + ["validation"] * 2,
    )
    for semantics in ("nemo-rl", "internal"):
        for by in ("group", "batch"):
            result = replay_rows(frame, {"semantics": semantics}, metrics_by=by)
            step = result.steps.row(0, named=True)
            assert step["time_efficiency/group_has_signal"] == 1.0, (semantics, by)


@pytest.mark.parametrize(("seconds", "signal"), [(6e-5, 0.0), (1.2e-4, 1.0)])
def test_a_spread_of_exactly_the_signal_epsilon_is_no_signal(seconds, signal):
    # lambda 1 per minute: deductions 0 and 1e-6 (exactly SIGNAL_EPS) or 2e-6.
    frame = rollouts(reward=[0.0, 0.0], openhands_run_time=[0.0, seconds])
    for semantics in ("nemo-rl", "internal"):
        shaping = {"semantics": semantics, "lambda_time": 1.0}
        step = replay_rows(frame, shaping).steps.row(0, named=True)
        assert step["time_efficiency/group_has_signal"] == signal, semantics


def test_a_tie_in_the_raw_rewards_is_no_inversion_with_shaping_off():
    frame = rollouts(
        reward=[0.5, 0.5, 1.0, 0.5], resolved=[True, False, True, False], group_id=[0, 0, 1, 1]
    )
    groups = replay_rows(frame, {"enabled": False}).groups.sort("group_id")
    assert groups["inverted_off"].to_list() == [False, False]
    inverted = rollouts(reward=[0.4, 0.5], resolved=[True, False])
    assert replay_rows(inverted, {"enabled": False}).groups["inverted_off"].to_list() == [True]


def test_explosion_frac_is_the_share_of_trainable_rows_beyond_three():
    frame = rollouts(
        reward=[1.0] * 4 + [1.0, 0.0, 0.0, 0.0, 0.0],
        group_id=[0] * 4 + [1] * 5,
        openhands_run_time=[600.0, 610.0, 620.0, 3000.0] + [600.0] * 5,
        mask_sample=[False] * 8 + [True],
    )
    result = replay_rows(frame, {}, {"precision": "float64"})
    trainable = trainable_rows(result)
    want = (trainable["advantage_unclipped"].abs() > 3).sum() / trainable.height
    assert 0 < want < 0.5
    assert result.steps["adv/explosion_frac"][0] == pytest.approx(want)
    assert result.summary["adv/explosion_frac"][0] == pytest.approx(want)


def test_uncharged_only_signal_when_the_uncharged_rows_mirror_the_floor():
    # Raw rewards all 0.25 (no signal); charged rows floored to -0.25, the masked row (voting)
    # keeps 0.25: the only spread is between charged and uncharged rows, whatever their signs.
    frame = rollouts(
        reward=[0.25] * 4,
        resolved=[False] * 4,
        mask_sample=[False, False, False, True],
        openhands_run_time=[600.0, 1200.0, 1800.0, 600.0],
    )
    result = replay_rows(frame, {"lambda_time": 1 / 10, "floor": -0.25}, {"exclude_masked": False})
    assert result.rows["reward_shaped"].to_list() == [-0.25, -0.25, -0.25, 0.25]
    assert result.groups["time_only_signal"].to_list() == [True]
    assert result.groups["uncharged_only_signal"].to_list() == [True]


# ---- summary diagnostics recomputed from the per-row report -------------------------------------


def trainable_rows(result):
    return result.rows.filter(
        ~pl.col("masked") & pl.col("kept") & (pl.col("split") != "validation")
    )


def platform_sides(rows):
    """Per row, the least and largest |A| any platform can give (numpy, from the row's bound)."""
    adv = rows["advantage"].to_numpy()
    unc = rows["advantage_unclipped"].to_numpy()
    bound = rows["advantage_f32_bound"].to_numpy()
    free = adv == unc
    low = np.where(free, np.maximum(np.abs(adv) - bound, 0.0), np.abs(adv))
    high = np.where(free, np.abs(adv) + bound, np.abs(adv))
    return low, high


def test_extremes_over_chunks_are_the_extremes_of_all_rows():
    # Four steps replayed one chunk each: the summary's min, max and platform sides are those
    # of every trainable row, not of one chunk.
    rng = np.random.default_rng(3)
    n = 4 * 3 * 6
    frame = rollouts(
        reward=rng.choice([0.0, 1.0], n).tolist(),
        openhands_run_time=rng.uniform(60, 3600, n).tolist(),
        step=np.repeat(np.arange(1, 5), 18).tolist(),
        group_id=np.repeat(np.arange(12), 6).tolist(),
        mask_sample=(rng.random(n) < 0.1).tolist(),
    )
    cfg = config({"lambda_time": 1 / 30})
    result = run_replay(rollouts_from_frame(frame), [cfg], chunk_rows=18)
    rows = trainable_rows(result)
    low, high = platform_sides(rows)
    s = result.summary.row(0, named=True)
    adv = rows["advantage"]
    assert s["adv/min"] == adv.min()
    assert s["adv/max"] == adv.max()
    assert s["adv/abs_max"] == adv.abs().max()
    assert s["adv/abs_max_low"] == pytest.approx(low.max(), rel=1e-12)
    assert s["adv/abs_max_high"] == pytest.approx(high.max(), rel=1e-12)
    per_step = rows.group_by("step").agg(pl.col("advantage").abs().max())["advantage"]
    assert per_step.n_unique() > 1  # the chunks' extremes differ, so a wrong fold shows


@pytest.mark.parametrize("clip", [None, 3.0])
def test_explosions_certain_and_possible_from_the_rounding_bound(clip):
    # Two successes among 14 failures (each success |A| 3.6, exact sums: bound 0) and, under the
    # legacy guard, the residue group [0] + [0.95]*7 (a bound of thousands): certain counts rows
    # past 3 on every platform, possible rows past 3 on some; a clip bounds the side it caps.
    frame = rollouts(
        reward=[1.0, 1.0] + [0.0] * 14 + [0.0] + [0.95] * 7,
        resolved=[True, True] + [False] * 22,
        group_id=[0] * 16 + [1] * 8,
    )
    advantage = {"std_guard": "legacy"}
    if clip is not None:
        advantage |= {"clip_low": -clip, "clip_high": clip}
    result = replay_rows(frame, {"enabled": False}, advantage)
    rows = trainable_rows(result)
    low, high = platform_sides(rows)
    s = result.summary.row(0, named=True)
    assert s["adv/explosion_certain_frac"] == pytest.approx((low > 3).mean())
    assert s["adv/explosion_possible_frac"] == pytest.approx((high > 3).mean())
    assert s["adv/abs_max_low"] == pytest.approx(low.max())
    assert s["adv/abs_max_high"] == pytest.approx(high.max())
    assert (low > 3).sum() == (0 if clip else 2)
    assert (high > 3).sum() == (low > 3).sum() + 1  # the residue row


def test_gained_lost_and_floor_tie_rates():
    # Group 0: all pass at different times (gained). Group 1: a success and a failure that both
    # end on the floor (lost, and a tie in a mixed group). Group 2: all pass on the floor.
    frame = rollouts(
        reward=[1.0, 1.0, 1.0, 0.0, 1.0, 1.0],
        group_id=[0, 0, 1, 1, 2, 2],
        openhands_run_time=[6.0, 30.0, 6000.0, 60.0, 600.0, 600.0],
    )
    result = replay_rows(frame, {"lambda_time": 1.0, "floor": 0.0}, {"precision": "float64"})
    groups = result.groups.sort("group_id")
    s = result.summary.row(0, named=True)
    assert groups["floor_tie"].to_list() == [False, True, False]
    assert s["signal/gained_rate"] == pytest.approx(1 / 3)
    assert s["signal/lost_rate"] == pytest.approx(1 / 3)
    assert s["floor/tie_group_rate"] == pytest.approx(1 / 3)
    assert s["floor/tie_mixed_rate"] == 1.0


def test_resolve_push_as_a_share_of_shaping_offs():
    frame = rollouts(
        reward=[1.0, 0.0, 0.0, 1.0, 1.0, 0.0],
        group_id=[0, 0, 0, 1, 1, 1],
        openhands_run_time=[3000.0, 60.0, 600.0, 60.0, 2400.0, 600.0],
    )
    s = replay_rows(frame, {"lambda_time": 1 / 60}, {"precision": "float64"}).summary
    s = s.row(0, named=True)
    assert s["push/resolve_off"] > 0
    assert s["push/resolve"] != pytest.approx(s["push/resolve_off"])
    assert s["push/resolve_vs_off"] == pytest.approx(s["push/resolve"] / s["push/resolve_off"])


def test_length_buckets_put_a_median_on_an_edge_in_the_lower_bucket():
    medians = np.array([1.0, 2.0, 3.0, 4.0])
    edges = length_edges(medians)
    assert edges == (2.0, 3.0)
    assert length_bucket(medians, edges).tolist() == [0, 0, 1, 2]
    assert length_edges(np.array([])) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("shaping", "advantage"),
    [
        ({"lambda_time": 1 / 5, "apply_to": "correct"}, {}),
        ({"lambda_time": 1 / 5}, {"clip_low": -3.0, "clip_high": 3.0}),
        ({"lambda_time": 1 / 5}, {"estimator": "verl-rloo"}),
        ({"lambda_time": 1 / 5}, {"estimator": "trl-grpo"}),
        ({"enabled": False}, {"estimator": "trl-grpo"}),
        ({"enabled": False}, {"estimator": "verl-grpo", "normalize": False}),
    ],
)
def test_row_diagnostics_recomputed_from_the_rows(synth_path, shaping, advantage):
    """adv/mean, the sign flips and the fragile share, recomputed from the per-row table with
    numpy (rows whose shaping-off advantage is 0 flip nothing; peer estimators use the std rule)."""
    from replay_cli import api
    from replay_cli.rollouts.validation import load_rollouts

    result = api.replay(
        load_rollouts([synth_path]), [config(shaping, advantage)], NO_FORECAST
    ).result
    rows, summary = result.rows, result.summary.row(0, named=True)
    t = (
        (rows["split"] == "train")
        & ~rows["masked"]
        & rows["kept"]
        & rows["advantage"].is_not_null()
    ).to_numpy()
    adv = rows["advantage"].to_numpy()[t]
    raw = rows["advantage_raw"].to_numpy()[t]
    assert summary["adv/mean"] == pytest.approx(adv.mean(), rel=1e-12, abs=1e-15)
    flipped = (np.abs(adv) > 1e-6) & (np.abs(raw) > 1e-6) & (np.sign(adv) != np.sign(raw))
    assert summary["adv/sign_flip_frac"] == pytest.approx(flipped.mean())
    if shaping.get("enabled", True):
        assert 0 < flipped.mean() < 1
        assert ((np.abs(raw) <= 1e-6) & (np.abs(adv) > 1e-6)).any()  # rows that must not count
    if advantage.get("estimator", "grpo") != "grpo":
        std = rows["std"].fill_null(0.0).to_numpy()[t]  # no std (not normalised): 0, as the engine
        normalized = rows["normalized"].to_numpy()[t]
        equal = rows["peers_all_equal"].to_numpy()[t]
        fragile = normalized & (std > 0) & ((std < 1e-3) | equal)
        assert summary["adv/fragile_std_frac"] == pytest.approx(fragile.mean())
        if not shaping.get("enabled", True):  # tied groups: equal peers, std 0, not fragile
            assert (equal & (std == 0)).any()
            assert summary["adv/fragile_std_frac"] == 0.0


def test_std_at_max_is_the_std_of_the_rows_at_the_groups_largest_unclipped_advantage(synth_path):
    from replay_cli import api
    from replay_cli.rollouts.validation import load_rollouts

    cfg = config({"lambda_time": 1 / 5}, {"clip_low": -3.0, "clip_high": 3.0})
    result = api.replay(load_rollouts([synth_path]), [cfg], NO_FORECAST).result
    rows = result.rows.filter(
        (pl.col("split") == "train") & ~pl.col("masked") & pl.col("kept")
    ).with_columns(pl.col("advantage_unclipped").abs().alias("u"))
    expected = {}
    for (step, gid), g in rows.group_by("step", "group_id"):
        top = g.filter(pl.col("u") == pl.col("u").max())
        divided = top.filter(pl.col("normalized"))["std"]
        expected[(step, gid)] = divided.min() if len(divided) else None
    keyed = result.groups.select("step", "group_id", "std_at_max_abs").iter_rows()
    got = {(step, gid): std for step, gid, std in keyed}
    assert got == pytest.approx(expected)
    # A lone success kept undivided (its peers are equal) is the group's largest |A|: no std
    # divided it, though its siblings were divided (a reduction over every row would say one).
    lone = replay_rows(rollouts(reward=[1.0, 0.0, 0.0, 0.0]), {"enabled": False})
    assert lone.groups["std_at_max_abs"].to_list() == [None]
    assert lone.rows["normalized"].to_list() == [False, True, True, True]
