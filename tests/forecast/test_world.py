"""Tests for replay_cli.forecast.world: the metrics per bucket, each seed's own problem sample,
and a sample smaller than the input keeping only the drawn problems' rows."""

import numpy as np
import polars as pl

import replay_cli as rc
from replay_cli.config import ForecastSettings
from replay_cli.rollouts.synth import synth_rollouts

from factories import config, forecast


def test_the_metrics_weigh_each_problem_and_split_the_buckets():
    from replay_cli.forecast.world import metrics

    # Two problems (short, long) with two levels; weights 1 and 3.
    pi = np.array([[0.25, 0.75], [0.5, 0.5]])
    p = np.array([[0.2, 0.6], [0.0, 1.0]])
    m = np.array([[2.0, 10.0], [4.0, 30.0]])
    out = metrics(pi, p, m, np.array([0, 2]), np.array([1.0, 3.0]))
    resolve = np.array([0.25 * 0.2 + 0.75 * 0.6, 0.5])
    solve = np.array([0.25 * 0.2 * 2 + 0.75 * 0.6 * 10, 0.5 * 30])
    fail = np.array([0.25 * 0.8 * 2 + 0.75 * 0.4 * 10, 0.5 * 4])
    w = np.array([1.0, 3.0])
    expect_all = [
        (resolve * w).sum() / 4,
        (solve * w).sum() / (resolve * w).sum(),
        (fail * w).sum() / (4 - (resolve * w).sum()),
        (np.array([0.25, 0.5]) * w).sum() / 4,
    ]
    np.testing.assert_allclose(out[0], expect_all, rtol=1e-12)
    np.testing.assert_allclose(
        out[1], [resolve[0], solve[0] / resolve[0], fail[0] / (1 - resolve[0]), 0.25]
    )
    assert np.isnan(out[2]).all()  # no medium problem
    np.testing.assert_allclose(out[3], [0.5, 30.0, 4.0, 0.5])


def test_each_seed_draws_its_own_problems_up_to_the_bucket_limit():
    from replay_cli.engine.effort_levels import forecast_keys

    medians = pl.LazyFrame({"pid": list(range(30)), "_bucket": [0] * 12 + [1] * 15 + [2] * 3})
    keys = forecast_keys(medians, ["pid"], per_bucket=5, seeds=3, seed=0)
    bucket = dict(zip(range(30), [0] * 12 + [1] * 15 + [2] * 3, strict=True))
    samples = []
    for s in range(3):
        mine = keys.filter((pl.col("_seeds") & (1 << s)) > 0)["pid"].to_list()
        per = [sum(bucket[p] == b for p in mine) for b in range(3)]
        assert per == [5, 5, 3]  # up to 5 per bucket, all 3 of the small one
        samples.append(set(mine))
    assert len({frozenset(x) for x in samples}) == 3  # each seed its own sample
    assert set(keys["pid"]) == set().union(*samples)
    assert (keys["_seeds"] < (1 << 3)).all()


def test_a_sample_smaller_than_the_input_keeps_only_the_drawn_problems_rows():
    """With fewer problems sampled than the input holds, only the drawn groups' rows enter the
    pool (an undrawn group's rows have no problem slot), and the summary says the sample size."""
    rollouts = rc.rollouts_from_frame(
        synth_rollouts(steps=4, groups_per_step=48, group_size=8, seed=5)
    )
    configs = [config({"enabled": False}), config({"apply_to": "all", "lambda_time": 1 / 30})]
    settings = ForecastSettings(steps=3, seeds=2, problems=5, check_budgets=False)
    result = forecast(rollouts, configs, settings)
    row = result.result.summary.row(1, named=True)
    assert row["forecast/problems"] == 15  # five per length bucket and seed
    assert row["forecast/problems_total"] == 4 * 48
    assert result.result.forecast["step"].max() == 3
