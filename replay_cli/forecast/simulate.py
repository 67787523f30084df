"""The simulation: every run's efforts stepped T times on common random numbers (`simulate`),
each step's advantages computed by the engine's own replay over the drawn rollouts (`Replay`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from replay_cli.config import ReplayConfig
from replay_cli.errors import EstimatorError
from replay_cli.forecast.pool import Choices
from replay_cli.forecast.world import METRICS, World, metrics
from replay_cli.maths.effort import Direction, EffortModel, solve_eta, stepped_effort
from replay_cli.maths.level_axis import level_cumsum
from replay_cli.maths.scopes import SCOPES
from replay_cli.maths.segments import Runs
from replay_cli.maths.thresholds import with_signal

ETA_TOL = 1e-6
"""The forecast spends each step's budget to this relative precision in log KL (about 1e-6 of
η): far below its seeds' spread, at a third of the KL evaluations of the measure's 1e-12."""


@dataclass(frozen=True)
class Replay:
    """The replay's own functions over simulated rollouts, lent by the engine
    (`engine/simulated.REPLAY`: the forecast sits below the engine and imports none of it).
    `key(cfg)`: what runs replayed together in one block share (None: the config is replayed
    alone); `advantages(cfgs, drawn, groups, tiled)`: (trained advantage, trainable) of runs
    sharing a key over their drawn rollouts back to back (`tiled`: `groups` once per run),
    raising `EstimatorError` where an estimator refuses the simulated groups."""

    key: Callable[[ReplayConfig], object | None]
    advantages: Callable[
        [Sequence[ReplayConfig], dict[str, np.ndarray], Runs, Runs], tuple[np.ndarray, np.ndarray]
    ]


BLOCK_ROWS = 2_000_000
"""Simulated rollouts drawn at once across runs (memory: a few arrays of this many values)."""


@dataclass(frozen=True)
class _Rows:
    """What every run of a step shares: each rollout's problem (the row of the flattened
    (seeds, problems)), its pool row and bucket, the groups, and the success rate per cell."""

    problem: np.ndarray
    local: np.ndarray
    bucket: np.ndarray
    groups: Runs
    p_cells: np.ndarray
    cells: int  # seeds × problems × levels


def _drawn(
    world: World, rows: _Rows, pi: np.ndarray, u: np.ndarray, choices: Choices | None
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(cell, outcome, logged values) of a block of runs with efforts `pi` (runs, S, P, L), each
    (runs, rollouts) or flattened: the same random numbers `u` (and so the same `choices` of
    pool rows, where the step made them) for every run."""
    u_level, u_outcome, u_row = u
    n, levels = len(pi), pi.shape[-1]
    cdf = level_cumsum(pi.reshape(n, -1, levels))
    # A rollout's level is how many of its problem's cumulative shares its draw exceeds (the
    # last level takes the rest): one gather and comparison per level, no (runs, rollouts,
    # levels) array reduced over its short last axis.
    level = np.zeros((n, len(rows.problem)), np.int64)
    for k in range(levels - 1):
        level += u_level > cdf[:, :, k][:, rows.problem]
    cell = rows.problem * levels + level
    outcome = u_outcome < rows.p_cells.take(cell)
    if choices is not None:
        return cell, outcome, choices.values(world.pool, level, outcome)
    tiled = [np.tile(x, n) for x in (rows.local, rows.bucket, u_row)]
    drawn = world.pool.draw(tiled[0], tiled[1], level.ravel(), outcome.ravel(), tiled[2])
    return cell, outcome, drawn


