"""How sure the recommendation is: the rule applied again in each resample of the forecast's
paired bootstrap over problems, each resample's deviation widened by `Rule.spread` (docs/report.md,
"Confidence")."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.rule import Judged, Rule, meets, resolve_criteria
from replay_cli.maths.thresholds import MINUTES_EPS

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


@dataclass(frozen=True)
class _Reader:
    """The rule as the confidence applies it per resample: which rows pass (`passing`), and
    which it picks (`winners`)."""

    rows: list[Judged]
    rule: Rule
    tie_rank: np.ndarray

    def passing(self, wide: dict[str, np.ndarray]) -> np.ndarray:
        """Per resample of `wide` (name -> (..., rows) values) the rows that pass the rule: no
        static failure, and each resolve criterion read at the resample's own low end."""
        ok = np.ones(wide[C.F_SOLVE_VS_OFF].shape, dtype=bool)
        for j, r in enumerate(self.rows):
            ok[..., j] = all(not c.static for c in r.failed)
            for c in resolve_criteria():
                column = wide[C.scoped(C.F_RESOLVE_VS_OFF, c.scope)][..., j]
                ok[..., j] &= r.off | meets(r.row, c.scope, c.least(self.rule), column)
        return ok

    def winners(self, wide: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The rule's pick per resample of `wide` (the fastest successes among the passing rows,
        ties in the ranking's order) and whether it passes there (where nothing does, the
        resample picks nothing)."""
        ok = self.passing(wide)
        gain = wide[C.F_SOLVE_VS_OFF]
        least = np.array([max(MINUTES_EPS, self.rule.faster_limit(r.row)) for r in self.rows])
        is_off = np.array([r.off for r in self.rows])
        small = (np.abs(gain) <= MINUTES_EPS) | ((gain < 0) & (-gain <= least))
        gain = np.where(is_off | small | ~np.isfinite(gain), 0.0, gain)
        keyed = np.where(ok, gain, np.inf)
        best = keyed == keyed.min(-1, keepdims=True)
        winner = np.argmin(np.where(best, self.tie_rank, np.inf), axis=-1)
        counted = np.take_along_axis(ok, winner[..., None], -1)[..., 0]
        return winner, counted


def _values(
    rows: list[Judged], resamples: pl.DataFrame, names: list[str]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per column the (resample, row) values and the rows' point values (a row without a point
    value keeps its resamples as they are: its point is taken as their mean)."""
    ids = [r.row[S.CONFIG_ID] for r in rows]
    values, points = {}, {}
    for name in names:
        v = resamples.pivot(on=S.CONFIG_ID, index="resample", values=name).select(ids)
        values[name] = v.to_numpy().astype(np.float64)
        point = np.array([r.row.get(name) for r in rows], dtype=np.float64)  # None: NaN
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(values[name], 0)
        points[name] = np.where(np.isfinite(point), point, mean)
    return values, points


def confidence(
    rows: list[Judged],
    rule: Rule,
    resamples: pl.DataFrame | None,
    pick: int | None,
    eligible: list[int],
    ties: Sequence[int],
) -> Confidence | None:
    """How sure the pick is: each resample of the forecast's bootstrap, its deviation from this
    log widened by `rule.spread`, is a new log the rule judges again (`ties`: the ranking's order
    after the gain); eligible rows `_alike` the pick within the bootstrap's own interval."""
    criteria = resolve_criteria()
    names = [
        *dict.fromkeys(C.scoped(C.F_RESOLVE_VS_OFF, c.scope) for c in criteria),
        C.F_SOLVE_VS_OFF,
    ]
    if resamples is None or resamples.is_empty() or not set(names) <= set(resamples.columns):
        return None
    n = len(rows)
    tie_rank = np.empty(n)
    tie_rank[list(ties)] = np.arange(n)
    values, points = _values(rows, resamples, names)
    # A new log's value: each resample's deviation from the point, widened by the rule's spread.
    wide = {n: points[n] + rule.spread * (values[n] - points[n]) for n in values}
    winner, counted = _Reader(rows, rule, tie_rank).winners(wide)
    counts = np.bincount(winner[counted], minlength=n)
    won = {i: float(counts[i] / winner.shape[0]) for i in range(n)}
    if pick is None:
        return Confidence(won, [], None)
    alike = [j for j in eligible if j != pick and _alike(values, j, pick, rule.alike_level)]
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


def alike_on_log(
    rows: list[Judged],
    resamples: pl.DataFrame | None,
    pick: int,
    candidates: list[int],
    level: float,
) -> int | None:
    """The first of `candidates` whose differences to `pick` hold 0 at `level` over this log's
    own resamples (its intervals, no spread); None without resamples."""
    names = list(ALIKE_READS)
    if resamples is None or resamples.is_empty() or not set(names) <= set(resamples.columns):
        return None
    values, _ = _values(rows, resamples, names)
    return next((j for j in candidates if _alike(values, j, pick, level)), None)
