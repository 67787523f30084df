"""Tests for replay_cli.forecast.runs, the forecast end to end: the drift `apply_to=all`
teaches, the table complete, determinism, the rule and finding that read it, the start columns,
the differences against shaping off and the checks at half and twice the budget and steps."""

import polars as pl
import pytest

import replay_cli as rc
from replay_cli import catalogue as C
from replay_cli.advice.rule import RULE_READS
from replay_cli.config import ForecastSettings
from replay_cli.rollouts.synth import synth_rollouts

from factories import config, forecast

BUDGET = 0.001
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


def test_a_config_equal_to_its_twin_is_one_in_every_resample(demo_forecast):
    configs, result = demo_forecast
    off = result.result.resamples.filter(pl.col("config_id") == configs[0].config_id)
    assert off.height == 200
    assert (off["forecast/resolve_vs_off"] == 1.0).all()
    assert (off["forecast/solve_minutes_vs_off"] == 0.0).all()


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
