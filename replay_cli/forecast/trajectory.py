"""The logged shaping-off trajectory the fit reproduces (`Logged`), the model's reading of the same
groups (`Reading`: each logged group read at its problem's simulated state at its step, so the
problem mix adds no noise), and the χ² between them per (step, length bucket) cell (`chi2`).

The logged groups are those of the start's problems (the window's, numbered as `Problems.of`
numbers them); a group of a problem the start never logged is left out. The window stands for
the policy at its middle step, so a group logged at rank r is read at simulated step
τ = r − (W − 1) / 2 (its efforts at τ clipped to the simulated steps; skill at τ itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import polars as pl

from replay_cli.forecast.start import step_rank
from replay_cli.forecast.world import World
from replay_cli.maths.effort import P_EDGE
from replay_cli.maths.problems import GroupLevels

Q_FLOOR = 0.02
"""A cell's modelled rate is kept in [Q_FLOOR, 1 − Q_FLOOR] for its binomial variance."""


@dataclass(frozen=True)
class Logged:
    """The logged groups on the start's problems: per group its step rank, length bucket,
    problem (the start's number), rollouts, successes, rollouts per level, summed minutes."""

    rank: np.ndarray
    bucket: np.ndarray
    code: np.ndarray
    n: np.ndarray
    success: np.ndarray
    count: np.ndarray
    minutes: np.ndarray

    @classmethod
    def of(cls, start: Sequence[GroupLevels], groups: Sequence[GroupLevels]) -> Logged | None:
        """None where the groups name no problem (no `instance_id`: none is logged twice)."""
        if not start or start[0].problem is None or any(g.step is None for g in groups):
            return None
        ids = pl.concat([g.problem for g in start]).unique(maintain_order=True)  # type: ignore[misc]
        lookup = pl.DataFrame({"_id": ids, "_code": np.arange(len(ids))})
        codes = [
            pl.DataFrame({"_id": g.problem})
            .join(lookup, on="_id", how="left", maintain_order="left")["_code"]
            .fill_null(-1)
            .to_numpy()
            .astype(np.int64)
            for g in groups
        ]
        code = np.concatenate(codes)
        keep = code >= 0
        count = np.concatenate([g.count for g in groups]).astype(np.float64)[keep]
        return cls(
            rank=np.concatenate(step_rank(groups))[keep],
            bucket=np.concatenate([g.bucket for g in groups]).astype(np.int64)[keep],
            code=code[keep],
            n=count.sum(1),
            success=np.concatenate([g.success.sum(1) for g in groups]).astype(np.float64)[keep],
            count=count,
            minutes=np.concatenate([g.minutes.sum(1) for g in groups])[keep],
        )

    def where(self, keep: np.ndarray) -> Logged:
        return Logged(*(getattr(self, f.name)[keep] for f in fields(self)))

    @property
    def steps(self) -> int:
        return len(np.unique(self.rank))

    def recurring(self) -> bool:
        """Whether some problem is logged at two steps or more."""
        pairs = np.unique(np.stack([self.code, self.rank]), axis=1)
        return len(pairs[0]) > len(np.unique(pairs[0]))

    def observed(self) -> np.ndarray:
        """(groups, 2 + levels): resolve rate, mean minutes, each level's share."""
        n = np.maximum(self.n, 1)[:, None]
        return np.concatenate(
            [self.success[:, None] / n, self.minutes[:, None] / n, self.count / n], 1
        )


