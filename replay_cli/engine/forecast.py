"""The forecast: what T steps of training under each config do to the logged behaviours, on the
decision measure's effort model run forward (docs/report.md, "The forecast").

On a stratified sample of problems, each simulated step draws each problem's group of n
rollouts from its current effort (a level from π, an outcome from the level's logged success
rate, held fixed, and the minutes, calls, mask flag and reward of a logged rollout of that level
and outcome), shapes and normalises them with the replay's own functions (`maths.shaping`,
`maths.grpo_arrays`; the polars plans for filters and peer estimators), and takes the decision
measure's fixed-KL natural-gradient step, applying its effort part (the success rates stay as
the log shows them). Every config runs S seeds (its own problem sample and draws each), beside
its shaping-off twin under the same seeds; the table holds the expected resolve rate, the mean
minutes of successes and failures, and the share of effort at the lowest level (giving up), per
step, length bucket and config.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.config import ForecastSettings, MeasureSettings, ReplayConfig, ShapingParams
from replay_cli.engine.batched import batchable
from replay_cli.engine.calibrate import Calibration, calibrate, logged_drift, with_alpha
from replay_cli.engine.effort_levels import GroupLevels, Problems
from replay_cli.engine.row_plans import planned_rows, raw_key
from replay_cli.errors import EstimatorError
from replay_cli.maths.bootstrap import interval, summary_value
from replay_cli.maths.chunk_arrays import ChunkArrays
from replay_cli.maths.effort import (
    Direction,
    EffortModel,
    outcome_sums,
    solve_eta,
    stepped_effort,
)
from replay_cli.maths.grpo_arrays import grpo
from replay_cli.maths.level_axis import level_cumsum
from replay_cli.maths.scopes import ALL, LONG, SCOPES
from replay_cli.maths.segments import Runs
from replay_cli.maths.shaping import shape_arrays
from replay_cli.maths.thresholds import with_signal

BUCKETS = tuple(scope.name for scope in SCOPES)
METRICS = ("resolve", "solve_minutes", "fail_minutes", "give_up")
"""Per step and bucket: the expected resolve rate, the mean minutes of a resolved and of a failed
rollout, and the share of effort at the lowest level (giving up)."""
ETA_TOL = 1e-6
"""The forecast spends each step's budget to this relative precision in log KL (about 1e-6 of
η): far below its seeds' spread, at a third of the KL evaluations of the measure's 1e-12."""
LOGGED = ("level", "resolved", "reward", "minutes", "calls", "mask_sample", "zeroed")
"""What a simulated rollout takes from a logged one."""


@dataclass(frozen=True)
class Pool:
    """The logged training rollouts of the sampled problems, sorted by (problem, level, outcome),
    with each cell's start and count, and the same per (bucket, level, outcome) for cells a
    problem never logged."""

    rows: dict[str, np.ndarray]
    start: np.ndarray  # (problems, levels, 2)
    count: np.ndarray
    bucket_rows: np.ndarray  # row indices sorted by (bucket, level, outcome)
    bucket_start: np.ndarray  # (3, levels, 2)
    bucket_count: np.ndarray
    fallback_reward: np.ndarray  # (3, 2): a bucket's mean reward of failures, of successes

    @classmethod
    def of(
        cls,
        rows: dict[str, np.ndarray],
        problem: np.ndarray,
        bucket: np.ndarray,
        levels: int,
        problems: int,
    ) -> Pool:
        outcome = rows["resolved"].astype(np.int64)
        level = rows["level"].astype(np.int64)
        cell = (problem * levels + level) * 2 + outcome
        order = np.argsort(cell, kind="stable")
        rows = {k: v[order] for k, v in rows.items()}
        count = np.bincount(cell, minlength=problems * levels * 2).reshape(problems, levels, 2)
        start = np.concatenate([[0], np.cumsum(count.ravel())[:-1]]).reshape(count.shape)
        row_bucket = bucket[problem][order]
        bucket_cell = (row_bucket * levels + rows["level"].astype(np.int64)) * 2 + rows[
            "resolved"
        ].astype(np.int64)
        bucket_order = np.argsort(bucket_cell, kind="stable")
        bucket_count = np.bincount(bucket_cell, minlength=3 * levels * 2).reshape(3, levels, 2)
        bucket_start = np.concatenate([[0], np.cumsum(bucket_count.ravel())[:-1]]).reshape(
            bucket_count.shape
        )
        fallback = np.array([[0.0, 1.0]] * 3)
        for b in range(3):
            for o in (0, 1):
                mine = (row_bucket == b) & (rows["resolved"] == bool(o))
                if mine.any():
                    fallback[b, o] = rows["reward"][mine].mean()
        return cls(rows, start, count, bucket_order, bucket_start, bucket_count, fallback)

    def draw(
        self,
        problem: np.ndarray,
        bucket: np.ndarray,
        level: np.ndarray,
        outcome: np.ndarray,
        u: np.ndarray,
    ) -> dict[str, np.ndarray]:
        """The logged values of one rollout per draw (see `choose`)."""
        index, reward = self.choose(problem, bucket, level, outcome, u)
        return self.values(index, reward, level, outcome)

    def choose(
        self,
        problem: np.ndarray,
        bucket: np.ndarray,
        level: np.ndarray,
        outcome: np.ndarray,
        u: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(pool row, reward) of one rollout per draw: the problem's own of that level and
        outcome, else its bucket's, else one of the bucket's at that level with the other outcome
        (then with the bucket's mean reward of the drawn outcome)."""
        o = outcome.astype(np.int64)
        levels = self.count.shape[1]
        # Flat cells: one gather per array instead of numpy's three-index fancy indexing.
        cell = (problem * levels + level) * 2 + o
        own = self.count.ravel().take(cell)
        pick = self.start.ravel().take(cell) + np.minimum((u * own).astype(np.int64), own - 1)
        at_level = (bucket * levels + level) * 2
        wide = self.bucket_count.ravel().take(at_level + o)
        # No such rollout in the bucket either: one of the other outcome at the same level (its
        # minutes are of the level; its reward is replaced below). A level without rows in the
        # bucket is never drawn: its effort starts at 0 and a softmax step keeps it there.
        side = np.where(wide > 0, o, 1 - o)
        wide = self.bucket_count.ravel().take(at_level + side)
        from_bucket = self.bucket_rows[
            np.minimum(
                self.bucket_start.ravel().take(at_level + side)
                + np.minimum((u * wide).astype(np.int64), np.maximum(wide - 1, 0)),
                len(self.bucket_rows) - 1,
            )
        ]
        index = np.clip(np.where(own > 0, pick, from_bucket), 0, len(self.rows["reward"]) - 1)
        reward = self.rows["reward"][index]
        missing = (own == 0) & (side != o)
        if missing.any():
            reward = np.where(missing, self.fallback_reward[bucket, o], reward)
        return index, reward

    def values(
        self, index: np.ndarray, reward: np.ndarray, level: np.ndarray, outcome: np.ndarray
    ) -> dict[str, np.ndarray]:
        """The drawn rollouts' logged values: the pool's rows `index` with their `reward`,
        `level` and `outcome`."""
        out = {
            k: reward if k == "reward" else v.take(index)
            for k, v in self.rows.items()
            if k not in ("level", "resolved")
        }
        out["resolved"] = outcome.astype(bool)
        out["level"] = level
        return out


