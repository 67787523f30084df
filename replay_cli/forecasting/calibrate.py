"""The forecast calibrated on the log's own history (issue 45, items 4 and 6).

A log of several steps is itself a short shaping-off training run: over its steps each
problem's run time drifts as far as training under shaping off moves it. The effort model reads
every difference of success between run-time levels as what effort buys; where failures quit at
other times than successes take, part of that difference is the outcome setting the run time, and
the model, run forward under shaping off over the log's own steps, predicts a drift the log does
not show. The calibration shrinks each problem's success rates at its run-time levels toward the
problem's resolve rate over them by a **causal share** α ∈ [0, 1] (α = 1: the model as logged,
every difference bought by effort; α = 0: effort buys nothing, the time-limit level keeps its
own rate) and picks the α whose forecast of shaping off over the logged steps drifts as the log
does: the log's drift is the within-problem slope of minutes per rollout on the step; the model's
is the change of expected minutes per rollout over as many simulated steps, per step.

Only the product of α and the step budget is measured: a forecast with a larger budget and a
smaller α drifts alike (docs/testing.md, "Run time as an outcome"). The budget is therefore the
one configured (`--step-kl`), and α is what the log calibrates at that budget. α stays 1 where
the log cannot say (too few steps, no problem logged at two steps, or a model whose drift does
not grow with α) and where the log drifts at least as fast as the model: the calibration only
ever removes effort's effect where the log shows training did not follow it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from replay_cli import catalogue as C
from replay_cli.config import MeasureSettings, ReplayConfig
from replay_cli.forecasting.world import World
from replay_cli.maths.effort import P_EDGE
from replay_cli.maths.problems import GroupLevels, Problems

Simulate = Callable[..., tuple[np.ndarray, np.ndarray]]
"""The forecast's `simulate(world, runs, steps, budget, seed)` with its replay bound:
(trajectories, last efforts)."""

MIN_STEPS = 4
"""Distinct logged steps the calibration needs (fewer: α = 1, uncalibrated)."""
ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The causal shares whose shaping-off drift is simulated (α between them is interpolated)."""
MIN_RESPONSE = 1.0
"""The model's drift must grow from α = 0 to α = 1 by at least this many standard errors of the
log's drift, else the log cannot tell α apart and α stays 1."""


@dataclass(frozen=True)
class Drift:
    """The log's drift: the within-problem slope of minutes per rollout on the step (minutes
    per step), its bootstrap resamples over problems, and the logged steps' span."""

    slope: float
    resamples: np.ndarray
    steps: int
    distinct: int

    @property
    def se(self) -> float:
        return float(np.std(self.resamples, ddof=1)) if len(self.resamples) > 1 else np.inf


def logged_drift(
    problems: Problems, groups: Sequence[GroupLevels], settings: MeasureSettings
) -> Drift | None:
    """The log's drift of minutes per rollout per step within problems (None where the groups
    carry no step or no problem is logged at two steps). Each group's minutes enter as a sum
    over its rollouts: per problem, Σ_g (t_g − t̄) M_g over Σ_g n_g (t_g − t̄)², t̄ the mean step
    of the problem's rollouts; pooled over problems, resampled with one Poisson(1) weight each."""
    if not groups or any(g.step is None for g in groups) or problems.runs is None:
        return None
    step = np.concatenate([g.step for g in groups]).astype(np.float64)  # type: ignore[misc]
    n = np.concatenate([g.count.sum(1) for g in groups]).astype(np.float64)
    minutes = np.concatenate([g.minutes.sum(1) for g in groups]).astype(np.float64)
    problem = problems.of_group
    count = np.bincount(problem, n)
    mean_step = np.bincount(problem, n * step) / np.maximum(count, 1e-300)
    centred = step - mean_step[problem]
    xy = np.bincount(problem, centred * minutes, len(count))
    xx = np.bincount(problem, n * centred**2, len(count))
    distinct = len(np.unique(step))
    if xx.sum() <= 0:
        return None
    rng = np.random.default_rng([settings.seed, 23])
    weights = rng.poisson(1.0, size=(max(settings.resamples, 2), len(count))).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        resamples = (weights @ xy) / (weights @ xx)
    span = int(step.max() - step.min())
    return Drift(float(xy.sum() / xx.sum()), resamples[np.isfinite(resamples)], span, distinct)


