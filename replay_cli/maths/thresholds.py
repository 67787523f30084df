"""Every threshold a number of the report is judged by, in one place: the diagnostics count with
them, the findings and the HTML hazard marks read them."""

from __future__ import annotations

import numpy as np

SIGNAL_EPS = 1e-6
"""|advantage| above this carries signal (spec §5)."""
EXPLOSION = 3.0
"""|unclipped advantage| above this is an explosion (the PR's recommended clip)."""
FRAGILE_STD = 1e-3
"""A std below this normalises a row by a rounding-sized number (rows without a float32 bound)."""
PLATFORM_REL = 1e-3
"""A row whose float32 rounding bound exceeds this × max(1, |A|) is platform-dependent: another
summation order can give a value that far off (`adv/fragile_std_frac`)."""
TIME_ONLY_WARN = 0.10
"""Share of groups above which an all-fail group's "fail faster" signal is a warning finding."""
TIME_ONLY_CELL = 0.25
"""Share of groups with time-only signal above which the summary table marks the cell."""
SIGN_FLIP_CELL = 0.05
"""Share of rows flipping sign vs shaping off above which the summary table marks the cell."""
GAIN_EPS = 1e-9
"""A signal-rate gain over shaping off below this is no gain."""
MINUTES_EPS = 1e-9
"""A change of minutes per step nearer 0 than this is rounding, not a change."""
PUSH_EPS = 1e-9
"""A behaviour push (advantage × property per group) nearer 0 than this is rounding, not a push."""


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
