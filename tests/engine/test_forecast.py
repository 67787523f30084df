"""Tests for replay_cli.engine.forecast: a first step equal to the expectation computed by
enumerating every draw, the first step against the decision measure's effort part, what shaping
off leaves alone, the drift `apply_to=all` teaches, determinism, and the rule and finding that
read it."""

import itertools
import math

import numpy as np
import polars as pl
import pytest

import replay_cli as rc
from replay_cli import catalogue as C
from replay_cli.advice.recommendation import RULE_READS
from replay_cli.config import ForecastSettings
from replay_cli.engine.forecast import Pool, World, _simulate
from replay_cli.rollouts.synth import synth_rollouts

from factories import config
from reference_impl import grpo_group

BUDGET = 0.001


def forecast(rollouts, configs, settings: ForecastSettings):
    """The report of a replay with the forecast under `settings`."""
    return rc.replay(rollouts, configs, rc.ReportOptions(forecast=settings))


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
    sim, _ = _simulate(world, [cfg], 1, BUDGET, seed=5)  # (steps + 1, runs, seeds, buckets, ...)
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


CLIP = {"clip_low": -3.0, "clip_high": 3.0}
SHAPED = (
    config({"enabled": False}, CLIP),
    config({"apply_to": "all", "lambda_time": 1 / 30}, CLIP),
    config({"apply_to": "correct", "lambda_time": 1 / 30}, CLIP),
)
"""Shaping off, then `all` and `correct` at λ = 1/30, under the PR's clip."""


def demo_rollouts(steps: int):
    return rc.rollouts_from_frame(
        synth_rollouts(steps=steps, groups_per_step=48, group_size=8, seed=7)
    )


@pytest.fixture(scope="module")
def demo_forecast():
    configs = list(SHAPED)
    settings = ForecastSettings(steps=25, seeds=3, check_budgets=True)
    return configs, forecast(demo_rollouts(6), configs, settings)


def test_apply_to_all_teaches_failures_on_long_problems_to_quit(demo_forecast):
    configs, result = demo_forecast
    row = result.result.summary.filter(pl.col("config_id") == configs[1].config_id).row(
        0, named=True
    )
    assert row["forecast/fail_minutes@long"] < row["forecast/fail_minutes_start@long"]
    assert row["forecast/fail_minutes@long"] < row["forecast/fail_minutes_off@long"]
    assert row["forecast/resolve@long"] < row["forecast/resolve_off@long"]
    assert row["forecast/give_up_vs_off@long"] > 0  # more effort at the lowest level
    correct = result.result.summary.filter(pl.col("config_id") == configs[2].config_id).row(
        0, named=True
    )
    assert correct["forecast/resolve_vs_off@long"] > row["forecast/resolve_vs_off@long"]


def test_shaping_off_against_itself_is_one_and_the_table_is_complete(demo_forecast):
    _, result = demo_forecast
    off = result.result.summary.row(0, named=True)
    assert off["forecast/resolve_vs_off"] == 1.0
    assert off["forecast/resolve_vs_off_low@long"] == 1.0
    table = result.result.forecast
    assert set(table["budget"].unique()) == {0.0005, 0.001, 0.002}
    assert (
        table.filter(pl.col("step") == 0).select(pl.col("low") == pl.col("high")).to_series().all()
    )
    per = table.group_by("config_id", "budget", "bucket", "metric").len()["len"].unique()
    assert per.to_list() == [26]


def test_the_same_seed_gives_the_same_numbers(demo_forecast):
    configs, result = demo_forecast
    settings = ForecastSettings(steps=25, seeds=3, check_budgets=True)
    again = forecast(demo_rollouts(6), configs, settings)
    assert again.result.forecast.equals(result.result.forecast)


def test_the_rule_reads_the_forecast_and_the_finding_states_the_drift(demo_forecast):
    configs, result = demo_forecast
    verdict = dict(result.verdict.recommendation.select("config_id", "failed").rows())
    summary = {r["config_id"]: r for r in result.result.summary.to_dicts()}
    for cfg in configs:
        low = summary[cfg.config_id]["forecast/resolve_vs_off_low@long"]
        assert ("resolve_long" in verdict[cfg.config_id]) == (low < 0.95)
    drift = result.verdict.findings.filter(
        (pl.col("kind") == "forecast_drift") & pl.col("config_id").is_not_null()
    )
    assert configs[1].config_id in drift["config_id"].to_list()
    text = drift.filter(pl.col("config_id") == configs[1].config_id)["text"][0]
    row = summary[configs[1].config_id]
    assert f"from {row['forecast/fail_minutes_start@long']:.1f} to " in text
    assert f"{row['forecast/fail_minutes@long']:.1f} minutes" in text
    checked = result.verdict.recommendation.filter(pl.col("role") == "recommended")["budget_check"][
        0
    ]
    assert checked.startswith(("the verdict holds", "at half", "at twice", "after "))


# ---- the summary reads the table; the parts that build them, by hand ----------------------------


