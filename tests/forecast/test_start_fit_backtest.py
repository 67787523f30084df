"""The forecast's start window, its fit to the logged shaping-off trajectory and the backtest
(replay_cli/forecast/start.py, fit.py, backtest.py; issue 53 items 1-5)."""

from dataclasses import replace
from functools import cache

import numpy as np
import polars as pl
import pytest

import replay_cli as rc
from replay_cli import catalogue as C
from replay_cli.config import ForecastSettings
from replay_cli.forecast import fit as F
from replay_cli.forecast.backtest import backtest_text
from replay_cli.forecast.start import start_steps
from replay_cli.maths.effort import P_EDGE

from factories import forecast
from worlds import world as W

OFF = W.OFF.tool_config()


def _summary(log: pl.DataFrame, fit: bool = True) -> dict:
    settings = ForecastSettings(steps=10, seeds=2, problems=150, check_budgets=False, fit=fit)
    report = forecast(rc.rollouts_from_frame(log), [OFF], settings)
    return report.result.summary.to_dicts()[0]


@cache
def _world_log(name: str, kind: str) -> pl.DataFrame:
    return W.world_log(W.WORLDS[name], kind, 100)


def test_the_start_window_is_a_quarter_of_the_log_and_at_least_four_steps():
    assert [start_steps(n) for n in (1, 3, 4, 12, 16, 17, 48)] == [1, 3, 4, 4, 4, 5, 12]


def test_a_run_log_and_its_first_window_start_alike():
    """A 12-step run starts from its first 4 steps: read whole or as those 4 steps alone, the
    effort levels, buckets, sample and starting model are the same."""
    log = _world_log("effort_pays", "run12")
    whole, first = _summary(log, fit=False), _summary(log.filter(pl.col("step") < 4), fit=False)
    assert whole[C.FORECAST_START_STEPS] == first[C.FORECAST_START_STEPS] == 4
    for name in (C.F_RESOLVE_START, C.F_RESOLVE_START_LONG, C.F_FAIL_START):
        assert whole[name] == pytest.approx(first[name], rel=1e-12), name
    pooled = _summary(log.filter(pl.col("step") < 12).with_columns(pl.lit(0).alias("step")))
    assert pooled[C.F_RESOLVE_START] != pytest.approx(whole[C.F_RESOLVE_START], rel=1e-6)


def _world(rate: np.ndarray, pi: np.ndarray):
    from replay_cli.forecast.world import World

    zeros = np.zeros(rate.shape[:2], int)
    return World(pi, rate, rate, np.ones_like(rate), zeros, zeros, zeros, zeros, None, zeros)  # type: ignore[arg-type]


def test_the_causal_shares_keep_a_failing_level_at_zero_and_the_start_resolve():
    rate = np.array([[[0.2, 0.5, 0.8, 0.0], [0.1, 0.1, 0.4, 0.0]]])
    pi = np.array([[[0.3, 0.3, 0.3, 0.1], [0.5, 0.2, 0.2, 0.1]]])
    world = _world(rate, pi)
    assert F.with_shares(world, np.ones(4)) is world
    flat = F.with_shares(world, np.zeros(4))
    assert np.all(flat.rate[..., 3] == 0)
    assert np.allclose(flat.rate[0, 0, :3], 0.5)
    half = F.with_shares(world, np.array([1.0, 0.5, 0.0, 0.3]))
    assert np.allclose((half.rate * pi).sum(-1), (rate * pi).sum(-1))
    assert np.all(half.rate[..., 3] == 0)


