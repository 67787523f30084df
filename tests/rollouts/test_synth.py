"""Tests for replay_cli.rollouts.synth: the demo's log is the first stretch of a training run (a
pool of named problems, success rising where groups split, long successes taking longer), and the
synthetic rollouts of the existing arguments stay what they were."""

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from replay_cli import api
from replay_cli import schema as S
from replay_cli.rollouts.synth import STEPS_PER_BATCH, synth_batches, synth_rollouts

MEDIUM = Path(__file__).resolve().parents[2] / "data_samples" / "rollouts_medium.parquet"
TRAIN = pl.col(S.SPLIT) == S.SPLIT_TRAIN


def test_the_existing_arguments_draw_what_they_drew():
    # data_samples/regenerate.py writes the medium sample from these arguments.
    medium = synth_rollouts(steps=12, groups_per_step=48, group_size=8, validation_groups=8, seed=7)
    assert medium.equals(pl.read_parquet(MEDIUM))
    assert S.INSTANCE_ID not in medium.columns


def test_a_pool_as_large_as_a_step_logs_every_problem_at_every_step():
    frame = synth_rollouts(steps=5, groups_per_step=6, group_size=4, seed=1, problems=6)
    train = frame.filter(TRAIN)
    assert train.schema[S.INSTANCE_ID] == pl.String
    per = train.group_by(S.INSTANCE_ID).agg(
        pl.col(S.STEP).unique().sort().alias("steps"), pl.len().alias("rows")
    )
    assert sorted(per[S.INSTANCE_ID]) == [f"synth-{i:04d}" for i in range(6)]
    assert per["steps"].to_list() == [[1, 2, 3, 4, 5]] * 6
    assert per["rows"].to_list() == [5 * 4] * 6
    # One problem per group: a group's rows name one problem.
    assert (
        train.group_by(S.STEP, S.GROUP_ID)
        .agg(pl.col(S.INSTANCE_ID).n_unique())[S.INSTANCE_ID]
        .to_list()
        == [1] * 30
    )


def test_the_demo_log_names_192_problems_each_at_every_fourth_of_its_12_steps():
    frame = synth_rollouts(**api.DEMO_LOG)
    train = frame.filter(TRAIN)
    per = train.group_by(S.INSTANCE_ID).agg(
        pl.col(S.STEP).unique().sort().alias("steps"), pl.len().alias("rows")
    )
    assert per.height == 192
    # An epoch every 4 steps: the start window (steps 1-4) and the last 4 steps log every problem.
    assert {tuple(s) for s in per["steps"].to_list()} == {(k, k + 4, k + 8) for k in range(1, 5)}
    assert per["rows"].to_list() == [3 * 8] * 192
    # Validation rows as without a pool: 8 single rollouts a step, naming no problem.
    val = frame.filter(~TRAIN)
    assert val.height == 12 * 8
    assert val[S.INSTANCE_ID].null_count() == val.height


def _rate(rows: pl.DataFrame) -> tuple[float, int]:
    return float(rows[S.RESOLVED].mean()), rows.height


def test_success_rises_on_the_problems_that_split_their_groups():
    def rise(drift: float) -> tuple[float, float]:
        train = synth_rollouts(**{**api.DEMO_LOG, "success_drift": drift}).filter(TRAIN)
        rates = train.group_by(S.INSTANCE_ID).agg(pl.col(S.RESOLVED).mean().alias("p"))
        between = rates.filter(pl.col("p").is_between(0.1, 0.9))[S.INSTANCE_ID]
        mine = train.filter(pl.col(S.INSTANCE_ID).is_in(between.implode()))
        (p0, n0), (p1, n1) = (
            _rate(mine.filter(pl.col(S.STEP) <= 4)),
            _rate(mine.filter(pl.col(S.STEP) >= 9)),
        )
        return p1 - p0, float(np.sqrt(p0 * (1 - p0) / n0 + p1 * (1 - p1) / n1))

    gained, noise = rise(api.DEMO_LOG["success_drift"])
    assert gained > 2 * noise
    assert gained == pytest.approx(0.082, abs=0.001)
    # The same draws without the drift: no such rise (the rise is the drift's).
    flat, _ = rise(0.0)
    assert flat < noise
    assert gained - flat > 0.05


def test_long_successes_take_longer_each_step_and_failures_keep_their_pace():
    kw = {**api.DEMO_LOG, "missing_run_time_frac": 0.0}
    slower = synth_rollouts(**kw).filter(TRAIN)
    steady = synth_rollouts(**{**kw, "effort_drift": 0.0}).filter(TRAIN)
    assert slower[S.RESOLVED].equals(steady[S.RESOLVED] & ~slower["agent_timed_out"])
    ratio = (slower[S.RUN_TIME] / steady[S.RUN_TIME]).to_numpy()
    step = slower[S.STEP].to_numpy()
    success = steady[S.RESOLVED].to_numpy() & slower[S.RESOLVED].to_numpy()
    failure = ~steady[S.RESOLVED].to_numpy() & ~steady["agent_timed_out"].to_numpy()
    np.testing.assert_array_equal(ratio[failure], 1.0)
    grown = ratio[success] > 1.0 + 1e-4
    drift = 1.0 + api.DEMO_LOG["effort_drift"] * (step[success] - 1)
    np.testing.assert_allclose(ratio[success][grown], drift[grown], rtol=2e-3)
    np.testing.assert_allclose(ratio[success][~grown], 1.0, atol=1e-4)
    # Only the pool's longest third grows, and never at the first step.
    long = slower.filter(pl.Series(success))[S.INSTANCE_ID].filter(pl.Series(grown)).n_unique()
    assert 0 < long <= 64
    assert (step[success][grown] > 1).all()


def test_a_pool_spans_one_batch_of_steps():
    with pytest.raises(ValueError, match="at most 64 steps"):
        next(synth_batches(steps=STEPS_PER_BATCH + 1, groups_per_step=2, problems=2))
    first = next(synth_batches(steps=3, groups_per_step=4, group_size=2, problems=4, seed=2))
    assert first.equals(
        synth_rollouts(steps=3, groups_per_step=4, group_size=2, problems=4, seed=2)
    )
