"""The forecast's calibration on the log's own drift (engine/calibrate.py, issue 45 items 4, 6)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from replay_cli import build_config
from replay_cli.config import MeasureSettings
from replay_cli.forecasting import calibrate as K
from replay_cli.maths.problems import GroupLevels, Problems


def test_shrinking_keeps_each_problems_resolve_rate_and_the_time_limit_level():
    pi = np.array([[0.2, 0.3, 0.4, 0.1], [0.5, 0.5, 0.0, 0.0]])
    rate = np.array([[0.1, 0.5, 0.9, 0.0], [0.2, 0.6, 0.3, 0.0]])
    mean = np.array([(0.2 * 0.1 + 0.3 * 0.5 + 0.4 * 0.9) / 0.9, 0.4])
    np.testing.assert_allclose(K.shrunk(rate, pi, 1.0), rate, rtol=0, atol=0)
    none = K.shrunk(rate, pi, 0.0)
    np.testing.assert_allclose(none[:, :-1], np.repeat(mean[:, None], 3, 1), rtol=1e-15)
    assert none[:, -1].tolist() == [0.0, 0.0]  # a run at the time limit still fails
    half = K.shrunk(rate, pi, 0.5)
    np.testing.assert_allclose(half[0, :3], mean[0] + 0.5 * (rate[0, :3] - mean[0]), rtol=1e-15)
    for alpha in (0.0, 0.3, 1.0):  # the resolve rate of the logged effort is unchanged
        out = K.shrunk(rate, pi, alpha)
        np.testing.assert_allclose((pi * out).sum(1), (pi * rate).sum(1), rtol=1e-14)


def groups_with_drift(slope: float, problems: int = 60, steps: int = 8, seed: int = 0):
    """Chunks of one group per (problem, step) where the problem is drawn: minutes per rollout
    = the problem's own + slope × step + noise, 4 rollouts at level 0."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(5, 20, problems)
    chunks = []
    for t in range(steps):
        drawn = rng.choice(problems, problems // 2, replace=False)
        per = base[drawn] + slope * t + rng.normal(0, 0.5, len(drawn))
        count = np.zeros((len(drawn), 4))
        count[:, 0] = 4
        minutes = np.zeros((len(drawn), 4))
        minutes[:, 0] = 4 * per
        chunks.append(
            GroupLevels(
                count,
                np.zeros_like(count),
                minutes,
                np.zeros(len(drawn), np.int8),
                pl.Series([f"p{i}" for i in drawn]),
                step=np.full(len(drawn), t),
            )
        )
    return chunks


def test_the_logged_drift_is_the_within_problem_slope_with_an_interval():
    chunks = groups_with_drift(0.25)
    drift = K.logged_drift(Problems.of(chunks), chunks, MeasureSettings())
    assert drift is not None
    assert drift.steps == 7
    assert drift.distinct == 8
    # The problems' own minutes (5 to 20) would swamp a pooled slope; within them it is 0.25.
    assert drift.slope == pytest.approx(0.25, abs=0.02)
    assert 0.001 < drift.se < 0.02
    flat = groups_with_drift(0.0, seed=1)
    assert K.logged_drift(Problems.of(flat), flat, MeasureSettings()).slope == pytest.approx(
        0.0, abs=0.02
    )


def test_a_log_without_steps_or_problem_names_is_not_calibrated():
    chunks = groups_with_drift(0.25)
    for c in chunks:
        c.step = None
    assert K.logged_drift(Problems.of(chunks), chunks, MeasureSettings()) is None
    out = K.calibrate(None, None, None, 1e-3, 0, 0.9, None)  # type: ignore[arg-type]
    assert out.alpha == 1.0
    assert "no problem" in out.why
    short = K.Drift(0.1, np.array([0.09, 0.11]), 2, 3)
    out = K.calibrate(None, None, short, 1e-3, 0, 0.9, None)  # type: ignore[arg-type]
    assert out.alpha == 1.0
    assert "3 steps" in out.why
    assert out.logged == 0.1


@pytest.fixture
def linear_model(monkeypatch):
    """The model's shaping-off drift as a known function of α (what the simulation would give)."""

    def drift(world, off, steps, budget, seed, simulate):
        return world

    monkeypatch.setattr(K, "_model_drift", drift)
    monkeypatch.setattr(K, "with_alpha", lambda world, a: world(a))


def test_the_calibration_inverts_the_models_drift_at_the_logs(linear_model):
    rng = np.random.default_rng(0)
    logged = K.Drift(0.03, 0.03 + 0.01 * rng.standard_normal(4000), 11, 12)
    out = K.calibrate(lambda a: 0.1 * a, None, logged, 1e-3, 0, 0.9, None)  # type: ignore[arg-type]
    assert out.alpha == pytest.approx(0.3, abs=1e-12)
    # The interval maps the drift's 5% and 95% quantiles (±1.645 sd) through the same line.
    assert out.low == pytest.approx(0.3 - 0.1645, abs=0.01)
    assert out.high == pytest.approx(0.3 + 0.1645, abs=0.01)
    assert (out.model, out.model_none, out.steps) == (0.1, 0.0, 11)
    # Drifting at least as fast as the model: effort buys what the log shows, α = 1.
    fast = K.Drift(0.2, np.full(100, 0.2) + 0.01 * rng.standard_normal(100), 11, 12)
    assert K.calibrate(lambda a: 0.1 * a, None, fast, 1e-3, 0, 0.9, None).alpha == 1.0  # type: ignore[arg-type]
    # Against it: α = 0 (the log shows no drift where the model predicts some).
    still = K.Drift(-0.01, -0.01 + 0.01 * rng.standard_normal(100), 11, 12)
    assert K.calibrate(lambda a: 0.1 * a, None, still, 1e-3, 0, 0.9, None).alpha == 0.0  # type: ignore[arg-type]


def test_a_model_whose_drift_does_not_follow_alpha_keeps_alpha_one(linear_model):
    logged = K.Drift(0.0, np.array([-0.05, 0.0, 0.05]), 11, 12)
    for curve in (lambda a: -0.02 * a, lambda a: 0.001 * a):  # falls, or within the log's noise
        out = K.calibrate(curve, None, logged, 1e-3, 0, 0.9, None)  # type: ignore[arg-type]
        assert out.alpha == 1.0
        assert "cannot tell" in out.why


# ---- against simulated training (tests/worlds): the causal share tells the worlds apart ------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "low", "high"), [("effort_pays", 1.0, 1.0), ("effort_buys_nothing", 0.0, 0.4)]
)
def test_the_causal_share_is_one_where_effort_pays_and_near_zero_where_it_buys_nothing(
    name, low, high
):
    from replay_cli import api
    from replay_cli.config import ForecastSettings
    from replay_cli.rollouts.validation import rollouts_from_frame

    from worlds import world as W

    log = W.generate_log(W.WORLDS[name], 12, 48, seed=101)
    off = build_config({"shaping": {"enabled": False}})
    options = api.report_options(
        forecast=ForecastSettings(steps=5, seeds=2, check_budgets=False, calibrate=True)
    )
    row = api.replay(rollouts_from_frame(log), [off], options).result.summary.row(0, named=True)
    assert low <= row["forecast/alpha"] <= high
    assert row["forecast/budget"] == MeasureSettings().step_kl
    assert row["forecast/drift_steps"] == 11
    if name == "effort_pays":  # the log drifts faster than the model predicts at α = 1
        assert row["forecast/drift_logged"] > row["forecast/drift_model"] > 0
    else:  # the model predicts a drift the log does not show
        assert row["forecast/drift_logged"] < 0.5 * row["forecast/drift_model"]
        assert row["forecast/alpha_low"] == 0.0
