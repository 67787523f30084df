"""NeMo-RL GRPO advantages as polars expressions over group sums (spec §4.1).

Mirrors `calculate_baseline_and_std_per_prompt` + `GRPOAdvantageEstimator.compute_advantage`
(NVIDIA-NeMo/RL `nemo_rl/algorithms/utils.py`, `advantage_estimator.py` @ 7ea279ab, with the
PR #4158 trivial-distribution guard and the PR #4160 valid mask). Leave-one-out sums come from
group totals minus the row, never from pairwise loops. In float32 mode rewards, squares, means,
variances and the division are rounded to float32 like torch's CPU math; the group totals are
exact (float64) sums of the float32 values, so the peer sums are correctly rounded float32 values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from replay_cli.config import AdvantageParams

EPS = 1e-6
FLOAT32_MAX = 3.4028234663852886e38


@dataclass(frozen=True)
class AdvColumns:
    """Output column names of one advantage computation."""

    baseline: str
    std: str
    unclipped: str
    advantage: str
    peers_equal: str
    normalized: str


def _dtype(p: AdvantageParams) -> pl.DataType:
    return pl.Float32() if p.precision == "float32" else pl.Float64()


def baseline_and_std(
    reward: pl.Expr, valid: pl.Expr, keys: Sequence[str], p: AdvantageParams
) -> tuple[pl.Expr, pl.Expr]:
    """Per-row baseline and Bessel-corrected std of the row's peers, in the working precision."""
    dt = _dtype(p)
    r = reward.cast(dt)
    rv = pl.when(valid).then(r).otherwise(pl.lit(0.0, dt))
    r2v = pl.when(valid).then(r * r).otherwise(pl.lit(0.0, dt))
    n = valid.cast(pl.Int64).sum().over(keys)
    s1 = rv.cast(pl.Float64).sum().over(keys)
    s2 = r2v.cast(pl.Float64).sum().over(keys)
    if p.baseline == "loo":
        # The trainer divides by sum(valid) - 1 for every row, also for an invalid one.
        m = n - 1
        peer1, peer2 = (s1 - rv.cast(pl.Float64)).cast(dt), (s2 - r2v.cast(pl.Float64)).cast(dt)
    else:
        m = n
        peer1, peer2 = s1.cast(dt), s2.cast(dt)
    mf = m.cast(dt)
    b = peer1 / mf
    q = peer2 / mf
    var = (q - b * b) * (mf / (mf - pl.lit(1.0, dt)))
    # torch: sqrt(negative) -> nan -> 0; nan_to_num maps +inf to the largest finite float.
    raw_std = var.sqrt().fill_nan(0.0)
    raw_std = pl.when(raw_std.is_infinite()).then(pl.lit(FLOAT32_MAX, dt)).otherwise(raw_std)
    # One peer: its variance is exactly 0 in the trainer, 0 * inf = nan -> std 0.
    std = pl.when(m <= 1).then(pl.lit(0.0, dt)).otherwise(raw_std)
    few = n <= 1
    return pl.when(few).then(r).otherwise(b), pl.when(few).then(pl.lit(0.0, dt)).otherwise(std)


def peers_all_equal(
    reward: pl.Expr, valid: pl.Expr, keys: Sequence[str], p: AdvantageParams
) -> pl.Expr:
    """PR #4158 `is_trivial_distribution`: the row's valid peers are all exactly equal.

    Peers are the other valid rows (LOO, when the row itself is valid) or all valid rows.
    """
    r = reward.cast(_dtype(p))
    n = valid.cast(pl.Int64).sum().over(keys)
    vr = pl.when(valid).then(r)
    lo, hi = vr.min().over(keys), vr.max().over(keys)
    n_lo = (valid & (r == lo)).cast(pl.Int64).sum().over(keys)
    n_hi = (valid & (r == hi)).cast(pl.Int64).sum().over(keys)
    same = (lo == hi).fill_null(True) | (n <= 1)
    if p.baseline == "mean":
        return same
    lone_lo = valid & (r == lo) & (n_lo == 1) & (n_hi == n - 1)
    lone_hi = valid & (r == hi) & (n_hi == 1) & (n_lo == n - 1)
    return same | lone_lo | lone_hi


def add_grpo(
    lf: pl.LazyFrame,
    reward: str,
    valid: pl.Expr,
    keys: Sequence[str],
    p: AdvantageParams,
    out: AdvColumns,
) -> pl.LazyFrame:
    """Add baseline, std, guard flags and advantages (before and after the clip) for one reward column."""
    dt = _dtype(p)
    r = pl.col(reward).cast(dt)
    baseline, std = baseline_and_std(pl.col(reward), valid, keys, p)
    lf = lf.with_columns(
        baseline.alias(out.baseline),
        std.alias(out.std),
        peers_all_equal(pl.col(reward), valid, keys, p).alias(out.peers_equal),
    )
    guard = pl.col(out.std) > 0
    if p.std_guard == "trivial":
        guard = guard & ~pl.col(out.peers_equal)
    normalized = guard & pl.lit(p.normalize)
    diff = r - pl.col(out.baseline)
    scaled = diff / (pl.col(out.std) + pl.lit(EPS, dt))
    lf = lf.with_columns(
        normalized.alias(out.normalized),
        pl.when(normalized).then(scaled).otherwise(diff).alias(out.unclipped),
    )
    clipped = pl.col(out.unclipped)
    if p.clip_low is not None or p.clip_high is not None:
        clipped = clipped.clip(
            lower_bound=None if p.clip_low is None else pl.lit(p.clip_low, dt),
            upper_bound=None if p.clip_high is None else pl.lit(p.clip_high, dt),
        )
    return lf.with_columns(clipped.alias(out.advantage)).with_columns(
        pl.col(c).cast(pl.Float64) for c in (out.baseline, out.std, out.unclipped, out.advantage)
    )
