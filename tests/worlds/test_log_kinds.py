"""The worlds' log kinds and the overthinking world hold to their definitions (issue 53 item 9):
a run48 log begins with the run12 log; a fixed log shares the run's random numbers but its
steps come from one policy, so its level shares and resolve rate do not drift beyond noise,
where a run's do; the overthinking world's effort changes sign with length, and so do its
run's drift and what shaping costs. The simulator alone: the tool is not called."""

import math

import numpy as np
import polars as pl
import pytest

from worlds import world as W

WORLDS = list(W.WORLDS)


def _steps(log: pl.DataFrame, upto: int) -> pl.DataFrame:
    return log.filter(pl.col("step") < upto)


@pytest.mark.parametrize("name", WORLDS)
def test_a_run48_log_begins_with_the_run12_log_and_a_fixed_log_with_its_first_step(name):
    world = W.WORLDS[name]
    run12 = W.world_log(world, "run12", seed=3)
    run48 = W.world_log(world, "run48", seed=3)
    fixed = W.world_log(world, "fixed", seed=3)
    assert run48["step"].n_unique() == 48
    assert _steps(run48, 12).equals(run12)
    assert fixed.shape == run12.shape  # as many rows: the kinds differ only by the drift
    assert fixed["step"].n_unique() == 12
    # the same random numbers: the same problems each step, and step 0 identical
    assert fixed["instance_id"].to_list() == run12["instance_id"].to_list()
    assert _steps(fixed, 1).equals(_steps(run12, 1))
    # later steps differ, because the run's policy moved and the fixed one did not
    assert not fixed.equals(run12)


def _trend(per_step: np.ndarray) -> float:
    """The least-squares slope of a per-step series over its step, in standard errors (the
    residuals' spread: problems drawn each step make a step's value noisier than binomial)."""
    t = np.arange(len(per_step), dtype=float)
    slope, intercept = np.polyfit(t, per_step, 1)
    resid = per_step - (intercept + slope * t)
    se = math.sqrt(resid @ resid / (len(t) - 2) / ((t - t.mean()) @ (t - t.mean())))
    return float(slope / se)


def _long_run_share(world: W.World, log: pl.DataFrame, bucket: int | None = None) -> np.ndarray:
    """Per step, the share of rollouts in the top run-time level: over the log's third of
    longest runs within each problem's length bucket (the simulator's)."""
    buckets = W.problems(world).bucket
    problem = np.array([int(i.rsplit("-", 1)[1]) for i in log["instance_id"]])
    b = buckets[problem]
    minutes = log["openhands_run_time"].to_numpy()
    top = np.zeros(len(log), bool)
    for k in range(3):
        mine = b == k
        top[mine] = minutes[mine] > np.quantile(minutes[mine], 2 / 3)
    keep = np.ones(len(log), bool) if bucket is None else b == bucket
    step = log["step"].to_numpy()
    return np.array([top[keep & (step == s)].mean() for s in np.unique(step)])


def _resolve(log: pl.DataFrame) -> np.ndarray:
    return log.group_by("step").agg(pl.col("resolved").mean()).sort("step")["resolved"].to_numpy()


@pytest.mark.parametrize("name", WORLDS)
def test_a_fixed_logs_level_shares_and_resolve_rate_do_not_drift_beyond_noise(name):
    world = W.WORLDS[name]
    for log in (W.world_log(world, "fixed", seed=4), W.generate_log(world, 48, 48, 4, True)):
        assert abs(_trend(_long_run_share(world, log))) < 3.0
        assert abs(_trend(_resolve(log))) < 3.0


def test_a_runs_level_shares_and_resolve_rate_do_drift():
    """The drift test above can fail: the run logs of the same seed drift beyond it, longer
    where effort pays, higher where skill grows."""
    pays, skill = W.WORLDS["effort_pays"], W.WORLDS["skill"]
    assert _trend(_long_run_share(pays, W.world_log(pays, "run48", seed=4))) > 3.0
    assert _trend(_resolve(W.world_log(skill, "run48", seed=4))) > 3.0


def test_overthinking_effort_hurts_short_problems_and_pays_on_long_ones():
    world = W.WORLDS["overthinking"]
    pr = W.problems(world)
    quick, thorough = pr.logit[:, 0], pr.logit[:, 2]
    assert (thorough[pr.bucket == 0] < quick[pr.bucket == 0]).all()
    assert (thorough[pr.bucket == 2] > quick[pr.bucket == 2]).all()
    # training without shaping moves short problems to quick work, long ones to thorough work
    start = W.Policy.start(world).probs()
    trained = W.train(world, W.OFF, steps=30, groups=48, seed=0).probs()
    assert trained[0, 0] > start[0, 0] + 0.1
    assert trained[2, 2] > start[2, 2] + 0.1
    # so a run's long-run share falls on short problems and rises on long ones
    log = W.world_log(world, "run48", seed=5)
    assert _trend(_long_run_share(world, log, bucket=0)) < -3.0
    assert _trend(_long_run_share(world, log, bucket=2)) > 3.0


def test_overthinking_shaping_helps_short_problems_while_it_costs_long_ones():
    world = W.WORLDS["overthinking"]
    mild, strong = W.Shaping(lambda_time=1 / 60), W.Shaping(lambda_time=1 / 30)
    truth = W.truth(world, [W.OFF, mild, strong], steps=50, seeds=3)
    assert truth.mean(mild.label, "ratio") > 1.0 > truth.mean(mild.label, "long_ratio")
    assert truth.mean(strong.label, "long_ratio") < 0.7
    assert truth.mean(mild.label, "solve_delta") < 0
