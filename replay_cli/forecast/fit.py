"""The forecast's unknowns fitted to the logged shaping-off trajectory (issue 53, items 2 and 5).

From the start (`start.py`) the forecast of shaping off must reproduce what the run then did: per
logged step and length bucket, the resolve rate and each effort level's share, on the same
problems (`trajectory.py`). What the model cannot know from one step:

* **what each level's success owes to the effort**: per length bucket b and level k a causal
  share α_bk ∈ {0, 1} (a two-way choice: effort causes the level's success, or buys none of it;
  the share drift reads α·δ, so a share between trades against the step size: fitted on [0, 1]
  with δ free it read α = ½ at 4-8× the step where effort fully pays, docs/testing.md; per
  bucket, since where failures take longer than successes "long runs fail" can be an
  outcome-time effect on short problems while effort pays on long ones); on a problem of bucket
  b the success rate at level k is p̄ + α_bk (p_k − p̄) (p̄ the problem's effort-weighted rate
  over the levels that ever succeed in its bucket, the problem's resolve rate kept); a level
  that never succeeds there (giving up, the time limit) stays at 0. With a fixed-KL step, α sets
  how much of the step follows success: α = 1 drifts the shares as the model does, α → 0 leaves
  the effort direction noise and the shares flat, so the **share drift** reads α;
* **skill**: success that rises at fixed effort, a drift of every succeeding level's success
  logit per step (the same under every config: the log shows shaping off's only), read from the
  **resolve drift left after the share-driven part** (the within-level slope would absorb the
  strategy mix that shifts inside a run-time level where effort pays);
* **the step's size** δ: fitted jointly with α on a grid of multiples of the configured
  `--step-kl` (`SCALES`), the configured one preferred: another is used only where it lowers
  the share drift's χ² by `IDENTIFIED` more than the configured one at its own best α (the share
  drift alone reads α·δ; the resolve and minutes it moves, and a level that never succeeds, tell
  them apart only partly, so the prior decides where the log does not).

Shaping off is simulated over the logged steps from the start at a uniform α (`ALPHAS`) at each
step size (`SCALES`), then per (bucket, level) the other choice around the best where the log
identifies α, at the best's step size, and those of them that lower the χ² together; skill is a 1-D scan on each
path's stored reading (`SKILLS`: skill hardly changes the shares, so no new simulation). The χ²
of each (α, skill) is kept per bootstrap resample of the problems, so the fit's intervals and the
backtest's band refit in every resample by re-scoring, not re-simulating. A value is used only
where the log rejects the cautious reading (α = 1, no skill) by Δχ² ≥ `IDENTIFIED`; and the
backtest (`backtest.py`) must confirm it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from replay_cli.forecast.trajectory import Cells, Logged, Reading
from replay_cli.forecast.world import World
from replay_cli.maths.effort import P_EDGE
from replay_cli.maths.scopes import LENGTHS

MIN_FIT_STEPS = 4
"""Distinct logged steps the fit needs (fewer: the cautious reading)."""
SETTLE_STEPS = 48
"""About the logged steps of a shaping-off run (problems named, logged at every step) from which
the fit reads what a short log cannot tell: tests/worlds' `run48` logs identify it, its `run12`
logs seldom do (docs/testing.md, "The fit against the baseline")."""
ALPHAS = (0.0, 1.0)
"""The uniform causal shares simulated first: effort buys nothing, or all of the success."""
SCALES = (1.0, 0.25, 0.5, 2.0, 4.0, 8.0)
"""The step sizes simulated, as multiples of the configured one (first)."""
GRID = tuple((a, d) for d in SCALES for a in ALPHAS)
"""The fit's first paths: (uniform α, step size) pairs."""
CAUTIOUS = ((1.0, 1.0),)
"""The cautious reading's path alone: what the backtest checks where the fit is off."""
SKILLS = np.round(np.linspace(-0.05, 0.15, 81), 6)
"""Skill's scan: success logit drift per step (0.0025 apart; 0 among them)."""
IDENTIFIED = 4.0
"""The log identifies a value where it lowers χ² by at least this (about two standard errors)."""
RESAMPLES = 32
"""Bootstrap resamples of the problems for the intervals and the backtest's band."""
SHARES_FROM = 2
"""`Logged.observed`'s columns: resolve, minutes, then each level's share."""

Simulate = Callable[[World, int, float], np.ndarray]
"""Shaping off's efforts (steps + 1, seeds, problems, levels) over `steps` from a world's start
at a multiple of the configured step size (the forecast's simulation with its twin, budget, seed
and replay bound)."""


def alive(world: World) -> np.ndarray:
    """(buckets, levels) whether a level ever succeeds on a length bucket's problems."""
    levels = world.rate.shape[-1]
    live = (world.rate > 0).reshape(-1, levels)
    bucket = world.bucket.ravel()
    return np.stack([live[bucket == b].any(0) for b in range(len(LENGTHS))])


