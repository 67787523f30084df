"""Every threshold a number of the report is judged by, in one place: the diagnostics count with
them, the findings and the HTML hazard marks read them."""

from __future__ import annotations

import numpy as np

SIGNAL_EPS = 1e-6
"""|advantage| above this carries signal (spec §5)."""
EXPLOSION = 3.0
"""|unclipped advantage| above this is an explosion (the PR's recommended clip)."""
FRAGILE_STD = 1e-3
"""A std below this normalises a row by a rounding-sized number."""


def above(x: np.ndarray, threshold: float) -> np.ndarray:
    """`x > threshold` as float64 compares it, without converting a float32 x: against the
    largest float32 not above the threshold (no float32 lies strictly between the two)."""
    t = x.dtype.type(threshold)
    if x.dtype == np.float32 and float(t) > threshold:
        t = np.nextafter(t, x.dtype.type(-np.inf))
    return x > t


def below(x: np.ndarray, threshold: float) -> np.ndarray:
    """`x < threshold` as float64 compares it (see `above`)."""
    t = x.dtype.type(threshold)
    if x.dtype == np.float32 and float(t) < threshold:
        t = np.nextafter(t, x.dtype.type(np.inf))
    return x < t