def test_the_summarys_start_columns_are_the_tables_first_step(demo_forecast):
    configs, result = demo_forecast
    table = result.result.forecast
    for cfg in configs:
        row = result.result.summary.filter(pl.col("config_id") == cfg.config_id).row(0, named=True)
        assert row["forecast/steps"] == table["step"].max()
        for bucket, scope in (("all", ""), ("long", "@long")):
            first = table.filter(
                (pl.col("config_id") == cfg.config_id)
                & (pl.col("bucket") == bucket)
                & (pl.col("step") == 0)
                & (pl.col("budget") == BUDGET)
            )
            mean = dict(first.select("metric", "mean").rows())
            assert row[f"forecast/resolve_start{scope}"] == pytest.approx(mean["resolve"])
            assert row[f"forecast/fail_minutes_start{scope}"] == pytest.approx(mean["fail_minutes"])


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
    from replay_cli.config import MeasureSettings
    from replay_cli.engine.forecast import horizon

    index = np.array([[0, 1, 2], [1, 3, 4]])  # problem 1 drawn by both seeds
    bucket = np.array([[0, 2, 2], [2, 1, 2]])
    weight = np.array([[1.0, 2.0, 0.5], [2.0, 1.0, 3.0]])
    world = small_world(index, bucket, weight)
    rng = np.random.default_rng(8)
    last = rng.dirichlet([1.0, 1.0], size=(2, *index.shape))  # (runs: config, twin)
    point, boot = horizon(world, last, [1], MeasureSettings(resamples=0))

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
    settings = MeasureSettings(resamples=5, seed=4)
    _, boot = horizon(world, last, [1], settings)
    draws = np.random.default_rng([4, 17]).poisson(1.0, size=(5, 5)).astype(float)
    for b in range(5):
        on = by_hand(0, 2, lambda k, b=b: draws[b, k])
        off = by_hand(1, 2, lambda k, b=b: draws[b, k])
        expected = on["p"] / off["p"] if off["p"] > 0 else np.nan
        got = boot["forecast/resolve_vs_off@long"][b, 0]
        assert got == pytest.approx(expected, rel=1e-12) or (np.isnan(got) and np.isnan(expected))


def test_a_config_equal_to_its_twin_is_one_in_every_resample(demo_forecast):
    configs, result = demo_forecast
    off = result.result.resamples.filter(pl.col("config_id") == configs[0].config_id)
    assert off.height == 200
    assert (off["forecast/resolve_vs_off"] == 1.0).all()
    assert (off["forecast/solve_minutes_vs_off"] == 0.0).all()


def test_the_interval_brackets_the_point_and_narrows_with_more_problems():
    configs = [SHAPED[0], SHAPED[1]]
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


def test_the_metrics_weigh_each_problem_and_split_the_buckets():
    from replay_cli.engine.forecast import _metrics

    # Two problems (short, long) with two levels; weights 1 and 3.
    pi = np.array([[0.25, 0.75], [0.5, 0.5]])
    p = np.array([[0.2, 0.6], [0.0, 1.0]])
    m = np.array([[2.0, 10.0], [4.0, 30.0]])
    out = _metrics(pi, p, m, np.array([0, 2]), np.array([1.0, 3.0]))
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


def test_the_pool_draws_the_problems_own_cell_then_its_buckets_then_the_fallback():
    rows = {
        "level": np.array([0, 1, 1, 0, 1]),
        "resolved": np.array([True, False, True, False, True]),
        "reward": np.array([1.0, 0.0, 1.0, 0.0, 0.7]),
        "minutes": np.array([1.0, 2.0, 3.0, 4.0, 5.0]),
        "calls": np.arange(5),
        "mask_sample": np.zeros(5, bool),
        "zeroed": np.zeros(5, bool),
    }
    # Rows 0-2 are problem 0 (bucket 1), rows 3-4 problem 1 (bucket 2).
    pool = Pool.of(rows, np.array([0, 0, 0, 1, 1]), np.array([1, 2]), 2, 2)
    u = np.array([0.0, 0.5, 0.99])

    def draw(problem, level, outcome):
        n = len(u)
        got = pool.draw(
            np.full(n, problem),
            np.full(n, [1, 2][problem]),
            np.full(n, level),
            np.full(n, outcome, bool),
            u,
        )
        return got["minutes"].tolist(), got["reward"].tolist()

    assert draw(0, 0, True) == ([1.0] * 3, [1.0] * 3)  # its own cell
    assert draw(0, 1, False) == ([2.0] * 3, [0.0] * 3)
    assert draw(1, 1, True) == ([5.0] * 3, [0.7] * 3)
    assert draw(1, 0, False) == ([4.0] * 3, [0.0] * 3)
    # Problem 1 never failed at level 1, nor did its bucket (2): a row of the bucket at that level
    # with the other outcome (row 4: its minutes are of level 1), with the bucket's mean reward
    # of failures (row 3's 0.0). Taking the neighbouring cell in sort order instead gave row 3,
    # a level-0 failure's minutes for a level-1 draw.
    assert draw(1, 1, False) == ([5.0] * 3, [0.0] * 3)
    # Problem 0 never failed at level 0, nor did bucket 1: row 0's minutes (level 0), and the
    # bucket's failure reward (row 1's 0.0).
    assert draw(0, 0, False) == ([1.0] * 3, [0.0] * 3)
    # A success drawn where only failures were logged: the success reward of the bucket (1.0).
    rows2 = {**rows, "resolved": np.array([False, False, True, False, True])}
    pool = Pool.of(rows2, np.array([0, 0, 0, 1, 1]), np.array([1, 2]), 2, 2)
    assert draw(0, 0, True) == ([1.0] * 3, [1.0] * 3)


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


