"""The §5 diagnostics no trainer logs, and `input/*`, built from per-chunk partial sums.

A replay runs chunk by chunk (whole steps at a time), so every row-level statistic is kept as
counts, sums and extremes per chunk and finished at the end. Quantiles and the std need every value:
the trainable rows' advantages are kept per config for that."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.engine.pushes import PUSH_COLUMNS, PUSHES
from replay_cli.engine.row_batch import RowBatch
from replay_cli.frames import count
from replay_cli.maths.scopes import LENGTHS
from replay_cli.maths.segments import masked_fill
from replay_cli.maths.thresholds import (
    EXPLOSION,
    FRAGILE_STD,
    PLATFORM_REL,
    SIGNAL_EPS,
    above,
    below,
)

QUANTILES = {"p01": 0.01, "p05": 0.05, "p50": 0.5, "p95": 0.95, "p99": 0.99}
RUN_TIME_QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
LENGTH_PUSHES = tuple(k for k, name in C.PUSH_NAMES.items() if name in C.SCOPED_PUSHES)
"""The pushes reported per problem-length bucket (the catalogue's `SCOPED_PUSHES`)."""
LENGTH_PUSH_COLUMNS = [f"{S.G_PUSH}{name}{off}" for name in LENGTH_PUSHES for off in ("", "_off")]


def row_partials(b: RowBatch) -> list[pl.DataFrame]:
    """One row of counts, sums and extremes per config of the batch over its chunk."""
    c = b.chunk
    t, resolved = b.per_config(b.trainable), c.resolved
    adv, unc, raw = b.grpo.advantage, b.grpo.unclipped, b.adv_raw
    eps = np.float64(SIGNAL_EPS)

    def n(mask: np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.count_nonzero(mask, axis=-1), (len(b.configs),))

    def total(mask: np.ndarray) -> np.ndarray:
        return (adv * mask).sum(axis=-1, dtype=np.float64)  # x * mask: faster than np.where

    big = np.float64(np.inf)
    adv_abs = b.advantage_abs
    flipped = above(adv_abs, SIGNAL_EPS) & (np.abs(raw) > eps) & (np.sign(adv) != np.sign(raw))
    if b.f32_bound is None:  # peer estimators (not the trainer's formula): the std-based rule
        # Divided by a std above 0 and below FRAGILE_STD, or by a nonzero std of equal peers (a
        # rounding residue). A std of exactly 0 divides a zero numerator (tied rewards: 0 on
        # every platform), and an unnormalised row (std NaN) is divided by nothing.
        std = b.grpo.std
        fragile = b.grpo.normalized & (std > 0) & (below(std, FRAGILE_STD) | b.grpo.peers_equal)
        certain = possible = above(adv_abs, EXPLOSION)
        low = high = adv_abs
    else:  # platform-dependent: the float32 rounding bound reaches past 1e-3 relative
        bound = b.f32_bound
        fragile = bound > PLATFORM_REL * np.maximum(1.0, np.abs(unc))
        # After a clip that bounds a row's side, no platform can move it past the bound.
        free = adv == unc
        low = np.where(free, np.maximum(adv_abs - bound, 0.0), adv_abs)
        high = np.where(free, adv_abs + bound, adv_abs)
        certain, possible = low > EXPLOSION, high > EXPLOSION
    n_trainable, zero = n(t), np.zeros(len(t), np.int64)
    sum_resolved, sum_unresolved = total(t & resolved), total(t & ~resolved)
    columns = {
        "n_trainable": n_trainable,
        "sum_adv": sum_resolved + sum_unresolved,
        "min_adv": masked_fill(adv, t, big).min(axis=-1, initial=big),
        "max_adv": masked_fill(adv, t, -big).max(axis=-1, initial=-big),
        "n_clipped": n(t & (adv != unc)) if b.clipped else zero,
        "n_explosion": n(t & above(np.abs(unc) if b.clipped else adv_abs, EXPLOSION)),
        "n_fragile": n(t & fragile),
        "n_explosion_trained": n(t & above(adv_abs, EXPLOSION)),
        "n_explosion_certain": n(t & certain),
        "n_explosion_possible": n(t & possible),
        "abs_low": masked_fill(np.broadcast_to(low, adv.shape), t, 0.0).max(axis=-1, initial=0.0),
        "abs_high": masked_fill(np.broadcast_to(high, adv.shape), t, 0.0).max(axis=-1, initial=0.0),
        "n_validation_charged": zero if c.all_train else n(b.charged & c.is_val),
        "n_validation_changed": (
            zero if c.all_train else n(b.charged & c.is_val & (b.reward_shaped != c.reward))
        ),
        "n_flipped": n(t & flipped),
        "sum_adv_resolved": sum_resolved,
        "n_resolved": n(t & resolved),
        "sum_adv_unresolved": sum_unresolved,
        "n_unresolved": n(t & ~resolved),
        "sum_masked_shift": _masked_shift(b, t),
        "n_train_masked": n(c.train & b.masked),
        "n_negative_charged": n(b.charged & c.negative) if c.negative.any() else zero,
    }
    # A count is Int64, a sum or an extreme Float64: a new partial is one entry of `columns`.
    schema = {
        name: pl.Float64 if np.issubdtype(values.dtype, np.floating) else pl.Int64
        for name, values in columns.items()
    }
    inputs = c.input_counts
    out = []
    for k in range(len(b.configs)):
        row = {name: [values[k]] for name, values in columns.items()}
        if n_trainable[k] == 0:
            row["min_adv"] = row["max_adv"] = [None]
        out.append(pl.DataFrame(row, schema=schema).hstack(inputs))
    return out


def _masked_shift(b: RowBatch, t: np.ndarray) -> np.ndarray:
    """Sum over trainable rows of |baseline - baseline with masking toggled| (float64 values)."""
    if b.toggled is b.grpo.baseline:
        return np.zeros(len(t))
    shift = np.abs(b.grpo.baseline.astype(np.float64) - b.toggled.astype(np.float64))
    return (shift * t).sum(axis=-1)


def _ratio(num: float | None, den: int) -> float | None:
    return None if not den or num is None else num / den


def quantiles(values: pl.Series, qs: dict[str, float]) -> dict[str, float | None]:
    """Quantiles with polars' linear interpolation, from one partial sort (numpy's partition)
    instead of one selection per quantile: at 10M values that is 5x less work."""
    n = len(values)
    if n == 0:
        return dict.fromkeys(qs)
    positions = {k: (n - 1) * q for k, q in qs.items()}
    below = {k: math.floor(p) for k, p in positions.items()}
    kth = sorted({i for lo in below.values() for i in (lo, min(lo + 1, n - 1))})
    # A float32 series stays float32 (same order, half the memory); partitioned in place.
    ordered = values.to_numpy(writable=True)
    ordered.partition(kth)
    out: dict[str, float | None] = {}
    for k, p in positions.items():
        lo = below[k]
        a, b = float(ordered[lo]), float(ordered[min(lo + 1, n - 1)])
        out[k] = a if a == b else (p - lo) * (b - a) + a
    return out


def input_statistics(run_times: pl.Series) -> dict[str, float | None]:
    """Quantiles and maximum of the input's finite run times (the same for every config)."""
    finite = run_times.filter(run_times.is_finite())
    return {
        **{C.RUN_TIME_STATS[k]: v for k, v in quantiles(finite, RUN_TIME_QUANTILES).items()},
        C.RUN_TIME_STATS["max"]: finite.max(),
    }


def finish(
    partials: pl.DataFrame,
    advantages: pl.Series,
    group_parts: pl.DataFrame,
    steps: int,
    inputs: dict[str, float | None],
) -> dict[str, float | int | None]:
    """Every diagnostic of one config from its chunks' partials; `inputs` is
    `input_statistics()` of the replayed input."""
    p = partials.select(
        pl.exclude("min_adv", "max_adv", "abs_low", "abs_high").sum(),
        pl.col("min_adv").min(),
        pl.col("max_adv").max(),
        pl.col("abs_low").max(),
        pl.col("abs_high").max(),
    ).row(0, named=True)
    n = p["n_trainable"]
    # float32 for float32 configs; the std is taken over the exact float64 values (a transient
    # copy, freed before the quantiles take theirs: at 100M rows each is 400-800 MB).
    std = advantages.cast(pl.Float64).std()
    adv = C.ADV_DISTRIBUTION
    return {
        **group_diagnostics(group_parts),
        adv["mean"]: _ratio(p["sum_adv"], n),
        adv["std"]: std,
        adv["min"]: p["min_adv"],
        adv["max"]: p["max_adv"],
        C.ABS_MAX: None if n == 0 else max(abs(p["min_adv"]), abs(p["max_adv"])),
        **{adv[k]: v for k, v in quantiles(advantages, QUANTILES).items()},
        C.CLIP_FRAC: _ratio(p["n_clipped"], n),
        C.EXPLOSION_UNCLIPPED: _ratio(p["n_explosion"], n),
        C.EXPLOSION_TRAINED: _ratio(p["n_explosion_trained"], n),
        C.EXPLOSION_CERTAIN: _ratio(p["n_explosion_certain"], n),
        C.EXPLOSION_POSSIBLE: _ratio(p["n_explosion_possible"], n),
        C.ABS_MAX_LOW: None if n == 0 else p["abs_low"],
        C.ABS_MAX_HIGH: None if n == 0 else p["abs_high"],
        C.FRAGILE_STD: _ratio(p["n_fragile"], n),
        C.ADV_RESOLVED: _ratio(p["sum_adv_resolved"], p["n_resolved"]),
        C.ADV_UNRESOLVED: _ratio(p["sum_adv_unresolved"], p["n_unresolved"]),
        C.SIGN_FLIPS: _ratio(p["n_flipped"], n),
        C.MASKED_SHIFT: _ratio(p["sum_masked_shift"], n),
        C.ROWS: p["n_rows"],
        C.GROUPS: int(group_parts["n_groups"].sum()),
        C.STEPS: steps,
        C.VALIDATION_ROWS: p["n_validation"],
        C.VALIDATION_CHARGED: p["n_validation_charged"],
        C.VALIDATION_CHANGED: p["n_validation_changed"],
        C.MASKED_FRAC: _ratio(p["n_train_masked"], p["n_train"]),
        C.RESOLVED_FRAC: _ratio(p["n_train_resolved"], p["n_train"]),
        **inputs,
        C.RUN_TIME_INVALID: p["n_run_time_invalid"],
        C.RUN_TIME_NULL: p["n_run_time_null"],
        C.RUN_TIME_NEGATIVE: p["n_run_time_negative"],
        C.NEGATIVE_CHARGED: p["n_negative_charged"],
    }


def group_partials(groups: pl.DataFrame) -> pl.DataFrame:
    """One row of counts over a chunk's group table (the table itself can then be streamed out)."""
    pattern = pl.col(S.G_RESOLVED_PATTERN)
    return groups.select(
        pl.len().alias("n_groups"),
        count(pl.col(S.G_HAS_SIGNAL)).alias("n_signal"),
        count(pl.col(S.G_HAS_SIGNAL_RAW)).alias("n_signal_raw"),
        count(pl.col(S.G_TIME_ONLY_SIGNAL)).alias("n_time_only"),
        count(pl.col(S.G_UNCHARGED_ONLY_SIGNAL)).alias("n_uncharged_only"),
        *(
            count((pl.col(S.G_UNCHARGED_CAUSES) & bit) > 0).alias(f"n_uncharged_{name}")
            for name, bit in S.UNCHARGED_CAUSES.items()
        ),
        *(count(pattern == p).alias(f"n_{p}") for p in (S.ALL_FAIL, S.MIXED, S.ALL_PASS)),
        count(pl.col(S.G_INVERTED)).alias("n_inverted"),
        pl.col(S.G_PAIRS).sum().cast(pl.Int64).alias(S.G_PAIRS),
        pl.col(S.G_INVERTED_PAIRS).sum().cast(pl.Int64).alias(S.G_INVERTED_PAIRS),
        pl.col(S.G_SIZE).sum().cast(pl.Int64).alias("group_rows"),
        pl.col(S.G_KEPT_ROWS).sum().cast(pl.Int64).alias(S.G_KEPT_ROWS),
        count(pl.col(S.G_KEPT_ROWS) > 0).alias("n_kept_groups"),
        count(pl.col(S.G_PHANTOM)).alias("n_phantom"),
        count(pl.col(S.G_INVERTED) & ~pl.col(S.G_INVERTED_OFF)).alias("n_inverted_introduced"),
        count(pl.col(S.G_INVERTED_OFF)).alias("n_inverted_off"),
        count(pl.col(S.G_HAS_SIGNAL) & ~pl.col(S.G_HAS_SIGNAL_RAW)).alias("n_gained"),
        count(~pl.col(S.G_HAS_SIGNAL) & pl.col(S.G_HAS_SIGNAL_RAW)).alias("n_lost"),
        count(pl.col(S.G_FLOOR_TIE)).alias("n_floor_tie"),
        count(pl.col(S.G_FLOOR_TIE) & (pattern == S.MIXED)).alias("n_floor_tie_mixed"),
        *(pl.col(push).sum().alias(push) for push in PUSH_COLUMNS),
        *(
            expr
            for length in LENGTHS
            for expr in (
                count(pl.col(S.G_LENGTH) == length).alias(f"n_{length}"),
                *(
                    pl.col(push)
                    .filter(pl.col(S.G_LENGTH) == length)
                    .sum()
                    .alias(f"{push}@{length}")
                    for push in LENGTH_PUSH_COLUMNS
                ),
            )
        ),
    )


def group_diagnostics(partials: pl.DataFrame) -> dict[str, float | None]:
    """Signal, resolved-pattern, inversion and filter rates over all training groups of one config."""
    p = partials.sum().row(0, named=True)
    n = p["n_groups"]
    return {
        C.SIGNAL: _ratio(p["n_signal"], n),
        C.SIGNAL_RAW: _ratio(p["n_signal_raw"], n),
        C.TIME_ONLY_GROUPS: _ratio(p["n_time_only"], n),
        C.UNCHARGED_ONLY: _ratio(p["n_uncharged_only"], n),
        **{
            C.UNCHARGED_BY_CAUSE[name]: _ratio(p[f"n_uncharged_{name}"], n)
            for name in S.UNCHARGED_CAUSES
        },
        **{
            C.PATTERN_SHARES[pattern]: _ratio(p[f"n_{pattern}"], n)
            for pattern in (S.ALL_FAIL, S.MIXED, S.ALL_PASS)
        },
        C.INVERSIONS: _ratio(p["n_inverted"], n),
        C.INVERTED_PAIRS: _ratio(p["inverted_pairs"], p["pairs"]),
        C.KEPT_ROWS: _ratio(p["kept_rows"], p["group_rows"]),
        C.KEPT_GROUPS: _ratio(p["n_kept_groups"], n),
        C.PHANTOM_GROUPS: _ratio(p["n_phantom"], n),
        C.INTRODUCED: _ratio(p["n_inverted_introduced"], n),
        C.INVERSIONS_OFF: _ratio(p["n_inverted_off"], n),
        C.GAINED: _ratio(p["n_gained"], n),
        C.LOST: _ratio(p["n_lost"], n),
        C.FLOOR_TIES: _ratio(p["n_floor_tie"], n),
        C.FLOOR_TIES_MIXED: _ratio(p["n_floor_tie_mixed"], p["n_mixed"]),
        **_pushes(p, n, ""),
        **{
            key: value
            for length in LENGTHS
            for key, value in _pushes(p, p[f"n_{length}"], f"@{length}").items()
        },
    }


def _pushes(p: dict[str, Any], n: int, where: str) -> dict[str, float | None]:
    """`push/<name>` (mean over the groups), `push/<name>_off` and `push/resolve_vs_off` for all
    groups (`where` "") or one length bucket (`where` "@long": `push/resolve@long`, ...)."""
    names = PUSHES if not where else LENGTH_PUSHES
    out: dict[str, float | None] = {}
    for name in names:
        push = C.PUSH_NAMES[name]
        out[C.scoped(push, where)] = _ratio(p[f"{S.G_PUSH}{name}{where}"], n)
        out[C.off(push, where)] = _ratio(p[f"{S.G_PUSH}{name}_off{where}"], n)
    on, off = out[C.scoped(C.RESOLVE_PUSH, where)], out[C.off(C.RESOLVE_PUSH, where)]
    # A share of shaping off's push only where shaping off pushes toward resolving at all.
    out[C.scoped(C.RESOLVE_PUSH_VS_OFF, where)] = (
        None if on is None or off is None or off <= 0 else on / off
    )
    return out
