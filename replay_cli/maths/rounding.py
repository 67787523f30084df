"""How far any IEEE float32 evaluation of NeMo-RL's GRPO advantage can lie from ours: a per-row
bound (docs/semantics.md, "float32 rounding bound").

The trainer sums a row's peers by a masked matmul in float32, in an order that depends on the
platform (CPU BLAS, GPU kernels, FMA or not). With u = 2^-24 and k terms, any such sum lies within
γ(k-1)·Σ|r| of the exact one (γ(j) = j·u/(1 - j·u)); squares add one rounding. From there the
baseline, the second moment, their difference, the Bessel factor, the square root, the
subtraction and the division each add one rounding, bounded in turn. Where the variance can round
to zero or below, the guard can fail (the row keeps r - b) or pass with the smallest positive
variance the subtraction can leave, so both outcomes are in the interval. Sums of small integers
(shaping off with binary rewards) are exact, and a group of two under leave-one-out always has
std 0 (its single peer's variance is computed exactly as 0).
"""

from __future__ import annotations

import numpy as np

from replay_cli.config import AdvantageParams
from replay_cli.maths.segments import Runs

U = 2.0**-24
EPS = 1e-6  # the trainer's std epsilon
SAFETY = 1.001  # the bound is evaluated in float64: a margin for its own rounding
BLOCK_VALUES = 65536
"""f32_bound works on slices of whole groups of about this many values (configs × rows): its
hundred-odd float64 passes then stay in the CPU's cache instead of streaming from memory
(docs/benchmarks.md, ninth session)."""


def _gamma(k: np.ndarray) -> np.ndarray:
    k = np.maximum(k, 0)
    return k * U / (1 - k * U)


def _ulp32(x: np.ndarray) -> np.ndarray:
    """The float32 spacing at |x| (normal range), 0 where x is 0."""
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.abs(x)))
    return np.where(x > 0, np.exp2(exponent - 23), 0.0)


def _peer_sums(
    r: np.ndarray, valid: np.ndarray, runs: Runs, loo: bool, rounded_inputs: bool
) -> tuple[np.ndarray, ...]:
    """Per row: valid count n, the trainer's denominator m, the peer sums s and q (of r and r²),
    their error bounds e_s and e_q, and whether the sums are exact."""
    v = np.broadcast_to(valid, r.shape)
    rv = np.where(v, r, 0.0)
    n = runs.rows(runs.sum(v))
    rv_abs, rv_sq = np.abs(rv), rv * rv
    total_abs = runs.rows(runs.sum(rv_abs))
    total_sq = runs.rows(runs.sum(rv_sq))
    own = np.where(v, 1, 0) if loo else 0
    k = n - own  # terms of the row's sums
    m = (n - 1) if loo else n
    s = runs.rows(runs.sum(rv)) - (rv if loo else 0.0)
    a_sum = total_abs - (rv_abs if loo else 0.0)
    q = total_sq - (rv_sq if loo else 0.0)
    # Sums of small integers are exact in float32, whatever the order (|x| <= x² for integers).
    integral = runs.rows(runs.sum(np.where(v, r != np.round(r), False)) == 0)
    exact = integral & (total_sq < 2**24)
    e_s = np.where(exact, 0.0, _gamma(k - 1) * a_sum)
    e_q = np.where(exact, 0.0, _gamma(k) * q)
    if rounded_inputs:  # each reward moved by up to u|r| when the trainer made it float32
        e_s = e_s + U * a_sum
        e_q = e_q + 2.01 * U * q
    return n, m, s, q, e_s, e_q, exact