def _step_sums(
    world: World,
    runs: Sequence[ReplayConfig],
    rows: _Rows,
    pi: np.ndarray,
    u: np.ndarray,
    refused: dict[int, str],
    replay: Replay,
) -> tuple[np.ndarray, np.ndarray]:
    """(ā, āy) per run, problem and level, (runs, S * P, L): each run's trained advantages of
    one step's draws, per group over its trainable rows, summed by level and by level and
    success. Runs sharing a `replay.key` (the batchable ones sharing an estimator) are drawn and
    normalised together in blocks; the others (filters, peer estimators) run by run."""
    levels = pi.shape[-1]
    a = np.zeros((len(runs), rows.cells))
    ay = np.zeros_like(a)
    size = len(runs) * rows.cells
    batches: dict[object, list[int]] = {}
    for r, cfg in enumerate(runs):
        if r not in refused:
            key = replay.key(cfg)
            batches.setdefault(r if key is None else key, []).append(r)
    block = max(1, BLOCK_ROWS // max(len(rows.problem), 1))
    # A block of more runs than a rollout has (level, outcome) cells chooses every cell's pool
    # row once for the step; a smaller one draws for each run.
    widest = max((min(len(m), block) for m in batches.values()), default=0)
    choices = Choices.of(world.pool, rows.local, rows.bucket, u[2]) if widest > 2 * levels else None
    for members in batches.values():
        for first in range(0, len(members), block):
            mine = members[first : first + block]
            cell, outcome, drawn = _drawn(world, rows, pi[mine], u, choices)
            tiled = Runs.of_lengths(np.tile(rows.groups.lengths, len(mine)))
            chosen = [runs[r] for r in mine]
            try:
                advantage, trainable = replay.advantages(chosen, drawn, rows.groups, tiled)
            except EstimatorError as exc:  # a run replayed alone: OpenRLHF's one group size
                refused[mine[0]] = str(exc).split("\n")[0]
                continue
            trained = with_signal(advantage, trainable, tiled)
            weight = trained / tiled.rows(np.maximum(tiled.sum(trainable), 1))
            where = (cell + np.asarray(mine)[:, None] * rows.cells).ravel()
            a += np.bincount(where, weight, size).reshape(a.shape)
            ay += np.bincount(where, weight * outcome.ravel(), size).reshape(a.shape)
    return a.reshape(len(runs), -1, levels), ay.reshape(len(runs), -1, levels)


def simulate(
    world: World,
    runs: Sequence[ReplayConfig],
    steps: int,
    budget: float,
    seed: int,
    replay: Replay,
    refused: dict[int, str] | None = None,
    start: np.ndarray | None = None,
    kept: dict[int, np.ndarray] | None = None,
    skill: float = 0.0,
    at: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """(steps + 1, runs, seeds, buckets, metrics): each run's trajectory from the logged effort
    (or from `start`, (runs, seeds, problems, levels)), and each run's effort after the last
    step; `kept` gets the efforts after the steps it names as keys. Every run draws
    with the same random numbers (common random numbers: a config and its shaping-off twin
    differ by their policies, not by luck). A run whose estimator refuses the simulated groups
    (OpenRLHF's one group size after a filter dropped rows) stops there: `refused` gets its
    message and the caller drops its numbers. `skill`: the success logits' drift per step (the
    fit's), the same for every run, from step `at` of the forecast (a run continued)."""
    refused = {} if refused is None else refused
    n_runs = len(runs)
    seeds, problems, levels = world.pi.shape
    begin = world.pi if start is None else start
    pi = np.broadcast_to(begin, (n_runs, seeds, problems, levels)).copy()
    sizes = world.size.ravel()
    problem = np.repeat(np.arange(seeds * problems), sizes)
    rows = _Rows(
        problem=problem,
        local=world.local.ravel()[problem],
        bucket=world.bucket.ravel()[problem],
        groups=Runs.of_lengths(sizes),
        p_cells=world.rate.reshape(-1, levels).ravel(),
        cells=seeds * problems * levels,
    )
    out = np.zeros((steps + 1, n_runs, seeds, len(SCOPES), len(METRICS)))
    now_world = world.skilled(skill * at)
    out[0] = metrics(pi, now_world.rate, world.m, world.bucket, world.weight)
    rng = np.random.default_rng([seed, 11])
    for t in range(1, steps + 1):
        u = rng.random((3, len(problem)))
        if skill:
            rows = replace(rows, p_cells=now_world.rate.reshape(-1, levels).ravel())
        a, ay = _step_sums(now_world, runs, rows, pi, u, refused, replay)
        now = EffortModel(pi, now_world.p, world.m, world.bucket, world.weight)
        # The success rates are held: the budget is spent on the effort softmax alone.
        effort = Direction.of(now, a.reshape(pi.shape), ay.reshape(pi.shape))
        direction = Direction(effort.d, np.zeros_like(effort.e))
        eta = solve_eta(now, direction, budget, tol=ETA_TOL)
        pi = stepped_effort(now, direction, eta)
        now_world = world.skilled(skill * (at + t))
        out[t] = metrics(pi, now_world.rate, world.m, world.bucket, world.weight)
        if kept is not None and t in kept:
            kept[t] = pi
    return out, pi


def path(
    cfg: ReplayConfig, budget: float, seed: int, replay: Replay
) -> Callable[[World, int, float], np.ndarray]:
    """One config's efforts (steps + 1, seeds, problems, levels) over `steps` from a world's
    start at `scale` times the step budget: the path the fit and the backtest compare with a log
    (`fit.Simulate`; shaping off for the user's log, a pilot's own config for the pilot's)."""

    def run(world: World, steps: int, scale: float) -> np.ndarray:
        kept = dict.fromkeys(range(1, steps + 1), world.pi)
        simulate(world, [cfg], steps, budget * scale, seed, replay, kept=kept)
        return np.stack([world.pi, *(kept[t][0] for t in range(1, steps + 1))])

    return run
