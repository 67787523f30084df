"""Leave-one-out (or group) baseline, std and r - baseline in float64 without cancellation.

`--precision float64` promises the exact maths. Group totals minus the row (what the float32
emulation does, as torch does) cancel: when a row's peers are all equal, E[x²] - E[x]² leaves a
residue of about 1e-18, and under the legacy guard a std of 4e-9 turns an advantage of 1 into 1e6.
Here every row's peer sums are taken directly, never by subtraction: each group's values are shifted
by one of its own valid values (so identical peers give exactly 0 and a spread of 1e-12 keeps its
relative precision), and the sum over the other rows is an exclusive prefix sum plus an exclusive
suffix sum within the group. Groups of one length are stacked into one 2-D block, so the work is a
few numpy passes per distinct group size.

Invalid rows (masked, with exclude_masked) keep the trainer's own formula: their peers are all valid
rows but the trainer divides by n - 1, a quantity with no cancellation to avoid."""

from __future__ import annotations

import numpy as np

from replay_cli.maths.segments import Runs


def _exclusive(x: np.ndarray) -> np.ndarray:
    """Per entry of a block (groups along the last axis), the sum of every other entry of its
    group: prefix plus suffix, no subtraction."""
    zeros = np.zeros((*x.shape[:-1], 1))
    before = np.concatenate([zeros, np.cumsum(x, axis=-1)[..., :-1]], axis=-1)
    after = np.concatenate([np.cumsum(x[..., ::-1], axis=-1)[..., ::-1][..., 1:], zeros], axis=-1)
    return before + after


def _nth_valid(r: np.ndarray, v: np.ndarray, rank: np.ndarray, n: int) -> np.ndarray:
    """Per group (last axis of the block), the value of its n-th valid entry (0 when it has
    none); `rank` is the running count of valid entries."""
    hit = v & (rank == n + 1)
    picked = np.take_along_axis(r, hit.argmax(axis=-1)[..., None], axis=-1)[..., 0]
    return np.where(hit.any(axis=-1), picked, 0.0)


def _block(r: np.ndarray, v: np.ndarray, loo: bool) -> tuple[np.ndarray, ...]:
    """(baseline, std, diff) for a block of equal-length groups (the last axis: one group's
    entries; any leading axes, e.g. configs × groups)."""
    v = np.broadcast_to(v, r.shape)
    n = v.sum(axis=-1, keepdims=True)
    rank = np.cumsum(v, axis=-1)
    first = _nth_valid(r, v, rank, 0)[..., None]
    second = _nth_valid(r, v, rank, 1)[..., None]
    if loo:
        # A valid row's peers exclude it: shift by a peer's value (the first valid row, or for
        # that row itself the second), so equal peers shift to exact zeros.
        is_first = v & (rank == 1)
        shift = np.where(is_first, second, first)
        m = n - 1
        s1 = np.empty_like(r)
        s2 = np.empty_like(r)
        for c, rows in ((first, ~is_first), (second, is_first)):
            d = np.where(v, r - c, 0.0)
            p1, p2 = _exclusive(d), _exclusive(d * d)
            s1 = np.where(rows, p1, s1)
            s2 = np.where(rows, p2, s2)
    else:
        shift = np.broadcast_to(first, r.shape)
        m = n
        d = np.where(v, r - first, 0.0)
        s1 = np.broadcast_to(d.sum(axis=-1, keepdims=True), r.shape)
        s2 = np.broadcast_to((d * d).sum(axis=-1, keepdims=True), r.shape)
    mf = np.broadcast_to(m, r.shape).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_dev = s1 / mf
        baseline = shift + mean_dev
        var = (s2 - s1 * mean_dev) / (mf - 1.0)
        std = np.sqrt(np.maximum(var, 0.0))
        diff = (r - shift) - mean_dev
        if loo:  # invalid rows: the trainer's sums over all valid rows, divided by n - 1
            rv = np.where(v, r, 0.0)
            b_inv = rv.sum(axis=-1, keepdims=True) / mf
            q_inv = (rv * rv).sum(axis=-1, keepdims=True) / mf
            sd_inv = np.sqrt((q_inv - b_inv * b_inv) * (mf / (mf - 1.0)))
            baseline = np.where(v, baseline, b_inv)
            std = np.where(v, std, np.nan_to_num(sd_inv, nan=0.0))
            diff = np.where(v, diff, r - b_inv)
    few = np.broadcast_to(n <= 1, r.shape)
    one_peer = np.broadcast_to(m <= 1, r.shape)
    baseline = np.where(few, r, baseline)
    std = np.where(few | one_peer, 0.0, std)
    diff = np.where(few, 0.0, diff)
    return baseline, std, diff


def peer_moments(r: np.ndarray, v: np.ndarray, runs: Runs, loo: bool) -> tuple[np.ndarray, ...]:
    """(baseline, std, r - baseline) per row of rows sorted into runs of equal group id, along
    the last axis (r may carry a leading config axis; v is shared or per config)."""
    out = [np.empty(r.shape) for _ in range(3)]
    for length in np.unique(runs.lengths):
        starts = runs.starts[runs.lengths == length]
        index = starts[:, None] + np.arange(length)[None, :]
        block = _block(r[..., index], v[..., index], loo)
        for target, values in zip(out, block, strict=True):
            target[..., index] = values
    return tuple(out)
