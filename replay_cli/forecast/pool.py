"""The logged rollouts a simulated one is drawn from: `Pool` (the sampled problems' logged
training rollouts by problem, level and outcome, with their buckets' as fallbacks) and
`Choices` (a step's draws decided up to each run's level and outcome)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
class Choices:
    """A step's draws decided up to each run's (level, outcome): for every rollout of the step
    and each of its levels × 2 outcomes, the pool row and reward it takes (runs share the random
    numbers, so they share these; a run then gathers by its own level and outcome)."""

    index: np.ndarray
    reward: np.ndarray
    base: np.ndarray  # each rollout's first entry

    @classmethod
    def of(cls, pool: Pool, local: np.ndarray, bucket: np.ndarray, u: np.ndarray) -> Choices:
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
