"""NeMo-RL GRPO advantages over numpy arrays whose last axis is rows sorted by group (spec §4.1).

Mirrors `calculate_baseline_and_std_per_prompt` + `GRPOAdvantageEstimator.compute_advantage`
(NVIDIA-NeMo/RL `nemo_rl/algorithms/utils.py`, `advantage_estimator.py` @ 7ea279ab, with the PR
#4158 trivial-distribution guard and the PR #4160 valid mask). Rewards may carry a leading config
axis (configs × rows): a sweep's configs then share every group reduction call. In float32 mode
leave-one-out sums come from group totals minus the row, as torch's do, and rewards, squares, means,
variances and the division are rounded to float32 like torch's CPU math; the group totals are
float64 sums of the float32 values (exact for rewards within 29 bits of each other's magnitude,
whatever the order), so the peer sums are correctly rounded float32 values and the trainer's
cancellation residues are reproduced. float64 mode is the exact maths: the peer sums are taken
directly, without cancellation (exact_moments.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay_cli.config import AdvantageParams
from replay_cli.maths import torch_grpo
from replay_cli.maths.exact_moments import peer_moments
from replay_cli.maths.segments import Runs

EPS = 1e-6
FLOAT32_MAX = 3.4028234663852886e38


@dataclass
class GrpoArrays:
    """Per-row results of one GRPO computation, in the working precision."""

    baseline: np.ndarray
    std: np.ndarray
    unclipped: np.ndarray
    advantage: np.ndarray
    peers_equal: np.ndarray
    normalized: np.ndarray


def working_dtype(p: AdvantageParams) -> type[np.floating]:
    """float64 for the exact maths; float32 for the emulation and for torch's own operations."""
    return np.float64 if p.precision == "float64" else np.float32


def _float32_peers(
    reward: np.ndarray, valid: np.ndarray, runs: Runs, loo: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """float32 rewards r, their valid part rv, the valid count n per group, the peer count m
    (n - 1 for LOO; the trainer divides by it for every row) and m per row as float32."""
    f32 = np.float32
    r = reward.astype(f32, copy=False)
    rv = r if bool(valid.all()) else np.where(valid, r, f32(0))
    n = runs.sum(valid)
    m = n - 1 if loo else n
    return r, rv, n, m, runs.rows(m.astype(f32))


def _peer_sum(x: np.ndarray, runs: Runs, loo: bool) -> np.ndarray:
    """Per row, the float32 sum of x over its peers: the group's float64 total minus the row
    (LOO) or the total, rounded to float32 (no float64 temporary)."""
    total = runs.sum(x)
    if loo:
        return np.subtract(runs.rows(total), x, dtype=np.float64, out=np.empty(x.shape, np.float32))
    return runs.rows(total.astype(np.float32))


def baseline_and_std(
    reward: np.ndarray, valid: np.ndarray, runs: Runs, p: AdvantageParams
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(baseline, Bessel-corrected std of the row's peers, reward - baseline) per row.

    float64 takes the peer sums directly (exact_moments.py): equal peers give a std of exactly
    0. float32 keeps the trainer's totals-minus-row, residues included. `valid` marks the rows
    that vote; the trainer divides by sum(valid) - 1 for every row, also for an invalid one.
    """
    loo = p.baseline == "loo"
    if p.precision == "float64":
        return peer_moments(reward.astype(np.float64, copy=False), valid, runs, loo)
    if p.precision == "torch":
        r = reward.astype(np.float32, copy=False)
        b, sd = torch_grpo.baseline_and_std(r, valid, runs, loo, p.device)
        return b, sd, r - b
    f32 = np.float32
    r, rv, n, m, mf = _float32_peers(reward, valid, runs, loo)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        b = _peer_sum(rv, runs, loo) / mf
        q = _peer_sum(rv * rv, runs, loo) / mf
        # torch: sqrt(negative) -> nan -> 0 (nan_to_num).
        sd = np.sqrt((q - b * b) * (mf / (mf - f32(1))))
    np.copyto(sd, f32(0), where=np.isnan(sd))
    few = runs.rows(n <= 1)
    baseline = np.where(few, r, b)
    # n <= 1: std 0. One peer (m = 1): its variance is exactly 0 in the trainer, 0 * inf = nan -> 0.
    # nan_to_num maps +inf (a positive residue times m/(m-1) = inf) to the largest float.
    np.copyto(sd, f32(FLOAT32_MAX), where=np.isinf(sd))
    np.copyto(sd, f32(0), where=few | runs.rows(m <= 1))
    return baseline, sd, r - baseline


def baseline_only(
    reward: np.ndarray, valid: np.ndarray, runs: Runs, p: AdvantageParams
) -> np.ndarray:
    """The baseline of `baseline_and_std` alone (the same arithmetic, without the std)."""
    if p.precision != "float32":
        return baseline_and_std(reward, valid, runs, p)[0]
    loo = p.baseline == "loo"
    r, rv, n, _, mf = _float32_peers(reward, valid, runs, loo)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = _peer_sum(rv, runs, loo) / mf
    return np.where(runs.rows(n <= 1), r, b)


def peers_all_equal(
    reward: np.ndarray, valid: np.ndarray, runs: Runs, p: AdvantageParams
) -> np.ndarray:
    """PR #4158 `is_trivial_distribution`: the row's valid peers are all exactly equal.

    Peers are the other valid rows (LOO, when the row itself is valid) or all valid rows."""
    r = reward.astype(working_dtype(p), copy=False)
    n = runs.sum(valid)
    lo, hi = runs.bounds(r, None if valid.all() else valid)
    same = (lo == hi) | (n <= 1)  # a run without valid rows has n = 0
    if p.baseline != "loo":
        return runs.rows(same)
    at_lo, at_hi = valid & (r == runs.rows(lo)), valid & (r == runs.rows(hi))
    n_lo, n_hi = runs.sum(at_lo), runs.sum(at_hi)
    lone_lo = at_lo & runs.rows((n_lo == 1) & (n_hi == n - 1))
    lone_hi = at_hi & runs.rows((n_hi == 1) & (n_lo == n - 1))
    return runs.rows(same) | lone_lo | lone_hi


def grpo(reward: np.ndarray, valid: np.ndarray, runs: Runs, p: AdvantageParams) -> GrpoArrays:
    """Baseline, std, guard flags and advantages (before and after the clip) of one reward array."""
    dt = working_dtype(p)
    baseline, std, diff = baseline_and_std(reward, valid, runs, p)
    equal = peers_all_equal(reward, valid, runs, p)
    guard = std > 0
    if p.std_guard == "trivial":
        guard &= ~equal
    normalized = guard if p.normalize else np.zeros_like(guard)
    if p.precision == "torch":
        unclipped = torch_grpo.normalized_advantage(reward, baseline, std, normalized, p.device)
    else:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            unclipped = np.where(normalized, diff / (std + dt(EPS)), diff)
    advantage = unclipped
    if p.clip_low is not None:
        advantage = np.maximum(advantage, dt(p.clip_low))
    if p.clip_high is not None:
        advantage = np.minimum(advantage, dt(p.clip_high))
    return GrpoArrays(baseline, std, unclipped, advantage, equal, normalized)