def test_the_causal_shares_per_bucket_keep_a_level_failing_there_at_zero():
    """α per (length bucket, level): a short problem's level that never succeeds on short
    problems stays 0 even where it succeeds on long ones; each problem's start resolve is kept;
    a (levels,) α is every bucket's."""
    rate = np.array([[[0.2, 0.5, 0.8, 0.0], [0.1, 0.3, 0.4, 0.2]]])
    pi = np.array([[[0.3, 0.3, 0.3, 0.1], [0.4, 0.2, 0.2, 0.2]]])
    world = replace(_world(rate, pi), bucket=np.array([[0, 2]]))
    assert F.alive(world).tolist() == [[True] * 3 + [False], [False] * 4, [True] * 4]
    alpha = np.array([[0.0] * 4, [0.0] * 4, [1.0] * 4])
    shared = F.with_shares(world, alpha)
    assert np.allclose(shared.rate[0, 0], [0.5, 0.5, 0.5, 0.0])  # short: flat, the limit 0
    assert np.allclose(shared.rate[0, 1], rate[0, 1])  # long: as logged
    assert np.allclose((shared.rate * pi).sum(-1), (rate * pi).sum(-1))
    assert np.allclose(shared.p, np.clip(shared.rate, P_EDGE, 1 - P_EDGE))
    flat = F.with_shares(world, np.zeros(4))
    assert np.allclose(flat.rate, F.with_shares(world, np.zeros((3, 4))).rate)
    assert np.allclose(flat.rate[0, 1], 0.22)
    assert F.with_shares(world, np.array([[1.0, 1.0, 1.0, 0.0], [0.0] * 4, [1.0] * 4])) is world


def test_the_shares_read_per_bucket_show_per_bucket_and_name_the_short_problems():
    from replay_cli.forecast.backtest import alpha_levels, statement

    assert alpha_levels(np.ones((3, 4))) == "1.00 1.00 1.00 1.00"
    alpha = np.array([[0.0, 0.0, 0.0, 1.0], [0.0] * 4, [0.0, 0.0, 1.0, 0.0]])
    assert alpha_levels(alpha) == (
        "short: 0.00 0.00 0.00 1.00; medium: 0.00 0.00 0.00 0.00; long: 0.00 0.00 1.00 0.00"
    )
    fit = F.Fit(alpha, 48, alpha, alpha, fitted={"alpha": True, "skill": False})
    assert statement(fit, 2, 2).startswith(
        "from 48 logged steps: long runs cause 100% of their extra success (interval 100%–100%) "
        "on long problems, 0% on short ones; no skill shows"
    )
    assert "short ones" not in statement(fit, 3, 2)


def test_a_fit_its_backtest_rejects_falls_back_to_the_cautious_reading_per_bucket(monkeypatch):
    """The backtest fails: the forecast keeps α = 1 on every (bucket, level), as many levels."""
    from replay_cli.forecast import backtest as B

    monkeypatch.setattr(B, "backtest", lambda *args: ({}, False, False))
    fit = F.Fit(np.zeros((3, 4)), 48, fitted={"alpha": True, "skill": False})
    s = B.Prepared(None, [], 2, 0, 0.9, None, True, grid=object(), logged=object(), fit=fit)  # type: ignore[arg-type]
    out = B.backtest_stage(s).fit
    assert out is not None
    assert out.alpha.shape == (3, 4)
    assert np.all(out.alpha == 1.0)
    assert out.why == "the fitted forecast does not reproduce the log's later steps"


def test_the_fit_keeps_the_cautious_reading_unless_the_log_rejects_it():
    """α from the shares' χ², skill from the resolve's at that α; each only by the margin."""
    grid = F.Grid([np.full(3, a) for a in (0.0, 1.0)], [1.0, 1.0], [], None)  # type: ignore[arg-type]
    zero = int(np.flatnonzero(F.SKILLS == 0)[0])
    drift = np.full((2, 3), 100.0)
    resolve = np.full((2, len(F.SKILLS), 3), 100.0)
    drift[0] = 100.0 - F.IDENTIFIED / 2  # better, not by the margin
    resolve[1, zero + 4] = 100.0 - F.IDENTIFIED / 2
    choice = F.choose((drift, resolve), grid)
    assert (choice.point, choice.skill) == (1, zero)
    assert not any(choice.fitted.values())
    drift[0] = 100.0 - 3 * F.IDENTIFIED
    resolve[0, zero + 4] = 100.0 - 3 * F.IDENTIFIED
    choice = F.choose((drift, resolve), grid)
    assert (choice.point, choice.skill) == (0, zero + 4)
    assert choice.fitted == {"alpha": True, "skill": True}