@dataclass(frozen=True)
class _Choices:
    """A step's draws decided up to each run's (level, outcome): for every rollout of the step
    and each of its levels × 2 outcomes, the pool row and reward it takes (runs share the random
    numbers, so they share these; a run then gathers by its own level and outcome)."""

    index: np.ndarray
    reward: np.ndarray
    base: np.ndarray  # each rollout's first entry

    @classmethod
    def of(cls, pool: Pool, local: np.ndarray, bucket: np.ndarray, u: np.ndarray) -> _Choices:
        levels = pool.count.shape[1]
        ways = levels * 2
        n = len(local)
        level = np.tile(np.repeat(np.arange(levels), 2), n)
        outcome = np.tile(np.array([False, True]), n * levels)
        spread = [np.repeat(x, ways) for x in (local, bucket, u)]
        index, reward = pool.choose(spread[0], spread[1], level, outcome, spread[2])
        return cls(index, reward, np.arange(n) * ways)

    def values(self, pool: Pool, level: np.ndarray, outcome: np.ndarray) -> dict[str, np.ndarray]:
        """`Pool.draw`'s values for runs' `level` and `outcome`, (runs, rollouts) each."""
        at = (self.base + level * 2 + outcome).ravel()
        return pool.values(
            self.index.take(at), self.reward.take(at), level.ravel(), outcome.ravel()
        )


