"""How sure the recommendation is: the rule applied again in each resample of the forecast's
paired bootstrap over problems, its spread calibrated by a second-level bootstrap in which each
resample stands for a log (docs/report.md, "Confidence")."""

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

SPREADS = (0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0)
"""The spread factors the calibration chooses from: how much wider a new log's spread around
this log's value is taken to be than the bootstrap's (`calibrated_spread`)."""
BLOCK = 1_000_000
"""At most this many (pseudo-log, resample, config) cells at once in the calibration (memory)."""
ALIKE_READS = (C.F_RESOLVE_VS_OFF_LONG, C.F_SOLVE_VS_OFF)
"""The differences two configs that train alike hold 0 in: the bootstrap's own interval of each
difference at `Rule.alike_level` (as docs/report.md says), not the widened spread the shares are
read from."""


@dataclass(frozen=True)
class Confidence:
    """Per row the share of resamples the rule picks it in (`won`); the eligible rows that train
    like the pick (`alike`); the share that picks the pick or one of those (`set_share`); the
    spread factor the calibration chose (`spread`) and how often the pick repeats over the
    pseudo-logs there (`repeat`)."""

    won: dict[int, float]
    alike: list[int]
    set_share: float | None
    spread: float | None = None
    repeat: float | None = None


def _nan(x: Any) -> float:
    return float("nan") if x is None else float(x)


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
        point = np.array([_nan(r.row.get(name)) for r in rows])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(values[name], 0)
        points[name] = np.where(np.isfinite(point), point, mean)
    return values, points


def _spread(values: dict, points: dict, factor: float, around: dict | None = None) -> dict:
    """Each resample's deviation from the point scaled by `factor`, around `around` (by default
    this log's point values; per pseudo-log its resample, shaped (pseudo-logs, 1, rows))."""
    around = points if around is None else around
    return {n: around[n] + factor * (values[n] - points[n]) for n in values}


def _alike_bounds(values: dict, points: dict, pick: np.ndarray, level: float) -> dict:
    """Per pseudo-log the `level` interval of the re-centred resamples' differences of each row
    to its pick, in each of `ALIKE_READS`: name -> (2, pseudo-logs, rows)."""
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    out = {}
    for name in ALIKE_READS:
        centred = values[name] - points[name]
        per_pick = {}
        for p in np.unique(pick):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                per_pick[p] = np.nanquantile(centred - centred[:, [p]], [lo_q, hi_q], axis=0)
        out[name] = np.stack([per_pick[p] for p in pick], axis=1)
    return out


def calibrated_spread(
    reader: _Reader, values: dict, points: dict, level: float
) -> tuple[float, float, np.ndarray]:
    """The spread factor whose stated share matches how often the pick repeats, over pseudo-logs
    (a second-level bootstrap): each resample stands for a log (its values the point, its pick
    the rule's there, its alike set the passing rows whose differences to the pick hold 0), and
    the resamples re-centred on it (it + factor × (other − this log's point)) for the resamples
    around it. Per factor of `SPREADS`, the mean over pseudo-logs of the share of their
    resamples that pick their pick or its alike set (the share it would state), against the
    share of the other pseudo-logs whose pick falls in that set (how often it repeats). Returns
    the factor where the two differ least (ties: the larger), the repeat rate there, and every
    factor's stated − repeat."""
    pick, has = reader.winners(values)
    b, n = pick.shape[0], len(reader.rows)
    own = np.where(has, pick, 0)
    passing = reader.passing(values) & has[:, None]
    bounds = _alike_bounds(values, points, own, level)
    diffs = {name: values[name] - values[name][np.arange(b), own][:, None] for name in ALIKE_READS}
    chunk = max(1, BLOCK // max(1, b * n))
    gaps, repeats = [], []
    for factor in SPREADS:
        sets = passing.copy()
        for name in ALIKE_READS:
            lo = diffs[name] + factor * bounds[name][0]
            hi = diffs[name] + factor * bounds[name][1]
            sets &= ~np.isfinite(lo) | ~np.isfinite(hi) | ((lo <= 0) & (hi >= 0))
        sets[np.flatnonzero(has), own[has]] = True
        stated = np.empty(b)
        for start in range(0, b, chunk):
            part = slice(start, start + chunk)
            around = {name: values[name][part, None, :] for name in values}
            win, ok = reader.winners(_spread(values, points, factor, around))
            stated[part] = (np.take_along_axis(sets[part], win, 1) & ok).mean(1)
        others = sets[:, own] & has[None, :]  # (pseudo-log, other pseudo-log)
        np.fill_diagonal(others, False)
        gaps.append(float(stated.mean() - (others.sum(1) / max(1, b - 1)).mean()))
        repeats.append(float((others.sum(1) / max(1, b - 1)).mean()))
    gap = np.array(gaps)
    # Ties (e.g. resamples that all pick alike) go to the larger factor: the more cautious share.
    best = len(gap) - 1 - int(np.argmin(np.round(np.abs(gap), 9)[::-1]))
    return SPREADS[best], repeats[best], gap


def confidence(
    rows: list[Judged],
    rule: Rule,
    resamples: pl.DataFrame | None,
    pick: int | None,
    eligible: list[int],
    ties: Sequence[int],
) -> Confidence | None:
    """How sure the pick is: each resample of the forecast's bootstrap over problems stands for a
    new log of the same size, its deviation from this log spread by `rule.spread` (None: the
    factor the second-level bootstrap calibrates, `calibrated_spread`), and the rule's resolve
    criteria are applied again with its own interval ends (`rule.meets`); `ties` orders rows as
    the ranking's keys after the gain do. Eligible rows whose differences to the pick hold 0 in
    the bootstrap's own interval (not the widened spread) train alike (`_alike`)."""
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
    reader = _Reader(rows, rule, tie_rank)
    values, points = _values(rows, resamples, names)
    spread, repeat = rule.spread, None
    if spread is None:
        spread, repeat, _ = calibrated_spread(reader, values, points, rule.alike_level)
    wide = _spread(values, points, spread)
    winner, counted = reader.winners(wide)
    counts = np.bincount(winner[counted], minlength=n)
    won = {i: float(counts[i] / winner.shape[0]) for i in range(n)}
    if pick is None:
        return Confidence(won, [], None, spread, repeat)
    alike = [j for j in eligible if j != pick and _alike(values, j, pick, rule.alike_level)]
    in_set = np.isin(winner, [pick, *alike]) & counted
    return Confidence(won, alike, float(in_set.mean()), spread, repeat)


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
