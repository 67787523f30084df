"""How far any IEEE float32 evaluation of NeMo-RL's GRPO advantage can lie from ours: a per-row
bound in three stages (the sums over any summation tree, the single IEEE operations before the
variance's cancellation, one ulp outwards for the rest), derived in docs/semantics.md, "float32
rounding bound"."""

from __future__ import annotations

import numpy as np

from replay_cli.config import AdvantageParams
from replay_cli.maths.segments import Runs

U = 2.0**-24
EPS = 1e-6  # the trainer's std epsilon
SLACK = 2 * U * 1.001
"""An elementwise operation after the variance's cancellation lies within one float32 ulp (2u
relative) of its exact result; the 0.1% covers the bound's own float64 evaluation."""
TINY = 2.0**-149  # the least positive float32
BLOCK_VALUES = 65536
"""f32_bound works on slices of whole groups of about this many values (configs × rows): its
float64 passes then stay in the CPU's cache instead of streaming from memory
(docs/benchmarks.md, ninth session)."""


def _gamma(k: np.ndarray) -> np.ndarray:
    k = np.maximum(k, 0)
    return k * U / (1 - k * U)


def _half_ulp(y: np.ndarray) -> np.ndarray:
    """Half the float32 spacing at y > 0 (the most a rounding to nearest there can move), 2^-150
    below the normal range; 0 at 0."""
    _, exponent = np.frexp(y)
    return np.where(y > 0, np.ldexp(1.0, np.maximum(exponent - 25, -150)), 0.0)


def _spacing(y: np.ndarray) -> np.ndarray:
    """The float32 spacing at y >= 0 (2^-149 below the normal range and at 0)."""
    _, exponent = np.frexp(y)
    return np.where(y > 0, np.ldexp(1.0, np.maximum(exponent - 24, -149)), TINY)


def tree_error(top: np.ndarray, total: np.ndarray, k: np.ndarray) -> np.ndarray:
    """A bound on the rounding error of any float32 summation of k terms whose largest magnitude is
    `top` and whose magnitudes sum to `total`: Σ_{i=2..k} half-ulp(c·min(i·top, total)).

    A tree of k leaves has k - 1 additions; its t-th largest partial sum (in magnitude, exactly)
    is at most the sum of the k - t + 1 largest leaves, so at most min((k-t+1)·top, total). Each
    addition rounds by at most half an ulp of its computed result, which exceeds the exact one by
    at most c = 1 + γ(k). The terms below the cap are summed by binades of i·top, a few vector
    passes, rather than one pass per i."""
    k = np.asarray(k)
    c = 1 + _gamma(k)
    with np.errstate(divide="ignore", invalid="ignore"):
        uncapped = np.where(top > 0, np.floor(total / np.where(top > 0, top, 1.0)), 0.0)
    last = np.maximum(np.minimum(uncapped, k), 1.0)  # i = 2..last below the cap, the rest at it
    # Raised to the normal range: half-ulps there are never smaller (a subnormal's is 2^-150).
    mantissa, exponent = np.frexp(np.maximum(c * top, 2.0**-126))
    mu = 2 * mantissa  # c·top = mu·2^(exponent-1), mu in [1, 2)
    # Σ_{i=2..last} 2^floor(log2(i·mu)) = (last - 1) + Σ_{j>=1} 2^(j-1)·#{2 <= i <= last: i·mu >= 2^j}
    binades = 2 * (last - 1)  # j = 1: every i >= 2 has i·mu >= 2
    j = 2
    reach = float(np.max(last * mu, initial=0.0))
    while 2.0**j <= reach:
        first = np.maximum(np.ceil(2.0**j / mu), 2.0)
        binades = binades + 2.0 ** (j - 1) * np.maximum(last - first + 1, 0.0)
        j += 1
    below_cap = binades * np.ldexp(1.0, exponent - 25)
    at_cap = (k - last) * _half_ulp(np.maximum(c * total, 2.0**-126))
    return np.where((k >= 2) & (total > 0), below_cap + at_cap, 0.0)


