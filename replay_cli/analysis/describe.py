"""Summary of an input rollout table for `replay-cli inspect`."""

from __future__ import annotations

from typing import Any

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.frames import collect
from replay_cli.maths.chunk_arrays import minutes
from replay_cli.rollouts.validation import Rollouts

UNITS = {
    "resolved": "share",
    "loss-masked (mask_sample)": "share",
    "run time mean": "minutes",
    "run time p50": "seconds",
    "run time p99": "seconds",
}
"""The unit (the catalogue's) of each of `describe_rollouts`' values that has one: shares are
shown in % and run times in minutes, as on every other surface."""


def shown(stats: dict[str, Any]) -> dict[str, str]:
    """`describe_rollouts`' values as a person reads them: in their units (UNITS), counts
    with thousands separators."""
    return {k: C.show_value(UNITS.get(k, "count"), v) for k, v in stats.items()}


def describe_rollouts(rollouts: Rollouts) -> dict[str, Any]:
    """Sizes, group shapes, outcome shares (training rows; fractions, UNITS) and run-time mean
    (minutes) and quantiles (seconds) of a validated input."""
    lf = rollouts.frame
    is_train = pl.col(S.SPLIT) == S.SPLIT_TRAIN
    rt = pl.col(S.RUN_TIME)
    stats = (
        lf.select(
            pl.len().alias("rows"),
            is_train.sum().alias("training rows"),
            pl.col(S.STEP).n_unique().alias("steps"),
            pl.struct(S.GROUP_KEYS).filter(is_train).n_unique().alias("groups"),
            pl.col(S.RESOLVED).filter(is_train).mean().alias("resolved"),
            pl.col(S.MASK_SAMPLE).filter(is_train).mean().alias("loss-masked (mask_sample)"),
            minutes().filter(is_train).mean().alias("run time mean"),
            rt.filter(rt.is_finite()).quantile(0.5).alias("run time p50"),
            rt.filter(rt.is_finite()).quantile(0.99).alias("run time p99"),
            rt.is_null().sum().alias("run time missing"),
            (rt.is_nan() | rt.is_infinite()).sum().alias("run time NaN/inf"),
            pl.col(S.ZEROED).sum().alias("zeroed by penalty"),
        )
        .pipe(collect)
        .row(0, named=True)
    )
    sizes = (
        lf.filter(is_train)
        .group_by(S.GROUP_KEYS)
        .len()
        .group_by("len")
        .agg(pl.len().alias("groups"))
        .sort("len")
    ).pipe(collect)
    unparsed = sum(c.count for c in rollouts.coerced if c.column == S.RUN_TIME)
    items, at = list(stats.items()), list(stats).index("run time missing") + 1
    stats = dict([*items[:at], ("run time unparsed", unparsed), *items[at:]])  # after the missing
    stats["run time missing"] -= unparsed  # nulls in the input; the unparsed are null once read
    stats["group sizes"] = ", ".join(f"{n}×{size}" for size, n in sizes.iter_rows())
    stats["files"] = len(rollouts.files)
    stats["extra columns"] = ", ".join(rollouts.extra_columns) or "-"
    return stats