def test_a_step_size_other_than_the_configured_one_must_beat_it_by_the_margin():
    """α = 1 at twice the step size: used only where its shares' χ² is lower than the best at
    the configured size by `IDENTIFIED` beyond the cautious margin (the prior on the size)."""
    alphas = [np.full(3, a) for a in (0.5, 1.0, 1.0)]
    grid = F.Grid(alphas, [1.0, 1.0, 2.0], [], None)  # type: ignore[arg-type]
    assert grid.cautious == 1
    drift = np.full((3, 3), 100.0)
    resolve = np.full((3, len(F.SKILLS), 3), 100.0)
    drift[0] = 100.0 - 2 * F.IDENTIFIED  # α = 0.5 at the configured size
    drift[2] = 100.0 - 2.5 * F.IDENTIFIED  # better, but not by the prior
    assert F.choose((drift, resolve), grid).point == 0
    drift[2] = 100.0 - 3.5 * F.IDENTIFIED
    assert F.choose((drift, resolve), grid).point == 2


def test_a_log_without_problem_names_stays_cautious_and_says_why():
    log = _world_log("effort_pays", "run12").drop("instance_id")
    row = _summary(log)
    assert row[C.FORECAST_ALPHA] == 1.0
    assert row[C.FORECAST_SKILL] == 0.0
    assert "no instance_id" in row[C.FORECAST_FIT]
    assert "12 logged steps" in row[C.FORECAST_FIT]
    assert row.get(C.FORECAST_BACKTEST_PASS) is None


def test_a_one_step_log_stays_cautious():
    row = _summary(_world_log("effort_pays", "run12").filter(pl.col("step") == 0))
    assert row[C.FORECAST_ALPHA] == 1.0
    assert "spans 1 step" in row[C.FORECAST_FIT]


def test_the_fit_reads_that_effort_buys_nothing_and_backtests_it():
    """A 48-step run of `effort_buys_nothing`: long runs cause none of their extra success, and
    the fit's forecast of steps 33-48 lies in its band."""
    row = _summary(_world_log("effort_buys_nothing", "run48"))
    assert row[C.FORECAST_START_STEPS] == 12
    assert row[C.FORECAST_ALPHA] == 0.0
    assert row[C.FORECAST_BACKTEST_PASS] == 1.0
    assert row[C.FORECAST_FIT].startswith("from 48 logged steps: long runs cause 0%")
    assert "reproduces steps 33–48" in row[C.FORECAST_BACKTEST]
    low = row[C.bound(C.FORECAST_BACKTEST_RESOLVE, "low")]
    high = row[C.bound(C.FORECAST_BACKTEST_RESOLVE, "high")]
    assert low <= row[C.logged_value(C.FORECAST_BACKTEST_RESOLVE)] <= high


def test_the_fit_reads_skill_where_success_rises_at_fixed_effort():
    """A 48-step run of `skill` (resolve 46% → 67%): the fit reads a skill of about a point a
    step, and its forecast of the held-out resolve is within a point of the log."""
    row = _summary(_world_log("skill", "run48"))
    assert 100 * row[C.bound(C.FORECAST_SKILL, "low")] > 0.5
    assert (
        abs(row[C.FORECAST_BACKTEST_RESOLVE] - row[C.logged_value(C.FORECAST_BACKTEST_RESOLVE)])
        < 0.01
    )


def test_the_fit_reads_that_effort_pays_on_a_run_where_it_does():
    """A 48-step run of `effort_pays`: the level shares drift as the model's at α = 1 and the
    configured step size (with α on [0, 1] and δ free it read α = ½ at a larger step: the drift
    reads α·δ; α is a two-way choice per level)."""
    row = _summary(_world_log("effort_pays", "run48"))
    assert row[C.FORECAST_ALPHA] == 1.0
    assert "the step size as configured" in row[C.FORECAST_FIT]


def test_the_fit_reads_per_bucket_where_long_runs_fail_for_their_time_on_short_problems():
    """A 48-step run of `timeouts_one_policy` (seed 100; failures take longer than successes,
    effort pays on long problems only): per bucket the fit reads α = 0 on every level of short
    and medium problems and 1 at the third level of long ones (one α per level read 0 there and
    picked 1/30 `correct`); the long bucket's longest level (the time limit, which succeeds
    only on long problems) reads 0, what `forecast/alpha` shows; the backtest passes."""
    row = _summary(_world_log("timeouts_one_policy", "run48"))
    assert row[C.FORECAST_ALPHA_LEVELS] == (
        "short: 0.00 0.00 0.00 1.00; medium: 0.00 0.00 0.00 0.00; long: 0.00 0.00 1.00 0.00"
    )
    assert row[C.FORECAST_ALPHA] == 0.0
    assert row[C.FORECAST_BACKTEST_PASS] == 1.0


