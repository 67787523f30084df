"""Per-group sums, minima and maxima over rows sorted by group, with numpy's `reduceat`.

polars evaluates `expr.sum().over(gid)` and `group_by(gid).agg(...)` group by group, which costs
more than the arithmetic when a group holds 16 rows; on rows sorted by the group id `reduceat` does
the whole column in one pass (4-10x faster at 1M rows). Within a group numpy's add loop sums
pairwise (unrolled by 8), not strictly in row order: a float64 sum of float32 values is exact either
way unless the values span more than 29 bits of magnitude."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np
import polars as pl


class Runs:
    """The runs of equal ids in a sorted id column: one value per run from `reduceat`."""

    def __init__(self, ids: np.ndarray | pl.Series) -> None:
        ids = ids.to_numpy() if isinstance(ids, pl.Series) else ids
        self.starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else ids[:0]
        self.lengths = np.diff(np.r_[self.starts, len(ids)]).astype(np.int64)

    @classmethod
    def of_lengths(cls, lengths: np.ndarray) -> Runs:
        """The runs of the given lengths, back to back from row 0."""
        runs = cls.__new__(cls)
        runs.lengths = np.asarray(lengths, dtype=np.int64)
        runs.starts = np.r_[0, np.cumsum(runs.lengths)[:-1]] if len(lengths) else runs.lengths
        return runs

    def __len__(self) -> int:
        return len(self.starts)

    def blocks(self, width: int) -> Iterator[tuple[slice, Runs]]:
        """Consecutive slices of whole runs of about `width` rows (at least one run each), with
        each slice's own runs: per-run work over a slice that fits the CPU's caches gives the same
        values as over all rows, since no run is cut."""
        ends = self.starts + self.lengths
        first = 0
        while first < len(self):
            lo = int(self.starts[first])
            last = max(first + 1, int(np.searchsorted(ends, lo + width, "right")))
            yield slice(lo, int(ends[last - 1])), Runs.of_lengths(self.lengths[first:last])
            first = last

    def sum(self, x: np.ndarray) -> np.ndarray:
        """Per-run sums along the last axis (float64 for floats, int64 for booleans and
        integers); x may carry a leading config axis."""
        dtype = np.int64 if x.dtype.kind in "bui" else np.float64
        if not len(self):
            return np.zeros((*x.shape[:-1], 0), dtype)
        return np.add.reduceat(x, self.starts, axis=-1, dtype=dtype)

    def mean(self, x: np.ndarray) -> np.ndarray:
        return self.sum(x) / self.lengths

    def extreme(
        self, how: Literal["min", "max"], x: np.ndarray, where: np.ndarray | None = None
    ) -> pl.Series:
        """Per-run min or max of x over the rows `where` holds; null where a run has none."""
        ufunc, neutral = (np.minimum, np.inf) if how == "min" else (np.maximum, -np.inf)
        x = x.astype(np.float64, copy=False)
        values = x if where is None else np.where(where, x, neutral)
        reduced = ufunc.reduceat(values, self.starts) if len(self) else values[:0]
        out = pl.Series(values=reduced)
        if where is not None:
            # A run left at the neutral value has no row, unless x itself holds that value.
            missing = reduced == neutral
            if missing.any():
                if np.isinf(x).any():
                    missing = self.sum(where) == 0
                out = out.set(pl.Series(values=missing), None)
        return out

    def bounds(
        self, x: np.ndarray, where: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-run (min, max) of x over the rows `where` holds, along the last axis; a run with
        none gets (inf, -inf), so `lo <= hi` tells which runs have any. Float32 stays float32."""
        if x.dtype.kind != "f":
            x = x.astype(np.float64)
        if not len(self):
            empty = x[..., :0]
            return empty, empty
        lo = np.minimum.reduceat(masked_fill(x, where, np.inf), self.starts, axis=-1)
        hi = np.maximum.reduceat(masked_fill(x, where, -np.inf), self.starts, axis=-1)
        return lo, hi

    def top(self, x: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
        """Per-run max of x over the rows `where` holds (-inf for a run with none)."""
        values = masked_fill(x, where, -np.inf)
        if not len(self):
            return values[..., :0]
        return np.maximum.reduceat(values, self.starts, axis=-1)

    def low(self, x: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
        """Per-run min of x over the rows `where` holds (inf for a run with none)."""
        values = masked_fill(x, where, np.inf)
        if not len(self):
            return values[..., :0]
        return np.minimum.reduceat(values, self.starts, axis=-1)

    def rows(self, per_run: np.ndarray) -> np.ndarray:
        """Each run's value repeated on its rows, along the last axis (numpy)."""
        return np.repeat(per_run, self.lengths, axis=-1)

    def first(self, column: pl.Series) -> pl.Series:
        return column.gather(self.starts)


def masked_fill(x: np.ndarray, where: np.ndarray | None, fill: float) -> np.ndarray:
    """x where `where` holds, else `fill`. A mask shared by every config (one row) with an
    infinite fill is added as a 0/±inf penalty, cheaper than a 2-D `np.where`; that needs x finite
    where the mask is off (inf - inf is nan), as advantages, rewards and deductions are."""
    if where is None:
        return x
    shared = where.ndim == 1 or where.shape[0] == 1
    if np.isinf(fill) and x.ndim > 1 and x.shape[0] > 1 and shared:
        return x + np.where(where, 0.0, fill).astype(x.dtype)
    return np.where(where, x, x.dtype.type(fill))


Groups = str | Runs
"""A group-id column, or the runs of a frame whose rows are sorted by group (found once)."""
