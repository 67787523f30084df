"""The frontier of a sweep on the rule's own axes: per config, how much sooner than under
shaping off its successes end after T steps (`gain`, minutes) against the resolve rate it keeps
then (`kept`, the low end of the interval, the lower of overall and long problems), with the role
the recommendation gives it; and the configs the step charts highlight (shaping off, the
recommended and the runner-up)."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.recommendation import NEEDED, RESOLVE_CRITERIA, shaping_off

__all__ = ["frontier", "highlights", "rated", "shaping_off"]


def rated(summary: pl.DataFrame) -> bool:
    """The summary has the columns the whole rule and the frontier read (a replay with the
    forecast; `--no-forecast` has no outcome to place a config by)."""
    return all(c in summary.columns for c in NEEDED)


def _kept(summary: pl.DataFrame) -> pl.Expr:
    """The resolve progress a config keeps for the rule: the lower of the interval's low ends
    overall and on long problems (point values where there is no interval, 100% where shaping
    off makes none)."""

    def one(low: str, point: str) -> pl.Expr:
        have = [c for c in (low, point) if c in summary.columns]
        return pl.coalesce([pl.col(c).cast(pl.Float64) for c in have] + [pl.lit(1.0)])

    overall = one(C.F_RESOLVE_VS_OFF_LOW, C.F_RESOLVE_VS_OFF)
    long = one(C.F_RESOLVE_VS_OFF_LOW_LONG, C.F_RESOLVE_VS_OFF_LONG)
    return pl.min_horizontal(overall, long)


def frontier(summary: pl.DataFrame, verdict: pl.DataFrame) -> pl.DataFrame:
    """Per config: `gain` (minutes by which successes end sooner than under shaping off after T
    steps; larger is better), `kept` (resolve rate kept, see `_kept`), `role` from the verdict,
    `off` for shaping off, and `other`: the config fails a criterion besides resolve progress
    (why it is avoided wherever it sits)."""
    verdict = verdict.select(
        S.CONFIG_ID,
        "role",
        pl.col("failed")
        .list.eval(pl.element().is_in(list(RESOLVE_CRITERIA)).not_())
        .list.any()
        .fill_null(False)
        .alias("other"),
    )
    return summary.select(
        S.CONFIG_ID,
        "label",
        (-pl.col(C.F_SOLVE_VS_OFF).cast(pl.Float64)).fill_null(0.0).alias("gain"),
        _kept(summary).alias("kept"),
        shaping_off(summary).alias("off"),
    ).join(verdict, on=S.CONFIG_ID, how="left", maintain_order="left")


def highlights(
    summary: pl.DataFrame,
    chosen: Iterable[str] | None = None,
    verdict: pl.DataFrame | None = None,
) -> list[str]:
    """Config ids to draw step by step: the chosen ones (ids or id prefixes, or labels), else
    shaping off, the recommended and the runner-up configs, and the best trade."""
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
    if verdict is None or not rated(summary):  # nothing ranked (no forecast): the first configs
        off = summary.filter(shaping_off(summary))[S.CONFIG_ID].head(1).to_list()
        return off + [c for c in ids if c not in off][: 3 - len(off)]
    out = summary.filter(shaping_off(summary))[S.CONFIG_ID].head(1).to_list()
    for role in ("recommended", "runner-up"):
        out.extend(c for c in verdict.filter(pl.col("role") == role)[S.CONFIG_ID] if c not in out)
    if "best_trade" in verdict.columns:  # where shaping off is kept: the trade worth a look
        out.extend(c for c in verdict.filter(pl.col("best_trade"))[S.CONFIG_ID] if c not in out)
    return out or ids[:3]