def off_twin(cfg: ReplayConfig) -> ReplayConfig:
    """A config's shaping-off twin: the same estimator and masking, no shaping."""
    shaping = ShapingParams(enabled=False, mask_flagged=cfg.shaping.mask_flagged)
    return cfg.model_copy(update={"shaping": shaping})


def _chunk(rows: dict[str, np.ndarray], runs: Runs) -> ChunkArrays:
    """A simulated chunk as the shaping and GRPO functions read it (every row trains)."""
    n = len(rows["reward"])
    reward = rows["reward"].astype(np.float64)
    return ChunkArrays(
        frame=pl.DataFrame(),
        runs=runs,
        steps=Runs.of_lengths(np.array([n])),
        reward=reward,
        truthy=reward != 0,
        negative=reward < 0,
        resolved=rows["resolved"].astype(bool),
        minutes=rows["minutes"].astype(np.float64),
        calls=rows["calls"],
        mask_sample=rows["mask_sample"].astype(bool),
        zeroed=rows["zeroed"].astype(bool),
        is_val=np.zeros(n, bool),
        train=np.ones(n, bool),
        train_runs=np.arange(len(runs)),
    )


def _frame(rows: dict[str, np.ndarray], runs: Runs) -> pl.DataFrame:
    """A simulated chunk as the polars plans read it (filters and peer estimators)."""
    n = len(rows["reward"])
    group = np.repeat(np.arange(len(runs)), runs.lengths)
    index = np.arange(n) - np.repeat(runs.starts, runs.lengths)
    return pl.DataFrame(
        {
            S.STEP: np.ones(n, np.int64),
            S.GROUP_ID: group.astype(np.int64),
            S.ROLLOUT_INDEX: index.astype(np.int64),
            S.REWARD: rows["reward"].astype(np.float64),
            S.RESOLVED: rows["resolved"].astype(bool),
            S.RUN_TIME: rows["minutes"].astype(np.float64) * 60.0,
            S.CALLS: rows["calls"].astype(np.int64),
            S.MASK_SAMPLE: rows["mask_sample"].astype(bool),
            S.SPLIT: np.full(n, S.SPLIT_TRAIN),
            S.ZEROED: rows["zeroed"].astype(bool),
            S.IS_VAL: np.zeros(n, bool),
            S.GID: group.astype(np.int64),
            S.BID: np.full(n, 2, np.int64),
        }
    )


def advantages(
    cfg: ReplayConfig, rows: dict[str, np.ndarray], runs: Runs
) -> tuple[np.ndarray, np.ndarray]:
    """(trained advantage, trainable) of a config over simulated rollouts, by the replay's own
    functions: shaping and NeMo-RL's GRPO for the batched path, the polars plans otherwise."""
    c = _chunk(rows, runs)
    if batchable(cfg):
        a, mask_flagged = raw_key(cfg)
        shaped = shape_arrays(c, cfg.shaping).reward_shaped
        masked = c.mask_sample & mask_flagged
        valid = ~masked if a.exclude_masked else np.ones(len(masked), bool)
        return grpo(shaped, valid, runs, a).advantage.astype(np.float64), ~masked
    (out,) = planned_rows(ChunkArrays.of(_frame(rows, runs)), [cfg], {})
    advantage = out[S.ADVANTAGE].fill_null(0.0).to_numpy().astype(np.float64)
    trainable = (~out[S.MASKED] & out[S.KEPT]).to_numpy()
    return advantage, trainable


