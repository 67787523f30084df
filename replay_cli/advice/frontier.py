"""The frontier of a sweep: per config, the signal gained over shaping off against the harm done,
and the configs the charts highlight (shaping off, the best and the worst)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

from replay_cli import schema as S
from replay_cli.maths.thresholds import EXPLOSION


def is_clipped(row: dict[str, Any]) -> bool:
    """Both clip bounds are set within ±EXPLOSION, so no trained advantage can explode."""
    lo, hi = row.get("clip_low"), row.get("clip_high")
    return lo is not None and hi is not None and lo >= -EXPLOSION and hi <= EXPLOSION


def frontier(summary: pl.DataFrame) -> pl.DataFrame:
    """Per config: signal gain over shaping off, harm (inversion rate + unclipped explosion share)
    and the rank used to pick the best and worst configs (harm first, then gain)."""
    clipped = pl.Series(
        [is_clipped(row) for row in summary.iter_rows(named=True)], dtype=pl.Boolean
    )
    unclipped_explosion = pl.when(pl.lit(clipped)).then(0.0).otherwise(pl.col("adv/explosion_frac"))
    return summary.select(
        S.CONFIG_ID,
        "label",
        "enabled",
        (pl.col("signal/group_rate") - pl.col("signal/group_rate_raw"))
        .fill_null(0.0)
        .alias("gain"),
        pl.col("inversion/group_rate").fill_null(0.0).alias("inversion"),
        unclipped_explosion.fill_null(0.0).alias("unclipped_explosion"),
        pl.col("adv/explosion_frac").fill_null(0.0).alias("explosion"),
    ).with_columns((pl.col("inversion") + pl.col("unclipped_explosion")).alias("harm"))


def shaping_off(summary: pl.DataFrame) -> pl.Series:
    """Configs that leave every reward as it is: shaping disabled, or lambda 0 with no bonus
    and no floor."""
    return summary.select(
        ~pl.col("enabled")
        | (
            (pl.col("lambda_time") == 0)
            & (pl.col("lambda_call_bonus") == 0)
            & pl.col("floor").is_null()
        )
    ).to_series()


def highlights(summary: pl.DataFrame, chosen: Iterable[str] | None = None) -> list[str]:
    """Config ids to draw step by step: the chosen ones (ids or id prefixes), else the shaping-off
    config plus the best and the worst shaped config by the frontier."""
    ids = summary[S.CONFIG_ID].to_list()
    if chosen:
        out = []
        for want in chosen:
            match = [c for c in ids if c.startswith(want)] or [
                c for c, label in summary.select(S.CONFIG_ID, "label").rows() if label == want
            ]
            out.extend(m for m in match[:1] if m not in out)
        if out:
            return out
    front = frontier(summary).with_columns(shaping_off(summary).alias("_off"))
    out = front.filter(pl.col("_off"))[S.CONFIG_ID].head(1).to_list()
    shaped = front.filter(~pl.col("_off"))
    if shaped.height:
        best = shaped.sort(["harm", "gain"], descending=[False, True])[S.CONFIG_ID][0]
        worst = shaped.sort(["harm", "gain"], descending=[True, False])[S.CONFIG_ID][0]
        out.extend(c for c in (best, worst) if c not in out)
    return out or ids[:3]