def with_shares(world: World, alpha: np.ndarray) -> World:
    """The world at causal shares `alpha`, (buckets, levels) or (levels,) for every bucket: on a
    problem of bucket b each level that succeeds in b has its rate moved toward the problem's
    effort-weighted rate over those levels by 1 − α[b, k], then shifted so that the problem's
    resolve rate under its starting effort stays as logged; a level that never succeeds in the
    bucket stays 0."""
    on_bucket = alive(world)
    alpha = np.broadcast_to(np.asarray(alpha, np.float64), on_bucket.shape)
    if np.all(alpha[on_bucket] >= 1.0):
        return world
    on, a = on_bucket[world.bucket], alpha[world.bucket]  # (seeds, problems, levels)
    rate = world.rate
    pi = world.pi * on
    mass = np.maximum(pi.sum(-1, keepdims=True), 1e-300)
    mean = (pi * rate).sum(-1, keepdims=True) / mass
    moved = mean + a * (rate - mean)
    moved -= ((pi * moved).sum(-1, keepdims=True) - mean * mass) / mass
    out = np.where(on, np.clip(moved, 0.0, 1.0), rate)
    return replace(world, rate=out, p=np.clip(out, P_EDGE, 1 - P_EDGE))


@dataclass(frozen=True)
class Grid:
    """The simulated shaping-off paths (one per α and step size) read at the logged groups, and
    their χ²."""

    alphas: list[np.ndarray]
    scales: list[float]
    readings: list[Reading]
    cells: Cells

    @property
    def cautious(self) -> int:
        """The path at α = 1 and the configured step size."""
        return next(
            i
            for i, (a, d) in enumerate(zip(self.alphas, self.scales, strict=True))
            if np.all(a >= 1.0) and d == 1.0
        )

    @property
    def prior(self) -> np.ndarray:
        """(points,) the χ² a path pays for a step size other than the configured one."""
        return IDENTIFIED * (np.asarray(self.scales) != 1.0)

    def table(self, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """χ² of the logged groups `keep`: of the level shares (points, 1 + B), and of the
        resolve rate (points, skills, 1 + B)."""
        resolve = [
            [self.cells.chi2(r.predicted(s), (0,), keep) for s in SKILLS] for r in self.readings
        ]
        return self.drift(keep), np.asarray(resolve)

    def drift(self, keep: np.ndarray) -> np.ndarray:
        """χ² of the level shares of the logged groups `keep`, (points, 1 + B)."""
        levels = self.cells.logged.count.shape[1]
        shares = range(SHARES_FROM, SHARES_FROM + levels)
        return np.asarray([self.cells.chi2(r.predicted(), shares, keep) for r in self.readings])

    def grown(
        self, world: World, alpha: np.ndarray, scale: float, simulate: Simulate, steps: int
    ) -> Grid:
        """The grid with the path at `alpha` and step size `scale` added."""
        offset = self.readings[0].offset
        path = simulate(with_shares(world, alpha), steps, scale)
        reading = Reading.of(world, self.cells.logged, path, offset)
        return Grid(
            [*self.alphas, alpha], [*self.scales, scale], [*self.readings, reading], self.cells
        )


@dataclass(frozen=True)
class Choice:
    """A reading of the grid: the path index and skill index used, whether each was read from
    the log (else the cautious value), and the resamples' own best (path, skill)."""

    point: int
    skill: int
    fitted: dict[str, bool]
    resampled: np.ndarray  # (B, 2)
    gain: float  # χ² the best reading gains over the cautious one


def choose(table: tuple[np.ndarray, np.ndarray], grid: Grid) -> Choice:
    """The reading the log identifies (`IDENTIFIED`), else the cautious one (α = 1, the
    configured step size, no skill): α and the step size from the shares' drift (another step
    size pays `Grid.prior`), skill from the resolve drift at that path."""
    drift, resolve = table
    drift = drift + grid.prior[:, None]
    one = grid.cautious
    zero = int(np.flatnonzero(SKILLS == 0)[0])
    best = int(np.argmin(drift[:, 0]))
    use_alpha = drift[one, 0] - drift[best, 0] >= IDENTIFIED
    point = best if use_alpha else one
    s_best = int(np.argmin(resolve[point, :, 0]))
    use_skill = resolve[point, zero, 0] - resolve[point, s_best, 0] >= IDENTIFIED
    skill = s_best if use_skill else zero
    points = drift[:, 1:].argmin(0)
    skills = resolve[points, :, np.arange(1, drift.shape[1])].argmin(1)
    gain = float(
        drift[one, 0] - drift[best, 0] + resolve[point, zero, 0] - resolve[point, s_best, 0]
    )
    resampled = np.stack([points, skills], 1)
    return Choice(point, skill, {"alpha": use_alpha, "skill": use_skill}, resampled, gain)


@dataclass(frozen=True)
class Fit:
    """What the forecast uses and why: α per (length bucket, level) with the interval ends, skill as a logit drift
    per step and in points of resolve a step (with its interval), over how many logged steps,
    and `why` where the reading is the cautious one."""

    alpha: np.ndarray
    steps: int
    alpha_low: np.ndarray | None = None
    alpha_high: np.ndarray | None = None
    skill: float = 0.0
    points: float = 0.0
    points_low: float | None = None
    points_high: float | None = None
    fitted: dict[str, bool] = field(default_factory=dict)
    why: str | None = None
    settle: int | None = None
    scale: float = 1.0  # the step size, a multiple of the configured one

    @classmethod
    def cautious(cls, levels: int, steps: int, why: str, settle: int | None = None) -> Fit:
        """The cautious reading, `why`, and about how many logged steps may settle it (None:
        more steps would not: the fit read the log and its forecast did not hold)."""
        return cls(np.ones((len(LENGTHS), levels)), steps, why=why, settle=settle)

    def long_level(self, on: np.ndarray, bucket: int = -1) -> int:
        """The longest level that ever succeeds on a bucket's problems (`on`, (buckets,
        levels); the long bucket's by default: the statement's 'long runs')."""
        k = np.flatnonzero(on[bucket])
        return int(k[-1]) if len(k) else self.alpha.shape[-1] - 1


def fitted(grid: Grid, choice: Choice, steps: int, on: np.ndarray, interval: float) -> Fit:
    """The `Fit` of a `choice` on the grid, with intervals from the resamples' own best."""
    lo_q, hi_q = (1 - interval) / 2, (1 + interval) / 2
    alphas = np.stack([grid.alphas[i] for i in choice.resampled[:, 0]])
    curve = 100 * grid.readings[choice.point].curvature()
    skills = SKILLS[choice.resampled[:, 1]] * curve
    skill = float(SKILLS[choice.skill])
    levels = grid.alphas[0].shape[-1]
    if not any(choice.fitted.values()):
        settle = math.ceil(steps * (IDENTIFIED / max(choice.gain, 0.25)) ** (1 / 3))
        why = "its drift does not tell what effort buys from skill"
        return Fit.cautious(levels, steps, why, settle=max(settle, steps + 1))
    return Fit(
        alpha=np.where(on, grid.alphas[choice.point], 1.0),
        steps=steps,
        alpha_low=np.quantile(alphas, lo_q, 0),
        alpha_high=np.quantile(alphas, hi_q, 0),
        skill=skill,
        points=skill * curve,
        points_low=float(np.quantile(skills, lo_q)),
        points_high=float(np.quantile(skills, hi_q)),
        fitted=choice.fitted,
        scale=grid.scales[choice.point],
    )


def build(
    world: World,
    logged: Logged,
    width: int,
    simulate: Simulate,
    seed: int,
    points: tuple[tuple[float, float], ...] = GRID,
) -> tuple[Grid, int]:
    """The paths at `points` (uniform α, step size) over the logged steps (and the steps
    simulated)."""
    offset = (width - 1) / 2
    steps = max(1, math.ceil(float(logged.rank.max()) - offset))
    rng = np.random.default_rng([seed, 53])
    problems = int(logged.code.max()) + 1
    draws = rng.poisson(1.0, (RESAMPLES, problems)).astype(np.float64)
    cells = Cells.of(logged, np.concatenate([np.ones((1, problems)), draws]))
    levels = world.pi.shape[-1]
    readings, alphas, scales = [], [], []
    for a, scale in points:
        alpha = np.full((len(LENGTHS), levels), a)
        path = simulate(with_shares(world, alpha), steps, scale)
        readings.append(Reading.of(world, logged, path, offset))
        alphas.append(alpha)
        scales.append(scale)
    return Grid(alphas, scales, readings, cells), steps


def refined(world: World, grid: Grid, simulate: Simulate, steps: int, keep: np.ndarray) -> Grid:
    """Where α is identified, around the grid's best at its step size: per (length bucket,
    level) that ever succeeds there, the other choice; then, where two or more of
    those lower the shares' χ², all of them together (one pass)."""
    choice = choose(grid.table(keep), grid)
    if not choice.fitted["alpha"]:
        return grid
    best, scale = grid.alphas[choice.point], grid.scales[choice.point]
    first = len(grid.alphas)
    for b, k in zip(*np.nonzero(alive(world)), strict=True):
        trial = best.copy()
        trial[b, k] = 1.0 - trial[b, k]
        if not _known(grid, trial, scale):
            grid = grid.grown(world, trial, scale, simulate, steps)
    drift = grid.drift(keep)[:, 0]
    better = [i for i in range(first, len(drift)) if drift[i] < drift[choice.point]]
    if len(better) > 1:
        trial = best.copy()
        for i in better:
            trial = np.where(grid.alphas[i] != best, grid.alphas[i], trial)
        if not _known(grid, trial, scale):
            grid = grid.grown(world, trial, scale, simulate, steps)
    return grid


def _known(grid: Grid, alpha: np.ndarray, scale: float) -> bool:
    known = zip(grid.alphas, grid.scales, strict=True)
    return any(np.allclose(alpha, a) and d == scale for a, d in known)
