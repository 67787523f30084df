"""Reductions over the effort levels, the short last axis of the effort model's arrays.

numpy reduces a last axis of 4 element by element per row, 3-4x slower than adding its 4 slices as
whole-array passes. For fewer than 8 levels numpy's own sum adds left to right, so the slices added
in order give the same bits; from 8 on it sums pairwise, and these defer to it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

SEQUENTIAL = 8
"""numpy sums an axis shorter than this left to right (its pairwise sum's unrolled block)."""


def level_sum(x: np.ndarray, keepdims: bool = False) -> np.ndarray:
    """`x.sum(-1, keepdims=keepdims)`, bit for bit (but for the sign of an all-(-0) sum)."""
    return _by_level(x, np.add, x.sum, keepdims)


def level_max(x: np.ndarray, keepdims: bool = False) -> np.ndarray:
    """`x.max(-1, keepdims=keepdims)`, NaN propagating as numpy's."""
    return _by_level(x, np.maximum, x.max, keepdims)


def _by_level(x: np.ndarray, op: np.ufunc, whole: Callable, keepdims: bool) -> np.ndarray:
    """`op` over the levels slice by slice, left to right; numpy's `whole` where it would not."""
    n = x.shape[-1]
    if n >= SEQUENTIAL or n < 2:
        return whole(-1, keepdims=keepdims)
    out = op(x[..., 0], x[..., 1])
    for k in range(2, n):
        op(out, x[..., k], out=out)
    return out[..., None] if keepdims else out


def level_cumsum(x: np.ndarray) -> np.ndarray:
    """`np.cumsum(x, axis=-1)`, bit for bit (numpy's cumulative sum is always left to right)."""
    out = np.empty(x.shape, x.dtype)
    out[..., 0] = x[..., 0]
    for k in range(1, x.shape[-1]):
        np.add(out[..., k - 1], x[..., k], out=out[..., k])
    return out
