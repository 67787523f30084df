"""Tests for replay_cli.forecast.simulate: a first step equal to the expectation computed by
enumerating every draw, the first step against the first-step diagnostic's effort part, what
shaping off leaves alone, groups that teach nothing, and an estimator that refuses the simulated
groups."""

import itertools
import math

import numpy as np
import polars as pl
import pytest

import replay_cli as rc
from replay_cli.config import ForecastSettings
from replay_cli.engine.simulated import REPLAY
from replay_cli.forecast.pool import Pool
from replay_cli.forecast.simulate import simulate
from replay_cli.forecast.world import World
from replay_cli.rollouts.synth import synth_rollouts

from factories import config, forecast
from reference_impl import grpo_group

BUDGET = 0.001


def one_problem_world(seeds: int, pi, p, minutes, rewards) -> World:
    """S copies of one problem with two levels, a group of four, and one logged rollout per
    (level, outcome) cell (its minutes and reward)."""
    rows = {
        "level": np.array([0, 0, 1, 1]),
        "resolved": np.array([False, True, False, True]),
        "reward": np.array(rewards, dtype=float),
        "minutes": np.array(minutes, dtype=float),
        "calls": np.zeros(4, np.int64),
        "mask_sample": np.zeros(4, bool),
        "zeroed": np.zeros(4, bool),
    }
    pool = Pool.of(rows, np.zeros(4, np.int64), np.zeros(1, np.int64), 2, 1)
    shape = (seeds, 1)
    return World(
        pi=np.broadcast_to(np.array(pi, float), (*shape, 2)).copy(),
        p=np.broadcast_to(np.array(p, float), (*shape, 2)).copy(),
        rate=np.broadcast_to(np.array(p, float), (*shape, 2)).copy(),
        m=np.broadcast_to(np.array([minutes[0], minutes[2]], float), (*shape, 2)).copy(),
        bucket=np.zeros(shape, np.int64),
        weight=np.ones(shape),
        size=np.full(shape, 4, np.int64),
        local=np.zeros(shape, np.int64),
        pool=pool,
        index=np.zeros(shape, np.int64),
    )


def enumerated_step(pi, p, minutes, rewards, shaping: dict, advantage: dict) -> float:
    """E[ΔP(resolve)] of one step over every draw of four rollouts, by enumeration: each draw's
    shaped rewards and GRPO advantages (the slow reference), the effort natural gradient, the
    step that spends the budget (bisection on the exact KL), weighted by the draw's probability."""
    lam = shaping.get("lambda_time", 1 / 60) if shaping.get("enabled", True) else 0.0
    cells = [(k, y) for k in (0, 1) for y in (0, 1)]
    expected = 0.0
    for draw in itertools.product(cells, repeat=4):
        prob = math.prod(pi[k] * (p[k] if y else 1 - p[k]) for k, y in draw)
        reward = [rewards[2 * k + y] - lam * minutes[2 * k + y] for k, y in draw]
        adv = [row[3] for row in grpo_group(reward, [True] * 4, advantage)]
        a = [sum(x for x, (k, _) in zip(adv, draw, strict=True) if k == j) / 4 for j in (0, 1)]
        d = [a[j] / pi[j] for j in (0, 1)]
        if d[0] == d[1]:
            continue  # no effort direction (a uniform shift of both logits): no step

        def step(eta, d=d):
            z = [math.log(pi[j]) + eta * d[j] for j in (0, 1)]
            top = max(z)
            w = [math.exp(x - top) for x in z]
            return [x / sum(w) for x in w]

        def kl(eta, step=step):
            new = step(eta)
            return sum(new[j] * math.log(new[j] / pi[j]) for j in (0, 1))

        lo, hi = 0.0, 1.0
        while kl(hi) < BUDGET:
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if kl(mid) > BUDGET else (mid, hi)
        new = step((lo + hi) / 2)
        expected += prob * sum((new[j] - pi[j]) * p[j] for j in (0, 1))
    return expected


@pytest.mark.parametrize(
    ("shaping", "advantage"),
    [({"enabled": False}, {}), ({"apply_to": "all", "lambda_time": 1 / 30}, {"clip_low": -3.0})],
)
def test_the_first_step_is_the_expectation_over_every_draw(shaping, advantage):
    pi, p = [0.4, 0.6], [0.2, 0.7]
    minutes, rewards = [3.0, 4.0, 20.0, 25.0], [0.0, 1.0, 0.0, 1.0]
    cfg = config(shaping, {**advantage, "precision": "float64"})
    seeds = 3000
    world = one_problem_world(seeds, pi, p, minutes, rewards)
    sim, _ = simulate(world, [cfg], 1, BUDGET, 5, REPLAY)  # (steps + 1, runs, seeds, buckets, ...)
    change = sim[1, 0, :, 0, 0] - sim[0, 0, :, 0, 0]
    expected = enumerated_step(pi, p, minutes, rewards, shaping, advantage)
    assert abs(change.mean() - expected) < 4 * change.std() / math.sqrt(seeds)


