"""Tests for replay_cli.forecast.horizon: the seeds pooled and each problem weighed by hand,
and intervals that bracket the point and narrow with more problems."""

import numpy as np
import pytest

import replay_cli as rc
from replay_cli.config import ForecastSettings
from replay_cli.forecast.world import World
from replay_cli.rollouts.synth import synth_rollouts

from factories import config, forecast


def small_world(index: np.ndarray, bucket: np.ndarray, weight: np.ndarray) -> World:
    """A world of S seeds x P problems with two levels, for the horizon's sums by hand."""
    rng = np.random.default_rng(3)
    shape = index.shape
    pi = rng.dirichlet([1.0, 1.0], size=shape)
    rate = rng.uniform(0.05, 0.95, size=(*shape, 2))
    m = rng.uniform(1.0, 30.0, size=(*shape, 2))
    return World(
        pi=pi,
        p=rate,
        rate=rate,
        m=m,
        bucket=bucket,
        weight=weight,
        size=np.full(shape, 4, np.int64),
        local=np.zeros(shape, np.int64),
        pool=None,  # type: ignore[arg-type]
        index=index,
    )


def test_the_horizon_pools_the_seeds_and_weighs_each_problem_by_hand():
    from replay_cli.config import EffortSettings
    from replay_cli.forecast.horizon import horizon

    index = np.array([[0, 1, 2], [1, 3, 4]])  # problem 1 drawn by both seeds
    bucket = np.array([[0, 2, 2], [2, 1, 2]])
    weight = np.array([[1.0, 2.0, 0.5], [2.0, 1.0, 3.0]])
    world = small_world(index, bucket, weight)
    rng = np.random.default_rng(8)
    last = rng.dirichlet([1.0, 1.0], size=(2, *index.shape))  # (runs: config, twin)
    point, boot = horizon(world, last, [1], EffortSettings(resamples=0))

    def by_hand(run: int, scope_bucket: int | None, w_of) -> dict[str, float]:
        sums = dict.fromkeys(("w", "p", "pm", "f", "fm"), 0.0)
        for s in range(2):
            for j in range(3):
                if scope_bucket is not None and bucket[s, j] != scope_bucket:
                    continue
                w = weight[s, j] * w_of(index[s, j])
                pi, p, m = last[run, s, j], world.rate[s, j], world.m[s, j]
                sums["w"] += w
                sums["p"] += w * sum(pi * p)
                sums["pm"] += w * sum(pi * p * m)
                sums["f"] += w * sum(pi * (1 - p))
                sums["fm"] += w * sum(pi * (1 - p) * m)
        return sums

    for scope, b in (("", None), ("@long", 2)):
        on, off = by_hand(0, b, lambda _: 1.0), by_hand(1, b, lambda _: 1.0)
        assert point[f"forecast/resolve{scope}"][0] == pytest.approx(on["p"] / on["w"], rel=1e-12)
        assert point[f"forecast/resolve_vs_off{scope}"][0] == pytest.approx(
            on["p"] / off["p"], rel=1e-12
        )
        solve = on["pm"] / on["p"] - off["pm"] / off["p"]
        fail = on["fm"] / on["f"] - off["fm"] / off["f"]
        assert point[f"forecast/solve_minutes_vs_off{scope}"][0] == pytest.approx(solve, rel=1e-12)
        assert point[f"forecast/fail_minutes_vs_off{scope}"][0] == pytest.approx(fail, rel=1e-12)
    assert boot == {} or all(v.shape[0] == 0 for v in boot.values())

    # The bootstrap: one Poisson(1) weight per problem of the input, shared by every seed, config
    # and twin that drew it (problem 1 carries the same weight in both seeds).
    settings = EffortSettings(resamples=5, seed=4)
    _, boot = horizon(world, last, [1], settings)
    draws = np.random.default_rng([4, 17]).poisson(1.0, size=(5, 5)).astype(float)
    for b in range(5):
        on = by_hand(0, 2, lambda k, b=b: draws[b, k])
        off = by_hand(1, 2, lambda k, b=b: draws[b, k])
        expected = on["p"] / off["p"] if off["p"] > 0 else np.nan
        got = boot["forecast/resolve_vs_off@long"][b, 0]
        assert got == pytest.approx(expected, rel=1e-12) or (np.isnan(got) and np.isnan(expected))


def test_the_interval_brackets_the_point_and_narrows_with_more_problems():
    clip = {"clip_low": -3.0, "clip_high": 3.0}
    configs = [
        config({"enabled": False}, clip),
        config({"apply_to": "all", "lambda_time": 1 / 30}, clip),
    ]
    settings = ForecastSettings(steps=10, seeds=2, check_budgets=False)
    widths = []
    for groups in (24, 96):
        rollouts = rc.rollouts_from_frame(
            synth_rollouts(steps=4, groups_per_step=groups, group_size=8, seed=7)
        )
        row = forecast(rollouts, configs, settings).result.summary.row(1, named=True)
        for scope in ("", "@long"):
            low = row[f"forecast/resolve_vs_off_low{scope}"]
            high = row[f"forecast/resolve_vs_off_high{scope}"]
            assert low <= row[f"forecast/resolve_vs_off{scope}"] <= high
        widths.append(row["forecast/resolve_vs_off_high"] - row["forecast/resolve_vs_off_low"])
    assert widths[1] < widths[0]