def test_the_differences_against_shaping_off_and_the_budget_checks_low_ends():
    """`_vs_off` differences are the run's mean minus its twin's (a mean of per-seed
    differences); the budget checks run on half the seeds (two of four) and carry their own
    interval around their own point."""
    configs = list(SHAPED[:2])
    settings = ForecastSettings(steps=6, seeds=4, check_budgets=True)
    result = forecast(demo_rollouts(4), configs, settings)
    table = result.result.forecast.filter(pl.col("config_id") == configs[1].config_id)
    wide = table.pivot("metric", index=["budget", "step", "bucket"], values="mean")
    for name in ("solve_minutes", "fail_minutes", "give_up"):
        diff = (wide[name] - wide[f"{name}_off"] - wide[f"{name}_vs_off"]).abs().max()
        assert diff < 1e-9, name
    last = table.filter((pl.col("step") == 6) & (pl.col("metric") == "resolve_vs_off"))
    half = last.filter(pl.col("budget") == BUDGET / 2)
    assert (half["low"] < half["high"]).any()  # two seeds, not one
    row = result.result.summary.row(1, named=True)
    for suffix in ("_half", "_twice"):
        point = row[f"forecast/resolve_vs_off{suffix}@long"]
        assert row[f"forecast/resolve_vs_off_low{suffix}@long"] <= point
        assert point <= row[f"forecast/resolve_vs_off_high{suffix}@long"]
    assert row["forecast/resolve_vs_off_half@long"] != row["forecast/resolve_vs_off@long"]


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

    from replay_cli.advice.recommendation import Rule, recommend

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


def test_the_horizon_checks_read_the_run_at_half_its_steps_and_continue_it_to_twice():
    """After half the steps is the same run read at step T/2: equal to a forecast whose horizon
    is T/2 (common random numbers), on all seeds. After twice the steps continues the run on
    half the seeds: its own numbers, each inside its own interval."""
    configs = list(SHAPED[:2])
    full = ForecastSettings(steps=8, seeds=2, check_budgets=True)
    short = ForecastSettings(steps=4, seeds=2, check_budgets=False)
    rollouts = demo_rollouts(4)
    checked = forecast(rollouts, configs, full).result.summary.row(1, named=True)
    halfway = forecast(rollouts, configs, short).result.summary.row(1, named=True)
    for name in RULE_READS:
        assert checked[C.at_check(name, "half_steps")] == pytest.approx(halfway[name], rel=1e-12)
    twice = C.at_check(C.F_RESOLVE_VS_OFF_LONG, "twice_steps")
    assert checked[twice] != checked[C.F_RESOLVE_VS_OFF_LONG]
    low, high = (
        C.at_check(C.bound(C.F_RESOLVE_VS_OFF, end, "@long"), "twice_steps")
        for end in ("low", "high")
    )
    assert checked[low] <= checked[twice] <= checked[high]


def test_a_steps_shared_choices_draw_what_each_run_would_draw_alone():
    # A block of many runs gathers from the step's choices per (rollout, level, outcome); each
    # run drawing on its own must get the same rows, rewards and fallbacks.
    from replay_cli.engine.forecast import _Choices

    rng = np.random.default_rng(3)
    n = 400
    rows = {
        "level": rng.integers(0, 3, n),
        "resolved": rng.random(n) < 0.4,
        "reward": rng.random(n),
        "minutes": rng.random(n) * 30,
        "calls": rng.integers(0, 50, n),
        "mask_sample": rng.random(n) < 0.1,
        "zeroed": rng.random(n) < 0.05,
    }
    problem = rng.integers(0, 20, n)
    bucket_of = rng.integers(0, 3, 20)
    pool = Pool.of(rows, problem, bucket_of, 3, 20)
    local = rng.integers(0, 20, 50)
    u = rng.random(50)
    choices = _Choices.of(pool, local, bucket_of[local], u)
    level = rng.integers(0, 3, (7, 50))
    outcome = rng.random((7, 50)) < 0.5
    shared = choices.values(pool, level, outcome)
    alone = pool.draw(
        np.tile(local, 7),
        np.tile(bucket_of[local], 7),
        level.ravel(),
        outcome.ravel(),
        np.tile(u, 7),
    )
    assert shared.keys() == alone.keys()
    for k in alone:
        np.testing.assert_array_equal(shared[k], alone[k], err_msg=k)