def _peer_sums(r: np.ndarray, valid: np.ndarray, runs: Runs, loo: bool) -> tuple[np.ndarray, ...]:
    """Per row: valid count n, the trainer's denominator m, and the float32 intervals of every
    value the masked matmuls can give for the peer sums of r and of r² (r: float32)."""
    v = np.broadcast_to(valid, r.shape)
    rv = np.where(v, r, np.float32(0))
    sq = rv * rv  # float32, as the trainer's pow(r, 2)
    x, x_abs, x_sq = rv.astype(np.float64), np.abs(rv).astype(np.float64), sq.astype(np.float64)
    n_group = runs.sum(v)
    n = runs.rows(n_group)
    k = n - v if loo else n  # terms of the row's sums (an invalid row is no peer of its own)
    m = (n - 1) if loo else n
    terms = x, x_abs, x_sq
    totals = [runs.sum(t) for t in terms]
    s, a_sum, q = (
        runs.rows(total) - (t if loo else 0.0) for total, t in zip(totals, terms, strict=True)
    )
    # The last addition of any tree is one IEEE rounding of the exact sum of its two operands,
    # which lie within the rounding of the other additions of the exact sum: the sum is the
    # float32 nearest to some value within that much of the exact one. Those k - 1 additions
    # form trees of at most k - 1 leaves, so `tree_error` over k - 1 terms bounds them; it is
    # taken per group, over the group's largest magnitude and total, a bound for every row with
    # as many terms. Under leave-one-out that also counts the row's own magnitude, so γ(k - 2)
    # times its peers' magnitudes caps it (a lone success among zeros has exact sums).
    top = runs.top(np.abs(rv))
    top_sq = top * top  # the largest float32 square
    group_k = n_group - (1 if loo else 0)
    tree_s = runs.rows(tree_error(top.astype(np.float64), totals[1], group_k - 1))
    tree_q = runs.rows(tree_error(top_sq.astype(np.float64), totals[2], group_k - 1))
    if loo and not v.all():  # an invalid row sums one term more than its group's count
        mine = runs.rows(group_k) == k
        tree_s, tree_q = np.where(mine, tree_s, np.inf), np.where(mine, tree_q, np.inf)
    gamma = _gamma(k - 2)
    # Sums of small integers are exact in float32, whatever the order (|x| <= x² for integers).
    integral = runs.sum(np.where(v, r != np.round(r), False)) == 0
    inexact = runs.rows(~(integral & (totals[2] < 2**24)))
    e_s = np.where(inexact, np.minimum(tree_s, gamma * a_sum), 0.0)
    e_q = np.where(inexact, np.minimum(tree_q, gamma * q), 0.0)
    # The float64 totals minus the row are exact where every value is a multiple of the least
    # one's float32 spacing (over 2^-24 of it) and n times the largest stays below 2^53 of those
    # (2^28 leaves a factor 2 for the squares' rounding): elsewhere a margin of their own
    # rounding, 2^-53 of the group's magnitudes per operation (the row's own too: it is in the
    # total). Rounding to nearest is monotone, and without a margin a tie rounds to even as the
    # trainer's addition does.
    bottom = runs.low(np.abs(rv), rv != 0)
    wide_s = n_group * top >= 2.0**28 * bottom
    wide_q = n_group * top_sq >= 2.0**28 * bottom * bottom
    if wide_s.any() or wide_q.any():
        f64 = (n_group + 2) * 2.0**-53
        e_s = e_s + runs.rows(np.where(wide_s, f64 * totals[1], 0.0))
        e_q = e_q + runs.rows(np.where(wide_q, f64 * totals[2], 0.0))
    s_lo, s_hi = (s - e_s).astype(np.float32), (s + e_s).astype(np.float32)
    q_lo, q_hi = (q - e_q).astype(np.float32), (q + e_q).astype(np.float32)
    return n, m, s_lo, s_hi, np.maximum(q_lo, np.float32(0)), q_hi


def _down(x: np.ndarray) -> np.ndarray:
    """x moved outwards (down) by one faithful rounding."""
    return x - SLACK * np.abs(x)


def _up(x: np.ndarray) -> np.ndarray:
    return x + SLACK * np.abs(x)


