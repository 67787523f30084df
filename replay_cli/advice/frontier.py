"""The frontier of a sweep: per config, the useful push (how strongly it teaches solving faster)
against the harm it does, with the role the recommendation gives it; and the configs the step
charts highlight (shaping off, the recommended and the runner-up)."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from replay_cli import schema as S
from replay_cli.advice.recommendation import NEEDED, recommend, shaping_off

__all__ = ["frontier", "highlights", "rated", "shaping_off"]


def rated(summary: pl.DataFrame) -> bool:
    """The summary has the columns the recommendation and the frontier read (a report of this
    version, not an earlier one re-rendered)."""
    return all(c in summary.columns for c in NEEDED)


def frontier(summary: pl.DataFrame, verdict: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per config: `useful`, the solve-faster push (-push/minutes_pass, larger is better);
    `harm`, the share of groups with an introduced inversion plus the share of trained rows with
    |advantage| > 3 after the clip; `role` from the recommendation; `off` for shaping off."""
    verdict = recommend(summary) if verdict is None else verdict
    roles = verdict.select(S.CONFIG_ID, "role")
    return (
        summary.select(
            S.CONFIG_ID,
            "label",
            (-pl.col("push/minutes_pass")).fill_null(0.0).alias("useful"),
            pl.col("inversion/introduced_group_rate").fill_null(0.0).alias("inversion"),
            pl.col("adv/explosion_trained_frac").fill_null(0.0).alias("explosion"),
            shaping_off(summary).alias("off"),
        )
        .with_columns((pl.col("inversion") + pl.col("explosion")).alias("harm"))
        .join(roles, on=S.CONFIG_ID, how="left", maintain_order="left")
    )


def highlights(
    summary: pl.DataFrame,
    chosen: Iterable[str] | None = None,
    verdict: pl.DataFrame | None = None,
) -> list[str]:
    """Config ids to draw step by step: the chosen ones (ids or id prefixes, or labels), else
    shaping off, the recommended and the runner-up configs."""
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
    if not rated(summary):  # an earlier version's report: shaping off and the first configs
        off = summary.filter(shaping_off(summary))[S.CONFIG_ID].head(1).to_list()
        return off + [c for c in ids if c not in off][: 3 - len(off)]
    front = frontier(summary, verdict)
    out = front.filter(pl.col("off"))[S.CONFIG_ID].head(1).to_list()
    for role in ("recommended", "runner-up"):
        out.extend(c for c in front.filter(pl.col("role") == role)[S.CONFIG_ID] if c not in out)
    return out or ids[:3]
