"""NeMo-RL GRPO advantages as polars expressions over group sums (spec §4.1).

Mirrors `calculate_baseline_and_std_per_prompt` + `GRPOAdvantageEstimator.compute_advantage`
(NVIDIA-NeMo/RL `nemo_rl/algorithms/utils.py`, `advantage_estimator.py` @ 7ea279ab, with the
PR #4158 trivial-distribution guard and the PR #4160 valid mask). In float32 mode leave-one-out
sums come from group totals minus the row, as torch's do, and rewards, squares, means, variances
and the division are rounded to float32 like torch's CPU math; the group totals are exact
(float64) sums of the float32 values, so the peer sums are correctly rounded float32 values and
the trainer's cancellation residues are reproduced. float64 mode is the exact maths: the peer sums
are taken directly, without cancellation (exact_moments.py).

Each function adds columns in stages (windows first, then arithmetic on them) so that every
window is computed once; `gid` is an integer group-id column, or the runs of rows sorted by it
(`segments.Groups`).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from replay_cli.config import AdvantageParams
from replay_cli.exact_moments import exact_moments
from replay_cli.segments import Groups, over

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


def add_baseline_and_std(
    lf: pl.LazyFrame,
    reward: str,
    valid: str,
    gid: Groups,
    p: AdvantageParams,
    baseline: str,
    std: str,
    diff: str | None = None,
) -> pl.LazyFrame:
    """Per-row baseline and Bessel-corrected std of the row's peers, in the working precision,
    and (when `diff` names a column) the row's reward minus its baseline.

    float64 takes the peer sums directly (exact_moments.py): no cancellation, so equal peers
    give a std of exactly 0. float32 keeps the trainer's totals-minus-row, residues included.
    """
    dt = _dtype(p)
    t = f"_{baseline}_"  # prefix of this call's temporary columns
    if p.precision == "float64":
        moments = exact_moments(pl.col(reward), pl.col(valid), gid, p.baseline == "loo")
        lf = lf.with_columns(moments.alias(t + "m"))
        parts = [pl.col(t + "m").struct.field("baseline").alias(baseline)]
        parts.append(pl.col(t + "m").struct.field("std").alias(std))
        if diff is not None:
            parts.append(pl.col(t + "m").struct.field("diff").alias(diff))
        return lf.with_columns(parts).drop(t + "m")
    r, v = pl.col(reward).cast(dt), pl.col(valid)
    zero = pl.lit(0.0, dt)
    lf = lf.with_columns(
        r.alias(t + "r"),
        pl.when(v).then(r).otherwise(zero).alias(t + "rv"),
        pl.when(v).then(r * r).otherwise(zero).alias(t + "r2v"),
    )
    rv, r2v = pl.col(t + "rv"), pl.col(t + "r2v")
    lf = lf.with_columns(
        over(v.cast(pl.Int64), gid, "sum", pl.Int64()).alias(t + "n"),
        over(rv, gid, "sum", pl.Float64()).alias(t + "s1"),
        over(r2v, gid, "sum", pl.Float64()).alias(t + "s2"),
    )
    n, s1, s2 = pl.col(t + "n"), pl.col(t + "s1"), pl.col(t + "s2")
    if p.baseline == "loo":
        # The trainer divides by sum(valid) - 1 for every row, also for an invalid one.
        m = n - 1
        peer1, peer2 = (s1 - rv.cast(pl.Float64)).cast(dt), (s2 - r2v.cast(pl.Float64)).cast(dt)
    else:
        m = n
        peer1, peer2 = s1.cast(dt), s2.cast(dt)
    lf = lf.with_columns(
        m.alias(t + "m"),
        (peer1 / m.cast(dt)).alias(t + "b"),
        (peer2 / m.cast(dt)).alias(t + "q"),
    )
    mf, b, q = pl.col(t + "m").cast(dt), pl.col(t + "b"), pl.col(t + "q")
    lf = lf.with_columns(
        # torch: sqrt(negative) -> nan -> 0 (nan_to_num).
        ((q - b * b) * (mf / (mf - pl.lit(1.0, dt)))).sqrt().fill_nan(0.0).alias(t + "sd")
    )
    sd = pl.col(t + "sd")
    few = n <= 1
    lf = lf.with_columns(
        pl.when(few).then(pl.col(t + "r")).otherwise(b).alias(baseline),
        # n <= 1: std 0. One peer (m = 1): its variance is exactly 0 in the trainer, 0 * inf = nan -> 0.
        # nan_to_num maps +inf (a positive residue times m/(m-1) = inf) to the largest float.
        pl.when(few | (pl.col(t + "m") <= 1))
        .then(zero)
        .when(sd.is_infinite())
        .then(pl.lit(FLOAT32_MAX, dt))
        .otherwise(sd)
        .alias(std),
    ).drop(t + c for c in ("r", "rv", "r2v", "n", "s1", "s2", "m", "b", "q", "sd"))
    if diff is not None:
        lf = lf.with_columns((pl.col(reward).cast(dt) - pl.col(baseline)).alias(diff))
    return lf


def add_peers_all_equal(
    lf: pl.LazyFrame, reward: str, valid: str, gid: Groups, p: AdvantageParams, out: str
) -> pl.LazyFrame:
    """PR #4158 `is_trivial_distribution`: the row's valid peers are all exactly equal.

    Peers are the other valid rows (LOO, when the row itself is valid) or all valid rows.
    """
    t = f"_{out}_"
    dt = _dtype(p)
    r, v = pl.col(reward).cast(dt), pl.col(valid)
    vr = pl.when(v).then(r)
    lf = lf.with_columns(
        r.alias(t + "r"),
        over(v.cast(pl.Int64), gid, "sum", pl.Int64()).alias(t + "n"),
        over(vr, gid, "min", dt).alias(t + "lo"),
        over(vr, gid, "max", dt).alias(t + "hi"),
    )
    r, n, lo, hi = pl.col(t + "r"), pl.col(t + "n"), pl.col(t + "lo"), pl.col(t + "hi")
    lf = lf.with_columns(
        over((v & (r == lo)).cast(pl.Int64), gid, "sum", pl.Int64()).alias(t + "n_lo"),
        over((v & (r == hi)).cast(pl.Int64), gid, "sum", pl.Int64()).alias(t + "n_hi"),
    )
    n_lo, n_hi = pl.col(t + "n_lo"), pl.col(t + "n_hi")
    same = (lo == hi).fill_null(True) | (n <= 1)
    if p.baseline == "loo":
        lone_lo = v & (r == lo) & (n_lo == 1) & (n_hi == n - 1)
        lone_hi = v & (r == hi) & (n_hi == 1) & (n_lo == n - 1)
        same = same | lone_lo | lone_hi
    return lf.with_columns(same.alias(out)).drop(
        t + c for c in ("r", "n", "lo", "hi", "n_lo", "n_hi")
    )


def add_grpo(
    lf: pl.LazyFrame, reward: str, valid: str, gid: Groups, p: AdvantageParams, out: AdvColumns
) -> pl.LazyFrame:
    """Add baseline, std, guard flags and advantages (before and after the clip) for one reward column."""
    dt = _dtype(p)
    diff_col = f"_{out.unclipped}_diff"
    lf = add_baseline_and_std(lf, reward, valid, gid, p, out.baseline, out.std, diff_col)
    lf = add_peers_all_equal(lf, reward, valid, gid, p, out.peers_equal)
    guard = pl.col(out.std) > 0
    if p.std_guard == "trivial":
        guard = guard & ~pl.col(out.peers_equal)
    normalized = guard & pl.lit(p.normalize)
    diff = pl.col(diff_col)
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
    return (
        lf.with_columns(clipped.alias(out.advantage))
        .with_columns(
            pl.col(c).cast(pl.Float64)
            for c in (out.baseline, out.std, out.unclipped, out.advantage)
        )
        .drop(diff_col)
    )