def _metrics(
    pi: np.ndarray, p: np.ndarray, m: np.ndarray, bucket: np.ndarray, weight: np.ndarray
) -> np.ndarray:
    """(..., buckets, metrics) of efforts `pi` (..., problems, levels): the expected resolve rate,
    the mean minutes of a resolved and of a failed rollout, and the share of effort at the
    lowest level; buckets all, short, medium, long, each problem weighted by `weight`."""
    sums = outcome_sums(pi, p, m)
    low = pi[..., 0]
    out = np.full((*pi.shape[:-2], len(SCOPES), len(METRICS)), np.nan)
    for b, scope in enumerate(SCOPES):
        w = scope.weights(weight, bucket)
        total = w.sum(-1)
        if np.all(total <= 0):
            continue
        r = (sums["p"] * w).sum(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[..., b, 0] = r / total
            out[..., b, 1] = (sums["pm"] * w).sum(-1) / r
            # Failures summed directly, as the measure does (total - r cancels where rare).
            out[..., b, 2] = (sums["fm"] * w).sum(-1) / (sums["f"] * w).sum(-1)
            out[..., b, 3] = (low * w).sum(-1) / total
    return out


@dataclass(frozen=True)
class World:
    """The forecast's problems, per seed (S, P): their model, group sizes, weights and pool."""

    pi: np.ndarray  # (S, P, K), the starting effort
    p: np.ndarray  # success rates kept off 0 and 1 (the logits)
    rate: np.ndarray  # success rates as estimated (draws and expected outcomes)
    m: np.ndarray
    bucket: np.ndarray  # (S, P)
    weight: np.ndarray  # (S, P): stands for this many training groups of the input
    size: np.ndarray  # (S, P): rollouts per group
    local: np.ndarray  # (S, P): the problem's row in the pool
    pool: Pool
    index: np.ndarray  # (S, P): the problem's row in the input's problems (the bootstrap's unit)

    def first(self, seeds: int) -> World:
        """The world of the first `seeds` seeds."""
        cut = slice(0, seeds)
        return World(
            pi=self.pi[cut],
            p=self.p[cut],
            rate=self.rate[cut],
            m=self.m[cut],
            bucket=self.bucket[cut],
            weight=self.weight[cut],
            size=self.size[cut],
            local=self.local[cut],
            pool=self.pool,
            index=self.index[cut],
        )

    @classmethod
    def of(cls, problems: Problems, groups: Sequence[GroupLevels], seeds: int) -> World:
        model = problems.model
        bits = np.concatenate([g.seeds for g in groups])
        sizes = np.concatenate([g.count.sum(1) for g in groups])
        offsets = np.cumsum([0] + [len(g.bucket) for g in groups[:-1]])
        rows = {
            k: np.concatenate([g.rows[k] for g in groups])
            for k in groups[0].rows  # type: ignore[index]
        }
        rows["group"] = np.concatenate(
            [g.rows["group"] + o for g, o in zip(groups, offsets, strict=True)]  # type: ignore[index]
        )
        of_group = problems.of_group
        problem_bits = np.zeros(len(model), np.int64)
        np.bitwise_or.at(problem_bits, of_group, bits)
        # Every simulated group has the log's most common group size (the trainer's rollouts per
        # prompt): a group a filter or a lost rollout shortened is no setting to train with, and
        # estimators that reshape by prompt (OpenRLHF) refuse groups of several sizes.
        size = int(np.bincount(sizes.astype(np.int64)).argmax()) if len(sizes) else 1
        chosen = [np.flatnonzero(problem_bits & (1 << s)) for s in range(seeds)]
        width = max(len(c) for c in chosen)
        if any(len(c) != width for c in chosen):  # a bucket smaller than the sample: all of it
            chosen = [np.flatnonzero(problem_bits > 0)] * seeds
            width = len(chosen[0])
        kept = np.flatnonzero(problem_bits > 0)
        local = np.full(len(model), -1)
        local[kept] = np.arange(len(kept))
        row_problem = local[of_group[rows.pop("group")]]
        pool = Pool.of(rows, row_problem, model.bucket[kept], model.pi.shape[1], len(kept))
        # Each sampled problem stands for its bucket's share of the input's training groups.
        index = np.stack(chosen)
        bucket = model.bucket[index]
        weight = np.zeros(index.shape)
        for b in range(3):
            total = model.weight[model.bucket == b].sum()
            mine = bucket == b
            weight[mine] = total / np.maximum(mine.sum(1, keepdims=True), 1).repeat(width, 1)[mine]
        rate = model.p if model.rate is None else model.rate
        return cls(
            pi=model.pi[index],
            p=model.p[index],
            rate=rate[index],
            m=model.m[index],
            bucket=bucket,
            weight=weight,
            size=np.full(index.shape, max(size, 1), np.int64),
            local=local[index],
            pool=pool,
            index=index,
        )


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
    world: World, rows: _Rows, pi: np.ndarray, u: np.ndarray, choices: _Choices | None
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


def _batched_advantages(
    runs: Sequence[ReplayConfig], drawn: dict[str, np.ndarray], groups: Runs, tiled: Runs
) -> tuple[np.ndarray, np.ndarray]:
    """(trained advantage, trainable) of batchable runs sharing a `raw_key` over their drawn
    rollouts, back to back (`tiled`: one run's `groups` repeated per run): each run shaped by
    its own settings, then one GRPO call over every group, which is per group as the replay's."""
    n = len(drawn["reward"]) // len(runs)
    shaped = np.concatenate(
        [
            shape_arrays(
                _chunk({k: v[j * n : (j + 1) * n] for k, v in drawn.items()}, groups),
                cfg.shaping,
            ).reward_shaped
            for j, cfg in enumerate(runs)
        ]
    )
    a, mask_flagged = raw_key(runs[0])
    masked = drawn["mask_sample"].astype(bool) & mask_flagged
    valid = ~masked if a.exclude_masked else np.ones(len(masked), bool)
    return grpo(shaped, valid, tiled, a).advantage.astype(np.float64), ~masked


def _step_sums(
    world: World,
    runs: Sequence[ReplayConfig],
    rows: _Rows,
    pi: np.ndarray,
    u: np.ndarray,
    refused: dict[int, str],
) -> tuple[np.ndarray, np.ndarray]:
    """(ā, āy) per run, problem and level, (runs, S * P, L): each run's trained advantages of
    one step's draws, per group over its trainable rows, summed by level and by level and
    success. Batchable runs sharing an estimator are drawn and normalised together in blocks; the
    others (filters, peer estimators) take the polars plans run by run."""
    levels = pi.shape[-1]
    a = np.zeros((len(runs), rows.cells))
    ay = np.zeros_like(a)
    size = len(runs) * rows.cells
    batches: dict[object, list[int]] = {}
    for r, cfg in enumerate(runs):
        if r not in refused:
            batches.setdefault(raw_key(cfg) if batchable(cfg) else r, []).append(r)
    block = max(1, BLOCK_ROWS // max(len(rows.problem), 1))
    # A block of more runs than a rollout has (level, outcome) cells chooses every cell's pool
    # row once for the step; a smaller one draws for each run.
    widest = max((min(len(m), block) for m in batches.values()), default=0)
    choices = (
        _Choices.of(world.pool, rows.local, rows.bucket, u[2]) if widest > 2 * levels else None
    )
    for members in batches.values():
        for first in range(0, len(members), block):
            mine = members[first : first + block]
            cell, outcome, drawn = _drawn(world, rows, pi[mine], u, choices)
            tiled = Runs.of_lengths(np.tile(rows.groups.lengths, len(mine)))
            if batchable(runs[mine[0]]):
                chosen = [runs[r] for r in mine]
                advantage, trainable = _batched_advantages(chosen, drawn, rows.groups, tiled)
            else:
                try:
                    advantage, trainable = advantages(runs[mine[0]], drawn, rows.groups)
                except EstimatorError as exc:
                    refused[mine[0]] = str(exc).split("\n")[0]
                    continue
            trained = with_signal(advantage, trainable, tiled)
            weight = trained / tiled.rows(np.maximum(tiled.sum(trainable), 1))
            where = (cell + np.asarray(mine)[:, None] * rows.cells).ravel()
            a += np.bincount(where, weight, size).reshape(a.shape)
            ay += np.bincount(where, weight * outcome.ravel(), size).reshape(a.shape)
    return a.reshape(len(runs), -1, levels), ay.reshape(len(runs), -1, levels)


def _simulate(
    world: World,
    runs: Sequence[ReplayConfig],
    steps: int,
    budget: float,
    seed: int,
    refused: dict[int, str] | None = None,
    start: np.ndarray | None = None,
    kept: dict[int, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(steps + 1, runs, seeds, buckets, metrics): each run's trajectory from the logged effort
    (or from `start`, (runs, seeds, problems, levels)), and each run's effort after the last
    step; `kept` gets the efforts after the steps it names as keys. Every run draws
    with the same random numbers (common random numbers: a config and its shaping-off twin
    differ by their policies, not by luck). A run whose estimator refuses the simulated groups
    (OpenRLHF's one group size after a filter dropped rows) stops there: `refused` gets its
    message and the caller drops its numbers."""
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
    out[0] = _metrics(pi, world.rate, world.m, world.bucket, world.weight)
    rng = np.random.default_rng([seed, 11])
    for t in range(1, steps + 1):
        u = rng.random((3, len(problem)))
        a, ay = _step_sums(world, runs, rows, pi, u, refused)
        now = EffortModel(pi, world.p, world.m, world.bucket, world.weight)
        # The success rates are held: the budget is spent on the effort softmax alone.
        effort = Direction.of(now, a.reshape(pi.shape), ay.reshape(pi.shape))
        direction = Direction(effort.d, np.zeros_like(effort.e))
        eta = solve_eta(now, direction, budget, tol=ETA_TOL)
        pi = stepped_effort(now, direction, eta)
        out[t] = _metrics(pi, world.rate, world.m, world.bucket, world.weight)
        if kept is not None and t in kept:
            kept[t] = pi
    return out, pi


def forecast(
    problems: Problems,
    groups: Sequence[GroupLevels],
    configs: Sequence[ReplayConfig],
    settings: ForecastSettings,
    budget: float,
    intervals: MeasureSettings | None = None,
) -> tuple[pl.DataFrame, dict[str, dict[str, float | None]], pl.DataFrame]:
    """The forecast table (config_id, budget, step, bucket, metric, mean, low, high over seeds;
    `_off` metrics for the config's shaping-off twin, `_vs_off` for their per-seed ratio or
    difference), per config its summary columns at the horizon T (the outcome the rule reads,
    with intervals from resampling the problems: `horizon`), and the resample table (config_id,
    resample, the `RESAMPLED` columns) the verdict's confidence reads."""
    intervals = intervals or MeasureSettings()
    world = World.of(problems, groups, settings.seeds)
    calibration: Calibration | None = None
    if settings.calibrate:
        drift = logged_drift(problems, groups, intervals)
        calibration = calibrate(
            world, off_twin(configs[0]), drift, budget, settings.seed, intervals.interval, _simulate
        )
        world = with_alpha(world, calibration.alpha)
    twins = {raw_key(c) if batchable(c) else c.config_id: off_twin(c) for c in configs}
    keys = list(twins)
    runs = [*configs, *twins.values()]
    twin_of = [
        len(configs) + keys.index(raw_key(c) if batchable(c) else c.config_id) for c in configs
    ]
    steps, seed = settings.steps, settings.seed
    refused: dict[int, str] = {}
    halfway = max(1, steps // 2)
    kept: dict[int, np.ndarray] = {halfway: world.pi} if settings.check_budgets else {}
    sim, last = _simulate(world, runs, steps, budget, seed, refused, kept=kept)
    frames = [_table(sim, configs, twin_of, budget)]
    outcomes: list[tuple[str, World, np.ndarray]] = [("", world, last)]
    if settings.check_budgets:
        # The checks read the rule's numbers at their end only: half the seeds serve them. After
        # twice the steps is the same run continued for T more steps (fresh draws).
        half = world.first(max(1, settings.seeds // 2))
        for check, scale in (("half", 0.5), ("twice", 2.0)):
            sim, end = _simulate(half, runs, steps, budget * scale, seed, refused)
            frames.append(_table(sim, configs, twin_of, budget * scale))
            outcomes.append((check, half, end))
        outcomes.append(("half_steps", world, kept[halfway]))
        start = last[:, : half.pi.shape[0]]
        _, longer = _simulate(half, runs, steps, budget, seed + 1, refused, start=start)
        outcomes.append(("twice_steps", half, longer))
    columns: dict[str, dict] = {c.config_id: {} for c in configs}
    resamples = pl.DataFrame()
    for check, sub, end in outcomes:
        point, boot = horizon(sub, end, twin_of, intervals)
        for k in range(len(configs)):
            why = refused.get(k) or refused.get(twin_of[k])
            if why is None:
                continue
            for name in point:
                point[name][k] = None
            for name in boot:
                boot[name][:, k] = np.nan
            columns[configs[k].config_id][REFUSED] = why
        for k, cfg in enumerate(configs):
            mine = {name: v[k] for name, v in point.items()}
            if check:
                mine = {C.at_check(n, check): v for n, v in mine.items() if _base(n) in RULED}
            columns[cfg.config_id] |= mine
        if not check and boot:
            b = next(iter(boot.values())).shape[0]
            resamples = pl.DataFrame(
                {
                    S.CONFIG_ID: np.repeat(np.array([c.config_id for c in configs]), b).tolist(),
                    "resample": np.tile(np.arange(b), len(configs)),
                    **{name: boot[name].T.reshape(-1) for name in RESAMPLED},
                }
            )
    start = _metrics(world.pi, world.rate, world.m, world.bucket, world.weight)
    sampled = {
        C.FORECAST_STEPS: float(settings.steps),
        C.FORECAST_PROBLEMS: float(world.pi.shape[1]),
        C.FORECAST_PROBLEMS_TOTAL: float(len(problems.model)),
        C.FORECAST_PROBLEMS_SAMPLED: float(len(np.unique(world.index))),
        C.FORECAST_BUDGET: budget,
        # The calibration's columns only where it ran: off, they would be α = 1 and blanks.
        **(calibration.columns() if calibration is not None else {}),
    }
    for where in (ALL, LONG):
        b, scope = SCOPES.index(where), where.suffix
        sampled[C.scoped(C.F_RESOLVE_START, scope)] = summary_value(np.mean(start[:, b, 0]))
        sampled[C.scoped(C.F_FAIL_START, scope)] = summary_value(np.mean(start[:, b, 2]))
    for cid in columns:
        columns[cid] |= sampled
    return pl.concat(frames), columns, resamples


REFUSED = C.FORECAST_REFUSED
HORIZON_SCOPES = (ALL, LONG)
"""The horizon's scopes: all problems, and the long bucket."""
RESAMPLED = (
    C.F_RESOLVE_VS_OFF,
    C.F_RESOLVE_VS_OFF_LONG,
    C.F_SOLVE_VS_OFF,
)
"""The horizon's numbers the resample table holds (what the rule reads)."""
INTERVALS = C.FORECAST_INTERVALS
"""The horizon's numbers given an interval (`_low`, `_high`), in every scope."""
RULED = (*INTERVALS, *(C.bound(n, end) for n in INTERVALS for end in ("low", "high")))
"""What the checks re-read at half and twice the budget and the steps (`catalogue.CHECKS`)."""


def _base(name: str) -> str:
    return name.partition("@")[0]


def horizon(
    world: World, last: np.ndarray, twin_of: list[int], settings: MeasureSettings
) -> tuple[dict[str, list[float | None]], dict[str, np.ndarray]]:
    """The outcome after T steps per config, against its shaping-off twin, over all problems and
    on long problems: the resolve rate and its ratio to shaping off's, the mean minutes of a
    resolved and of a failed rollout and their differences to shaping off's; each problem
    counted with its weight, the seeds pooled. Intervals (`_low`, `_high`, at
    `settings.interval`) from a paired bootstrap over problems: each problem of the input gets
    one Poisson(1) weight per resample, the same for every config, twin and seed that drew it.
    Returns the point values (name -> per config) and the resampled `RESAMPLED` (name ->
    (resamples, configs))."""
    sums = outcome_sums(last, world.rate[None], world.m[None])  # each (runs, S, P)
    flat = {k: v.reshape(v.shape[0], -1) for k, v in sums.items()}
    problem, unit = np.unique(world.index.ravel(), return_inverse=True)
    rng = np.random.default_rng([settings.seed, 17])
    draws = rng.poisson(1.0, size=(settings.resamples, len(problem))).astype(np.float64)
    weights = np.concatenate([np.ones((1, len(problem))), draws])[:, unit]  # (1 + B, S * P)
    configs = np.arange(len(twin_of))
    twins = np.asarray(twin_of, dtype=np.int64)
    point: dict[str, list[float | None]] = {}
    boot: dict[str, np.ndarray] = {}
    lo_q, hi_q = (1 - settings.interval) / 2, (1 + settings.interval) / 2
    for where in HORIZON_SCOPES:
        scope = where.suffix
        mine = where.weights(world.weight.ravel(), world.bucket.ravel())
        w = weights * mine  # (1 + B, S * P)
        total = w.sum(-1)[:, None]
        summed = {k: w @ v.T for k, v in flat.items()}  # (1 + B, runs)
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = summed["p"] / total
            solve = summed["pm"] / summed["p"]
            fail = summed["fm"] / summed["f"]
            values = {
                C.F_RESOLVE: rate[:, configs],
                C.F_RESOLVE_OFF: rate[:, twins],
                C.F_RESOLVE_VS_OFF: summed["p"][:, configs] / summed["p"][:, twins],
                C.F_SOLVE: solve[:, configs],
                C.F_SOLVE_OFF: solve[:, twins],
                C.F_SOLVE_VS_OFF: solve[:, configs] - solve[:, twins],
                C.F_FAIL: fail[:, configs],
                C.F_FAIL_OFF: fail[:, twins],
                C.F_FAIL_VS_OFF: fail[:, configs] - fail[:, twins],
            }
            low = (last[..., 0].reshape(len(last), -1) * mine).sum(-1) / mine.sum()
        point[C.scoped(C.F_GIVE_UP_VS_OFF, scope)] = [
            summary_value(x) for x in low[configs] - low[twins]
        ]
        for name, v in values.items():
            point[C.scoped(name, scope)] = [summary_value(x) for x in v[0]]
            if C.scoped(name, scope) in RESAMPLED:
                boot[C.scoped(name, scope)] = v[1:]
            if name in INTERVALS and settings.resamples:
                low, high = interval(v[1:], lo_q), interval(v[1:], hi_q)
                point[C.bound(name, "low", scope)] = [summary_value(x) for x in low]
                point[C.bound(name, "high", scope)] = [summary_value(x) for x in high]
    return point, boot


def _ratios(run: np.ndarray, off: np.ndarray) -> dict[str, np.ndarray]:
    """Per seed and bucket: the resolve rate against shaping off's (ratio), and the minutes and
    giving up against shaping off's (differences)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "resolve_vs_off": run[..., 0] / off[..., 0],
            "solve_minutes_vs_off": run[..., 1] - off[..., 1],
            "fail_minutes_vs_off": run[..., 2] - off[..., 2],
            "give_up_vs_off": run[..., 3] - off[..., 3],
        }


def _table(
    sim: np.ndarray, configs: Sequence[ReplayConfig], twin_of: list[int], budget: float
) -> pl.DataFrame:
    """The long forecast table of one budget: mean, low, high over seeds."""
    frames = []
    steps = sim.shape[0]
    for k, cfg in enumerate(configs):
        own, off = sim[:, k], sim[:, twin_of[k]]
        series = {name: own[..., i] for i, name in enumerate(METRICS)}
        series |= {f"{name}_off": off[..., i] for i, name in enumerate(METRICS)}
        series |= _ratios(own, off)
        names = list(series)
        values = np.stack([series[n] for n in names])  # (metrics, steps, seeds, buckets)
        with np.errstate(all="ignore"):
            stats = [values.mean(2), values.min(2), values.max(2)]  # (metrics, steps, buckets)
        shape = stats[0].shape
        frames.append(
            pl.DataFrame(
                {
                    S.CONFIG_ID: np.full(values[..., 0, :].size, cfg.config_id),
                    "budget": np.full(values[..., 0, :].size, budget),
                    "step": np.broadcast_to(np.arange(steps)[None, :, None], shape).ravel(),
                    "bucket": np.broadcast_to(np.array(BUCKETS)[None, None, :], shape).ravel(),
                    "metric": np.broadcast_to(np.array(names)[:, None, None], shape).ravel(),
                    "mean": stats[0].ravel(),
                    "low": stats[1].ravel(),
                    "high": stats[2].ravel(),
                }
            )
        )
    frame = pl.concat(frames)
    return frame.with_columns(pl.col("mean", "low", "high").fill_nan(None))