@dataclass(frozen=True)
class Reading:
    """One simulated shaping-off path read at the logged groups: per (group, seed) pair where the
    seed drew the group's problem, its effort at the group's step, its success logits (−inf at a
    level that never succeeds) and minutes, and the step τ the group's skill is read at."""

    group: np.ndarray  # (pairs,) the logged group
    pi: np.ndarray  # (pairs, levels)
    z: np.ndarray  # (pairs, levels)
    m: np.ndarray  # (pairs, levels)
    tau: np.ndarray  # (pairs,)
    groups: int
    offset: float

    @classmethod
    def of(cls, world: World, logged: Logged, path: np.ndarray, offset: float) -> Reading:
        """`path`: (steps + 1, seeds, problems, levels) shaping off's efforts from the start."""
        seeds, problems, _ = world.pi.shape
        tau = logged.rank - offset
        at = np.clip(np.round(tau).astype(np.int64), 0, len(path) - 1)
        seat = np.full((seeds, max(int(logged.code.max()) + 1, int(world.index.max()) + 1)), -1)
        for s in range(seeds):
            seat[s, world.index[s]] = np.arange(problems)
        g, s_of, p_of = [], [], []
        for s in range(seeds):
            where = seat[s, logged.code]
            ok = np.flatnonzero(where >= 0)
            g.append(ok)
            s_of.append(np.full(len(ok), s))
            p_of.append(where[ok])
        group, seed, problem = (np.concatenate(x) for x in (g, s_of, p_of))
        rate = np.clip(world.rate[seed, problem], P_EDGE, 1 - P_EDGE)
        z = np.where(world.rate[seed, problem] > 0, np.log(rate) - np.log1p(-rate), -np.inf)
        return cls(
            group=group,
            pi=path[at[group], seed, problem],
            z=z,
            m=world.m[seed, problem],
            tau=tau[group],
            groups=len(logged.rank),
            offset=offset,
        )

    def predicted(self, skill: float = 0.0) -> np.ndarray:
        """(groups, 2 + levels) like `Logged.observed`, averaged over the seeds that drew each
        group's problem (NaN where none did), success logits drifting by `skill` a step."""
        p = 0.5 * (1.0 + np.tanh(0.5 * (self.z + skill * self.tau[:, None])))
        values = np.concatenate(
            [
                (self.pi * p).sum(1, keepdims=True),
                (self.pi * self.m).sum(1, keepdims=True),
                self.pi,
            ],
            1,
        )
        hits = np.bincount(self.group, minlength=self.groups).astype(np.float64)
        total = np.stack([np.bincount(self.group, v, self.groups) for v in values.T], 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return total / hits[:, None]

    def curvature(self) -> float:
        """Points of resolve per unit of skill logit at the start: Σ π p (1 − p), averaged."""
        p = 0.5 * (1.0 + np.tanh(0.5 * self.z))
        return float((self.pi * p * (1 - p)).sum(1).mean()) if len(self.pi) else 0.0


@dataclass(frozen=True)
class Cells:
    """The logged groups' (step, bucket) cells and the problems' bootstrap weights."""

    logged: Logged
    weights: np.ndarray  # (1 + B, problems): row 0 the log as it is
    cell: np.ndarray  # (groups,)
    size: int
    observed: np.ndarray  # `Logged.observed`

    @classmethod
    def of(cls, logged: Logged, weights: np.ndarray) -> Cells:
        _, cell = np.unique(logged.rank * 3 + logged.bucket, return_inverse=True)
        size = int(cell.max()) + 1 if len(cell) else 1
        return cls(logged, weights, cell, size, logged.observed())

    def sums(self, values: np.ndarray, cell: np.ndarray) -> np.ndarray:
        """(rows, cells) of `values` (rows, groups) summed by cell."""
        rows = values.shape[0]
        at = (np.arange(rows)[:, None] * self.size + cell).ravel()
        return np.bincount(at, values.ravel(), rows * self.size).reshape(rows, self.size)

    def chi2(self, model: np.ndarray, columns: Sequence[int], keep: np.ndarray) -> np.ndarray:
        """(1 + B,) χ² of `model` (groups, 2 + levels) against the log over `columns` (of
        `Logged.observed`; rates only: each cell's difference over its binomial standard error
        at the model's rate) and the groups `keep` (a mask), each resample weighting problems."""
        ok = keep & np.isfinite(model[:, 0])
        lg = self.logged
        x, y, n = self.observed[ok], model[ok], lg.n[ok]
        h = self.cell[ok]
        w = self.weights[:, lg.code[ok]] * n  # (1 + B, groups)
        total = self.sums(w, h)  # (1 + B, cells)
        n_cell = self.sums(n[None], h)[0]
        out = np.zeros(len(w))
        for j in columns:
            q = np.clip(y[:, j], Q_FLOOR, 1 - Q_FLOOR)
            var = self.sums((n * q * (1 - q))[None], h)[0] / np.maximum(n_cell**2, 1e-300)
            d = self.sums(w * (y[:, j] - x[:, j]), h)
            with np.errstate(invalid="ignore", divide="ignore"):
                z2 = (d / np.maximum(total, 1e-300)) ** 2 / np.maximum(var, 1e-12)
            out += np.where(n_cell > 0, z2, 0.0).sum(-1)
        return out