def shrunk(rate: np.ndarray, pi: np.ndarray, alpha: float) -> np.ndarray:
    """Success rates (..., problems, levels) shrunk toward each problem's resolve rate over its
    run-time levels (effort `pi`) by the causal share `alpha`; the last level (the time limit,
    where a run fails) keeps its own."""
    out = np.array(rate, dtype=np.float64, copy=True)
    if alpha >= 1.0:  # the model as logged, exactly
        return out
    pi0, r0 = pi[..., :-1], out[..., :-1]
    mass = pi0.sum(-1, keepdims=True)
    mean = np.where(mass > 0, (pi0 * r0).sum(-1, keepdims=True) / np.maximum(mass, 1e-300), 0.0)
    out[..., :-1] = mean + alpha * (r0 - mean)
    return out


def with_alpha(world: World, alpha: float) -> World:
    """The forecast's world with its success rates at the causal share `alpha`."""
    if alpha >= 1.0:
        return world
    rate = shrunk(world.rate, world.pi, alpha)
    p = np.clip(shrunk(world.p, world.pi, alpha), P_EDGE, 1 - P_EDGE)
    return replace(world, rate=rate, p=p)


@dataclass(frozen=True)
class Calibration:
    """The causal share the forecast used and why: α with its interval (`low`, `high`, at the
    measure's interval level), the log's drift and the model's at α = 1 and α = 0 (minutes per
    step), over how many logged steps, and `why` where α stays 1 uncalibrated."""

    alpha: float
    low: float | None = None
    high: float | None = None
    logged: float | None = None
    model: float | None = None
    model_none: float | None = None
    steps: int | None = None
    why: str | None = None

    def columns(self) -> dict[str, float | None]:
        return {
            C.FORECAST_ALPHA: self.alpha,
            C.FORECAST_ALPHA_LOW: self.low,
            C.FORECAST_ALPHA_HIGH: self.high,
            C.FORECAST_DRIFT_LOGGED: self.logged,
            C.FORECAST_DRIFT_MODEL: self.model,
            C.FORECAST_DRIFT_STEPS: None if self.steps is None else float(self.steps),
        }


def _model_drift(
    world: World, off: ReplayConfig, steps: int, budget: float, seed: int, simulate: Simulate
) -> float:
    """The model's drift under shaping off: expected minutes per rollout after `steps` simulated
    steps minus at the start, per step, each problem counted with its weight."""
    _, last = simulate(world, [off], steps, budget, seed)
    w = world.weight
    before = (world.pi * world.m).sum(-1)
    after = (last[0] * world.m).sum(-1)
    return float(((after - before) * w).sum() / w.sum() / steps)


def calibrate(
    world: World,
    off: ReplayConfig,
    drift: Drift | None,
    budget: float,
    seed: int,
    interval: float,
    simulate: Simulate,
) -> Calibration:
    """The causal share whose shaping-off forecast over the logged steps drifts as the log does
    (at `budget`; `simulate` is the forecast's, passed in with the replay the engine lends it), interpolated between `ALPHAS` on common random numbers; its interval maps the
    log's drift's bootstrap interval through the same curve."""
    if drift is None:
        return Calibration(1.0, why="the log names no problem at two steps")
    if drift.distinct < MIN_STEPS:
        why = f"the log spans {drift.distinct} steps (calibration needs {MIN_STEPS})"
        return Calibration(1.0, logged=drift.slope, why=why)
    steps = max(drift.steps, 1)
    curve = np.array(
        [_model_drift(with_alpha(world, a), off, steps, budget, seed, simulate) for a in ALPHAS]
    )
    base = Calibration(
        1.0, logged=drift.slope, model=float(curve[-1]), model_none=float(curve[0]), steps=steps
    )
    if not curve[-1] - curve[0] >= MIN_RESPONSE * drift.se:
        return replace(base, why="the model's drift hardly depends on α: the log cannot tell")
    # A monotone curve (running maximum) maps a drift to the least α that reaches it.
    rising = np.maximum.accumulate(curve)
    alpha_of = lambda x: float(np.interp(x, rising, ALPHAS))
    lo_q, hi_q = (1 - interval) / 2, (1 + interval) / 2
    lo, hi = (
        np.quantile(drift.resamples, [lo_q, hi_q]) if len(drift.resamples) else (-np.inf, np.inf)
    )
    return replace(base, alpha=alpha_of(drift.slope), low=alpha_of(lo), high=alpha_of(hi))