def deterministic_world(groups: int = 400) -> pl.DataFrame:
    """Groups of eight drawn from one effort mix: quitting (2 min) and wandering to the limit
    (30 min) fail, working (10 min) succeeds, a middle effort (18 min) fails."""
    rng = np.random.default_rng(0)
    level = rng.choice(4, size=(groups, 8), p=[0.25, 0.25, 0.25, 0.25])
    resolved = level == 1
    return pl.DataFrame(
        {
            "step": np.repeat(np.arange(groups) // 50 + 1, 8),
            "group_id": np.repeat(np.arange(groups), 8),
            "rollout_index": np.tile(np.arange(8), groups),
            "reward": resolved.ravel().astype(float),
            "resolved": resolved.ravel(),
            "openhands_run_time": np.array([2.0, 10.0, 18.0, 30.0])[level].ravel() * 60,
        }
    )


def test_the_first_step_agrees_with_the_measures_effort_part():
    rollouts = rc.rollouts_from_frame(deterministic_world())
    configs = [config({"enabled": False}), config({"apply_to": "all", "lambda_time": 1 / 30})]
    settings = ForecastSettings(steps=1, seeds=20, problems=1000, check_budgets=False)
    result = forecast(rollouts, configs, settings)
    for cfg in configs:
        mine = result.result.forecast.filter(
            (pl.col("config_id") == cfg.config_id)
            & (pl.col("bucket") == "all")
            & (pl.col("metric") == "resolve")
        ).sort("step")
        change = mine["mean"][1] - mine["mean"][0]
        spread = mine["high"][1] - mine["low"][1]  # the seeds' range, about 4 standard errors
        row = result.result.summary.filter(pl.col("config_id") == cfg.config_id).row(0, named=True)
        assert abs(change - row["step/resolve_effort"]) < spread, cfg.label


def test_shaping_off_leaves_a_problem_that_never_resolves_alone():
    frame = synth_rollouts(steps=2, groups_per_step=12, group_size=6, seed=1).with_columns(
        pl.lit(0.0).alias("reward"), pl.lit(False).alias("resolved")
    )
    result = forecast(
        rc.rollouts_from_frame(frame),
        [config({"enabled": False})],
        ForecastSettings(steps=5, seeds=2, check_budgets=False),
    )
    resolve = result.result.forecast.filter(
        pl.col("metric").is_in(["resolve", "give_up", "fail_minutes"])
    )
    first = resolve.filter(pl.col("step") == 0).drop("step", "low", "high")
    last = resolve.filter(pl.col("step") == 5).drop("step", "low", "high")
    assert first.equals(last)


def test_groups_of_one_rollout_teach_nothing_and_the_forecast_stays_put():
    """A group of one has no peers: its advantage is 0, so no config moves the policy."""
    rollouts = rc.rollouts_from_frame(
        synth_rollouts(steps=4, groups_per_step=60, group_size=1, seed=3)
    )
    configs = [config({"enabled": False}), config({"apply_to": "all", "lambda_time": 1 / 30})]
    result = forecast(rollouts, configs, ForecastSettings(steps=3, seeds=2, check_budgets=False))
    table = result.result.forecast.filter(pl.col("metric") == "resolve")
    start = table.filter(pl.col("step") == 0).sort("config_id", "bucket")["mean"]
    end = table.filter(pl.col("step") == 3).sort("config_id", "bucket")["mean"]
    assert end.to_list() == start.to_list()


def test_a_config_whose_estimator_refuses_the_simulated_groups_is_not_judged():
    """OpenRLHF's estimators need groups of one size; a row-dropping filter (NeMo-RL's dynamic
    sampling) leaves simulated groups of several. The replay completes, that config's forecast
    numbers are null with the estimator's reason, and the rule leaves it unrated instead of
    reading nulls as parity."""
    from maths.test_filters import _two_steps

    from replay_cli.advice.recommendation import recommend
    from replay_cli.advice.rule import Rule

    cfg = config({}, {"estimator": "dr-grpo", "precision": "float64", "filter": "nemo-rl"})
    result = rc.replay(rc.rollouts_from_frame(_two_steps()), [config({"enabled": False}), cfg])
    row = result.result.summary.filter(pl.col("config_id") == cfg.config_id).row(0, named=True)
    assert "needs groups of one size" in row["forecast/refused"]
    assert row["forecast/resolve"] is None
    assert row["forecast/resolve_vs_off"] is None
    rule = Rule(require_launchable=False, min_problems=1)
    verdict = recommend(result.result.summary, rule).filter(pl.col("config_id") == cfg.config_id)
    assert verdict["role"][0] == "unrated"
    assert (
        "the forecast could not train it (dr-grpo needs groups of one size" in verdict["reasons"][0]
    )
