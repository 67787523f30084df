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
from replay_cli.advice.rule import NEEDED, kept, resolve_criteria, shaping_off


def rated(summary: pl.DataFrame) -> bool:
    """The summary has the columns the whole rule and the frontier read (a replay with the
    forecast; `--no-forecast` has no outcome to place a config by)."""
    return all(c in summary.columns for c in NEEDED)


def _kept(summary: pl.DataFrame) -> pl.Series:
    """The resolve rate a config keeps for the rule: the lower of `rule.kept` over the resolve
    criteria's scopes (overall and long problems), 100% where shaping off makes none. Read per row
    through the one `kept` the rule, the confidence and the trade call, not as a polars expression
    of its own: a sweep's summary has one row per config, so there is nothing to vectorise."""
    scopes = [c.scope for c in resolve_criteria()]
    return pl.Series(
        [
            min(1.0 if v is None else v for v in (kept(row, s) for s in scopes))
            for row in summary.iter_rows(named=True)
        ],
        dtype=pl.Float64,
    )


def frontier(summary: pl.DataFrame, verdict: pl.DataFrame) -> pl.DataFrame:
    """Per config: `gain` (minutes by which successes end sooner than under shaping off after T
    steps; larger is better), `kept` (resolve rate kept, see `_kept`), `role` from the verdict,
    `off` for shaping off, and `other`: the config fails a criterion besides resolve progress
    (why it is avoided wherever it sits)."""
    verdict = verdict.select(
        S.CONFIG_ID,
        C.ROLE,
        pl.col(C.FAILED)
        .list.eval(pl.element().is_in([c.name for c in resolve_criteria()]).not_())
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
    summary: pl.DataFrame, chosen: Iterable[str] | None = None, verdict: pl.DataFrame | None = None
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
    out = summary.filter(shaping_off(summary))[S.CONFIG_ID].head(1).to_list()
    if verdict is None or not rated(summary):  # nothing ranked (no forecast): the first configs
        return out + [c for c in ids if c not in out][: 3 - len(out)]
    for role in ("recommended", "runner-up"):
        out.extend(c for c in verdict.filter(pl.col(C.ROLE) == role)[S.CONFIG_ID] if c not in out)
    if C.BEST_TRADE in verdict.columns:  # where shaping off is kept: the trade worth a look
        out.extend(c for c in verdict.filter(pl.col(C.BEST_TRADE))[S.CONFIG_ID] if c not in out)
    return out or ids[:3]
