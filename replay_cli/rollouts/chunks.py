"""Split a rollout table into chunks of whole steps: groups never span steps, so every per-group
and per-step number is exact inside its chunk, and memory is bounded by the chunk size."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from replay_cli import schema as S

COUNT_ENGINE = "streaming"  # integer counts do not depend on summation order


def step_counts(frame: pl.LazyFrame) -> pl.DataFrame:
    """Rows per step (a null step is its own row), sorted, read with the streaming engine."""
    return frame.group_by(S.STEP).len().sort(S.STEP, nulls_last=True).collect(engine=COUNT_ENGINE)


def plan_chunks(counts: pl.DataFrame, chunk_rows: int) -> list[tuple[int, int]]:
    """Contiguous step ranges of at most chunk_rows rows each (a larger step is a chunk alone)."""
    chunks: list[tuple[int, int]] = []
    start: int | None = None
    last, size = 0, 0
    for step, n in counts.drop_nulls(S.STEP).iter_rows():
        if start is not None and size + n > chunk_rows:
            chunks.append((start, last))
            start, size = None, 0
        if start is None:
            start = step
        size += n
        last = step
    if start is not None:
        chunks.append((start, last))
    return chunks


def in_chunk(lo: int, hi: int) -> pl.Expr:
    """Rows of the chunk [lo, hi] of steps."""
    return pl.col(S.STEP).is_between(lo, hi)


def in_order(df: pl.DataFrame, keys: Sequence[str]) -> bool:
    """Whether the rows are already sorted by `keys` (lexicographically, ties allowed)."""
    later = pl.lit(True)  # equal on every key: in order
    for key in reversed(keys):
        c, prev = pl.col(key), pl.col(key).shift(1)
        later = (c > prev) | ((c == prev) & later)
    return bool(df.select(later.slice(1).all()).item())


def run_starts(keys: Sequence[str]) -> pl.Expr:
    """True on the first row of each run of equal `keys` (rows in order)."""
    return pl.any_horizontal(pl.col(k) != pl.col(k).shift(1) for k in keys).fill_null(True)


def fill_positions(lf: pl.LazyFrame, fill: bool) -> pl.LazyFrame:
    """A missing or null rollout_index is the row's position in its group (input order)."""
    if not fill:
        return lf
    position = pl.int_range(pl.len(), dtype=pl.Int64).over([S.STEP, S.GROUP_ID])
    return lf.with_columns(pl.col(S.ROLLOUT_INDEX).fill_null(position))