def _std_interval(
    m: np.ndarray, s: np.ndarray, q: np.ndarray, e_s: np.ndarray, e_q: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Per row: the baseline b and its error e_b, the least and largest std any platform can
    compute, whether the variance may round to zero or below, and whether it is surely 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mm = np.maximum(m, 1)
        b = s / mm
        e_b = (e_s + U * (np.abs(s) + e_s)) / mm
        qm = q / mm
        e_qm = (e_q + U * (q + e_q)) / mm
        b_abs, b_sq = np.abs(b), b * b
        e_bsq = e_b * (2 * b_abs + e_b) + U * (b_abs + e_b) ** 2
        d = np.maximum(qm - b_sq, 0.0)
        e_d = e_qm + e_bsq + U * (qm + e_qm + b_sq + e_bsq)
        c = mm / np.maximum(mm - 1, 1)
        variance = d * c
        e_var = (c * e_d + c * (d + e_d) * 2.01 * U) * SAFETY
        low_var, high_var = variance - e_var, variance + e_var
        zero_possible = low_var <= 0
        if zero_possible.any():  # usually few rows: the transcendental part only there
            at = np.nonzero(zero_possible)

            def part(x: np.ndarray) -> np.ndarray:
                return np.broadcast_to(x, zero_possible.shape)[at]

            # The smallest positive variance a subtraction of two float32 numbers can leave.
            smallest = np.maximum(
                np.minimum(part(qm) - part(e_qm), (np.abs(part(b)) - part(e_b)) ** 2), 0.0
            )
            ulp = np.where(smallest > 0, _ulp32(smallest), 2.0**-149)
            low_var[at] = part(c) * (1 - 3 * U) * ulp
        std_lo = np.sqrt(low_var) * (1 - U)
        std_hi = np.sqrt(high_var) * (1 + U)
    return b, e_b, std_lo, std_hi, zero_possible, ~(high_var > 0)


def f32_bound(
    reward: np.ndarray,
    valid: np.ndarray,
    runs: Runs,
    p: AdvantageParams,
    emitted: np.ndarray,
    peers_equal: np.ndarray,
    *,
    rounded_inputs: bool,
) -> np.ndarray:
    """Per row, a bound B such that every float32 evaluation of the trainer's (unclipped)
    advantage lies within emitted ± B; `reward` holds the float32 rewards (configs × rows or
    rows), `emitted` our unclipped advantages. `rounded_inputs`: `emitted` was computed from the
    float64 rewards (`--precision float64`), so the rounding of each reward to float32 is added.
    Elementwise within a group, so computed slice by slice of whole groups (BLOCK_VALUES)."""
    out = np.empty(np.broadcast_shapes(reward.shape, emitted.shape), np.float64)
    configs = out.shape[0] if out.ndim > 1 else 1
    for rows, block_runs in runs.blocks(max(1, BLOCK_VALUES // configs)):
        out[..., rows] = _block_bound(
            reward[..., rows],
            valid[..., rows],
            block_runs,
            p,
            emitted[..., rows],
            peers_equal[..., rows],
            rounded_inputs=rounded_inputs,
        )
    return out


def _block_bound(
    reward: np.ndarray,
    valid: np.ndarray,
    runs: Runs,
    p: AdvantageParams,
    emitted: np.ndarray,
    peers_equal: np.ndarray,
    *,
    rounded_inputs: bool,
) -> np.ndarray:
    """f32_bound over rows holding whole groups, in stages whose temporaries die on return."""
    r = reward.astype(np.float64)
    loo = p.baseline == "loo"
    n, m, s, q, e_s, e_q, exact = _peer_sums(r, valid, runs, loo, rounded_inputs)
    b, e_b, std_lo, std_hi, zero_possible, surely_zero = _std_interval(m, s, q, e_s, e_q)
    del s, q, e_s, e_q
    with np.errstate(divide="ignore", invalid="ignore"):
        e_a = (e_b + U * (np.abs(r) + np.abs(b) + e_b) * (2 if rounded_inputs else 1)) * SAFETY
        a = r - b
        a_lo, a_hi = a - e_a, a + e_a
        del a, e_a, b, e_b
        den_lo = (std_lo + EPS) * (1 - U)
        den_hi = (std_hi + EPS) * (1 + U)
        del std_lo, std_hi
        # The quotient's extremes over the box: a_lo <= a_hi and 0 < den_lo <= den_hi, so the
        # least has a_lo over the two denominators and the largest a_hi over them.
        q_lo = np.minimum(a_lo / den_lo, a_lo / den_hi)
        q_hi = np.maximum(a_hi / den_lo, a_hi / den_hi)
        del den_lo, den_hi
        n_lo = q_lo * (1 + np.sign(-q_lo) * 2 * U)
        n_hi = q_hi * (1 + np.sign(q_hi) * 2 * U)
    two = loo & (m == 1)  # a single peer: its variance is exactly 0, never normalised
    # Exact sums over equal peers leave exactly 0: the guard fails on every platform.
    exactly_zero = two | (exact & peers_equal) | surely_zero
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
