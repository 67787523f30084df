"""The groups of the largest unclipped |advantage| per config, kept by the replay chunk by chunk
(the top of the tops of some chunks is the top of all of them), so findings and the page need no
sort of the whole group table."""

from __future__ import annotations

import numpy as np
import polars as pl

from replay_cli import schema as S
from replay_cli.frames import collect

TOP_GROUPS = 5
TOP_COLUMNS = (
    S.CONFIG_ID,
    S.STEP,
    S.GROUP_ID,
    S.G_RESOLVED_PATTERN,
    S.G_TRAINABLE_ROWS,
    S.G_MAX_ABS_ADVANTAGE_UNCLIPPED,
    S.G_STD_AT_MAX_ABS,
    S.G_INVERTED,
)


def top_groups(groups: pl.LazyFrame | pl.DataFrame, k: int = TOP_GROUPS) -> pl.DataFrame:
    """Per config, the k groups of the largest unclipped |advantage|, largest first (nulls
    last, ties by step and group): a partial selection, not a sort of every group. The top of
    the tops of some chunks is the top of all of them, so the engine keeps only these."""
    value = pl.col(S.G_MAX_ABS_ADVANTAGE_UNCLIPPED).fill_null(-np.inf)
    order = [value, pl.col(S.STEP), pl.col(S.GROUP_ID)]
    picked = (
        groups.lazy()
        .select(TOP_COLUMNS)
        .group_by(S.CONFIG_ID, maintain_order=True)
        .agg(pl.all().top_k_by(order, k=k, reverse=[False, True, True]))
        .explode(pl.exclude(S.CONFIG_ID))
    )
    return collect(picked)


def top_of_config(groups: pl.DataFrame, k: int = TOP_GROUPS) -> pl.DataFrame:
    """`top_groups` of one config's group table in memory (a numpy partition: the engine calls
    it on every chunk of every config)."""
    value = groups[S.G_MAX_ABS_ADVANTAGE_UNCLIPPED].fill_null(-np.inf).to_numpy()
    rows = np.arange(len(value))
    if len(value) > k:
        kth = np.partition(value, len(value) - k)[len(value) - k]
        rows = np.flatnonzero(value >= kth)
    step, gid = groups[S.STEP].to_numpy()[rows], groups[S.GROUP_ID].to_numpy()[rows]
    order = np.lexsort((gid, step, -value[rows]))[:k]  # largest first, ties by step and group
    return groups.select(TOP_COLUMNS)[rows[order]]
