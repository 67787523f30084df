"""Every threshold the diagnostics count with, in one place (the hazard marks of the summary
table are the catalogue's, beside the metric they mark; the explosion threshold, which both
read, is the spec's: maths/spec.py)."""

from __future__ import annotations

import numpy as np

from replay_cli.maths import spec
from replay_cli.maths.segments import Runs

SIGNAL_EPS = 1e-6
"""|advantage| above this carries signal (spec §5)."""
EXPLOSION = spec.EXPLOSION
"""|unclipped advantage| above this is an explosion (the PR's recommended clip)."""
FRAGILE_STD = 1e-3
"""A std below this normalises a row by a rounding-sized number (rows without a float32 bound)."""
PLATFORM_REL = 1e-3
"""A row whose float32 rounding bound exceeds this × max(1, |A|) is platform-dependent: another
summation order can give a value that far off (`adv/fragile_std_frac`)."""
GAIN_EPS = 1e-9
"""A signal-rate gain over shaping off below this is no gain."""
MINUTES_EPS = 1e-9
"""A change of minutes per step nearer 0 than this is rounding, not a change."""


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


def with_signal(advantage: np.ndarray, trainable: np.ndarray, runs: Runs) -> np.ndarray:
    """The trainable advantages of groups with signal (spec §5: some trainable |A| > 1e-6), 0
    elsewhere: a group without signal trains nothing, and float32's rounding residue of equal
    rewards (~1e-9) must not become a direction that a step budget scales up to full size."""
    signal = runs.sum(trainable & above(np.abs(advantage), SIGNAL_EPS)) > 0
    return np.where(trainable & runs.rows(signal), advantage, 0.0).astype(np.float64)
