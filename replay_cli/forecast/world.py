"""The forecast's world: the sampled problems per seed with their effort model, group sizes,
weights and pool (`World`), and what the forecast reads of an effort on it (`metrics`: per
bucket, the expected resolve rate, the minutes of successes and failures, giving up)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import numpy as np

from replay_cli import catalogue as C
from replay_cli.forecast.pool import Pool
from replay_cli.maths.effort import P_EDGE, outcome_sums
from replay_cli.maths.problems import GroupLevels, Problems
from replay_cli.maths.scopes import SCOPES

BUCKETS = tuple(scope.name for scope in SCOPES)
METRICS = C.TABLE_METRICS
"""Per step and bucket: the expected resolve rate, the mean minutes of a resolved and of a failed
rollout, and the share of effort at the lowest level (giving up)."""


def metrics(
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

    def skilled(self, drift: float) -> World:
        """The world with every succeeding level's success logit moved by `drift` (skill: the
        fit's logit drift per step times the steps from the start); a level at rate 0 stays 0."""
        if drift == 0:
            return self
        q = np.clip(self.rate, P_EDGE, 1 - P_EDGE)
        z = np.log(q) - np.log1p(-q) + drift
        rate = np.where(self.rate > 0, 0.5 * (1.0 + np.tanh(0.5 * z)), 0.0)
        return replace(self, rate=rate, p=np.clip(rate, P_EDGE, 1 - P_EDGE))

    def first(self, seeds: int) -> World:
        """The world of the first `seeds` seeds."""
        cut = {f.name: getattr(self, f.name)[:seeds] for f in fields(self) if f.name != "pool"}
        return replace(self, **cut)

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
