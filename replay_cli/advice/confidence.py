"""How sure the recommendation is: the rule applied again in each resample of the forecast's
paired bootstrap over problems (docs/report.md, "Confidence")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.rule import Judged, Rule, meets, resolve_criteria
from replay_cli.maths.thresholds import MINUTES_EPS

PREDICTIVE = 2.0
"""How much wider a new log's spread around this log's value is taken to be than the bootstrap's:
2, not the flat prior's √2, since the stated share is read for the config this log picked; 2
minimises the worst error of the stated share over every distance from the bar (docs/report.md,
"Confidence")."""
ALIKE_READS = (C.F_RESOLVE_VS_OFF_LONG, C.F_SOLVE_VS_OFF)
"""The differences two configs that train alike hold 0 in: the bootstrap's own interval of each
difference at `Rule.alike_level` (as docs/report.md says), not the widened spread the shares are
read from."""


@dataclass(frozen=True)
class Confidence:
    """Per row the share of resamples the rule picks it in (`won`); the eligible rows that train
    like the pick (`alike`); the share that picks the pick or one of those (`set_share`)."""

    won: dict[int, float]
    alike: list[int]
    set_share: float | None


def _nan(x: Any) -> float:
    return float("nan") if x is None else float(x)


def _spread(
    rows: list[Judged], resamples: pl.DataFrame, names: Sequence[str], scale: float = PREDICTIVE
) -> dict[str, Any]:
    """Per column, (resample, row) values as a new log would see them: each resample's deviation
    from the point scaled by PREDICTIVE (a new log carries its own noise on top of this one's);
    `scale=1`: the bootstrap's own values."""
    ids = [r.row[S.CONFIG_ID] for r in rows]
    wide = {}
    for name in names:
        values = resamples.pivot(on=S.CONFIG_ID, index="resample", values=name).select(ids)
        values = values.to_numpy().astype(np.float64)
        point = np.array([_nan(r.row.get(name)) for r in rows])
        wide[name] = np.where(np.isfinite(point), point + scale * (values - point), values)
    return wide


def confidence(
    rows: list[Judged],
    rule: Rule,
    resamples: pl.DataFrame | None,
    pick: int | None,
    eligible: list[int],
    ties: Sequence[int],
) -> Confidence | None:
    """How sure the pick is: each resample of the forecast's bootstrap over problems stands for a
    new log of the same size (`_spread`), and the rule's resolve criteria are applied again with
    its own interval ends (`rule.meets`); `ties` orders rows as the ranking's keys after the gain
    do. Eligible rows whose differences to the pick hold 0 in the bootstrap's own interval train
    alike (`_alike`)."""
    criteria = resolve_criteria()
    names = [
        *dict.fromkeys(C.scoped(C.F_RESOLVE_VS_OFF, c.scope) for c in criteria),
        C.F_SOLVE_VS_OFF,
    ]
    if resamples is None or resamples.is_empty() or not set(names) <= set(resamples.columns):
        return None
    wide = _spread(rows, resamples, names)
    gain = wide[C.F_SOLVE_VS_OFF]
    ok = np.ones(gain.shape, dtype=bool)
    for j, r in enumerate(rows):
        ok[:, j] = all(not c.static for c in r.failed)
        for c in criteria:
            column = wide[C.scoped(C.F_RESOLVE_VS_OFF, c.scope)][:, j]
            ok[:, j] &= r.off | meets(r.row, c.scope, c.least(rule), column)
    least = np.array([max(MINUTES_EPS, rule.faster_limit(r.row)) for r in rows])
    is_off = np.array([r.off for r in rows])
    small = (np.abs(gain) <= MINUTES_EPS) | ((gain < 0) & (-gain <= least))
    gain = np.where(is_off | small | ~np.isfinite(gain), 0.0, gain)
    n = len(rows)
    tie_rank = np.empty(n)
    tie_rank[list(ties)] = np.arange(n)
    first = np.lexsort((np.broadcast_to(tie_rank, gain.shape), np.where(ok, gain, np.inf)), axis=-1)
    winner = first[:, 0]
    counted = ok[np.arange(len(winner)), winner]
    counts = np.bincount(winner[counted], minlength=n)
    won = {i: float(counts[i] / gain.shape[0]) for i in range(n)}
    if pick is None:
        return Confidence(won, [], None)
    own = _spread(rows, resamples, ALIKE_READS, scale=1.0)
    alike = [j for j in eligible if j != pick and _alike(own, j, pick, rule.alike_level)]
    in_set = np.isin(winner, [pick, *alike]) & counted
    return Confidence(won, alike, float(in_set.mean()))


def _alike(wide: dict[str, Any], j: int, pick: int, level: float) -> bool:
    """Each difference of `ALIKE_READS` between rows j and pick holds 0 at `level`."""
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    for name in ALIKE_READS:
        d = wide[name][:, j] - wide[name][:, pick]
        d = d[np.isfinite(d)]
        if len(d) and not (np.quantile(d, lo_q) <= 0 <= np.quantile(d, hi_q)):
            return False
    return True