def f32_bound(
    reward: np.ndarray,
    valid: np.ndarray,
    runs: Runs,
    p: AdvantageParams,
    emitted: np.ndarray,
    peers_equal: np.ndarray,
) -> np.ndarray:
    """Per row, a bound B such that every float32 evaluation of the trainer's (unclipped)
    advantage lies within emitted ± B; `reward` holds the float32 rewards the trainer sees
    (configs × rows or rows), `emitted` our unclipped advantages, whichever precision computed
    them (the float64 maths of `--precision float64` too: the interval is of the trainer's values
    from its float32 rewards, measured from the emitted one).
    Elementwise within a group, so computed slice by slice of whole groups (BLOCK_VALUES)."""
    out = np.empty(np.broadcast_shapes(reward.shape, emitted.shape), np.float64)
    configs = out.shape[0] if out.ndim > 1 else 1
    arrays = (reward, valid, emitted, peers_equal)
    for rows, block_runs in runs.blocks(max(1, BLOCK_VALUES // configs)):
        out[..., rows] = _block_bound(block_runs, p, *(a[..., rows] for a in arrays))
    return out


def _block_bound(
    runs: Runs,
    p: AdvantageParams,
    reward: np.ndarray,
    valid: np.ndarray,
    emitted: np.ndarray,
    peers_equal: np.ndarray,
) -> np.ndarray:
    """f32_bound over rows holding whole groups, in stages whose temporaries die on return."""
    f32 = np.float32
    r = reward.astype(f32, copy=False)
    loo = p.baseline == "loo"
    n, m, s_lo, s_hi, q_lo, q_hi = _peer_sums(r, valid, runs, loo)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # IEEE float32 operations on the sums' endpoints: monotone, so they give every value's.
        m32 = np.maximum(m, 1).astype(f32)
        b_lo, b_hi = s_lo / m32, s_hi / m32
        qm_lo, qm_hi = q_lo / m32, q_hi / m32
        del s_lo, s_hi, q_lo, q_hi
        b_min = np.where(b_lo > 0, b_lo, np.where(b_hi < 0, -b_hi, f32(0)))
        b_max = np.maximum(np.abs(b_lo), np.abs(b_hi))
        bsq_lo, bsq_hi = b_min * b_min, b_max * b_max
        a_lo = _down((r - b_hi).astype(np.float64))
        a_hi = _up((r - b_lo).astype(np.float64))
        del b_lo, b_hi, b_min, b_max
        # After the cancellation: each operation within an ulp, evaluated in float64.
        qm_lo64, bsq_lo64 = qm_lo.astype(np.float64), bsq_lo.astype(np.float64)
        d_lo = _down(qm_lo64 - bsq_hi)
        d_hi = _up(qm_hi - bsq_lo64)
        c = (m32 / (m32 - f32(1))).astype(np.float64)  # the trainer's float32 Bessel factor
        var_lo = _down(d_lo * c)
        var_hi = _up(d_hi * c)
        # A positive variance below the least float32 may round to 0: the guard fails.
        zero_possible = var_lo < TINY
        if zero_possible.any():  # usually few rows: the spacing only there
            at = np.nonzero(zero_possible)

            def part(x: np.ndarray) -> np.ndarray:
                return np.broadcast_to(x, zero_possible.shape)[at]

            # A positive difference of two float32 numbers is a multiple of the finer spacing.
            finer = np.minimum(_spacing(part(qm_lo64)), _spacing(part(bsq_lo64)))
            var_lo[at] = np.maximum(np.maximum(var_lo[at], _down(finer * part(c))), TINY)
        del qm_lo, qm_hi, bsq_lo, bsq_hi, qm_lo64, bsq_lo64, d_lo
        eps = float(f32(EPS))
        den_lo = _down(_down(np.sqrt(var_lo)) + eps)
        den_hi = _up(_up(np.sqrt(var_hi)) + eps)
        del var_lo, var_hi
        # The quotient's extremes over the box: a_lo <= a_hi and 0 < den_lo <= den_hi, so the
        # least has a_lo over the two denominators and the largest a_hi over them.
        n_lo = _down(np.minimum(a_lo / den_lo, a_lo / den_hi))
        n_hi = _up(np.maximum(a_hi / den_lo, a_hi / den_hi))
        del den_lo, den_hi
    two = loo & (m == 1)  # a single peer: its variance is exactly 0, never normalised
    exactly_zero = two | ~(d_hi > 0)  # the variance is 0 or below on every platform
    trivial = peers_equal if p.std_guard == "trivial" else np.zeros_like(peers_equal)
    if p.normalize:
        may_normalize = ~exactly_zero & ~trivial
        may_keep = exactly_zero | zero_possible | trivial
    else:
        may_normalize = np.zeros_like(zero_possible)
        may_keep = np.ones_like(zero_possible)
    lo = np.where(may_keep, a_lo, np.inf)
    hi = np.where(may_keep, a_hi, -np.inf)
    lo = np.where(may_normalize, np.minimum(lo, n_lo), lo)
    hi = np.where(may_normalize, np.maximum(hi, n_hi), hi)
    e = emitted.astype(np.float64)
    bound = np.maximum(np.abs(e - lo), np.abs(hi - e))
    return np.where((n <= 1) | ~np.isfinite(bound), np.where(n <= 1, 0.0, np.inf), bound)