def test_with_the_fit_off_the_backtest_checks_the_cautious_reading():
    """The default: the forecast keeps the cautious reading and says so; the backtest still
    runs, and on a 48-step run where effort buys nothing it fails, naming a value outside its
    band (the cautious reading forecasts more success than the run logged)."""
    row = _summary(_world_log("effort_buys_nothing", "run48"), fit=False)
    assert row[C.FORECAST_ALPHA] == 1.0
    assert row[C.FORECAST_SKILL] == 0.0
    assert row[C.FORECAST_FIT] == (
        "from 48 logged steps: the cautious reading (longer runs cause all of their extra "
        "success, no skill, the step size as configured); the fit to the log is off (--fit)"
    )
    assert row[C.FORECAST_BACKTEST_PASS] == 0.0
    text = row[C.FORECAST_BACKTEST]
    assert text.startswith("the forecast of shaping off does not reproduce steps 33–48")
    assert text.endswith("its numbers are the cautious reading's, not a prediction of this run")
    r = C.FORECAST_BACKTEST_RESOLVE
    assert row[r] > row[C.bound(r, "high")] - 1e-12 or row[r] > row[C.logged_value(r)]
    assert row[C.logged_value(r)] < row[C.bound(r, "low")]


def _out(value: float, logged: float, low: float, high: float, long: tuple, passed: float) -> dict:
    r, rl = C.FORECAST_BACKTEST_RESOLVE, C.FORECAST_BACKTEST_RESOLVE_LONG
    out = {C.FORECAST_BACKTEST_PASS: passed}
    for name, (v, x, lo, hi) in ((r, (value, logged, low, high)), (rl, long)):
        out |= {
            name: v,
            C.logged_value(name): x,
            C.bound(name, "low"): lo,
            C.bound(name, "high"): hi,
        }
    return out


def test_the_backtest_line_names_the_value_that_fails():
    """Overall inside its band, long problems outside: a failed backtest names the long value,
    never a value inside its band; a passed one names the overall resolve."""
    failed = _out(0.514, 0.497, 0.485, 0.543, (0.408, 0.364, 0.381, 0.435), 0.0)
    assert backtest_text(failed, 33, 48, fitting=False) == (
        "the forecast of shaping off does not reproduce steps 33–48 of your run: resolve rate on "
        "long problems 40.8% vs logged 36.4%, band 38.1%–43.5%; its numbers are the cautious "
        "reading's, not a prediction of this run"
    )
    assert backtest_text(failed, 33, 48, fitting=True).endswith(
        "; the forecast decides on the cautious reading"
    )
    passed = _out(0.514, 0.494, 0.492, 0.536, (0.39, 0.347, 0.342, 0.438), 1.0)
    assert backtest_text(passed, 9, 12, fitting=False) == (
        "the forecast of shaping off reproduces steps 9–12 of your run: resolve rate 51.4% vs "
        "logged 49.4%, band 49.2%–53.6%"
    )


def test_the_reading_promises_more_steps_only_where_the_log_was_too_short_to_tell():
    """A log that cannot tell names the steps that may settle it; a fit whose forecast did not
    hold on the log's later steps names none (more of the same log would not settle it)."""
    from replay_cli.forecast.backtest import statement

    short = F.Fit.cautious(4, 12, "the log names no problem (no instance_id)", F.SETTLE_STEPS)
    assert statement(short, 3).endswith(
        "since the log names no problem (no instance_id); about 48 logged steps of a shaping-off "
        "run naming its problems may settle it (--fit)"
    )
    failed = F.Fit.cautious(4, 48, "the fitted forecast does not reproduce the log's later steps")
    assert statement(failed, 3) == (
        "from 48 logged steps: the cautious reading (longer runs cause all of their extra "
        "success, no skill, the step size as configured), since the fitted forecast does not "
        "reproduce the log's later steps"
    )
