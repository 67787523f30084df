"""What an update teaches the policy, per group: the behaviour pushes, the first-order covariance
of the trained advantage with resolved and with minutes (split into fail, pass and between by the
law of total covariance); docs/report.md gives the derivation and its limits."""

from __future__ import annotations

import numpy as np

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.maths.segments import Runs

PUSHES = tuple(C.PUSH_NAMES)
"""Every push, in report order (the catalogue's); group columns are `push_<name>` and
`push_<name>_off`."""

PUSH_COLUMNS = [f"{S.G_PUSH}{name}{off}" for name in PUSHES for off in ("", "_off")]


def _over(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0 (a group without such rows has no push from them)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), 0.0)


def group_pushes(
    runs: Runs,
    advantage: np.ndarray,
    trainable: np.ndarray,
    resolved: np.ndarray,
    minutes: np.ndarray,
    calls: np.ndarray,
) -> dict[str, np.ndarray]:
    """Per run, every push of `PUSHES` (arrays of (configs, runs) for a (configs, rows)
    advantage); 0 for runs without trainable rows."""
    a = np.where(trainable, advantage, 0.0).astype(np.float64)
    passed, failed = trainable & resolved, trainable & ~resolved
    n = runs.sum(np.broadcast_to(trainable, a.shape))
    n_pass = runs.sum(np.broadcast_to(passed, a.shape))
    n_fail = n - n_pass
    a_pass, a_fail = runs.sum(a * resolved), runs.sum(a * ~resolved)
    out = {"resolve": _over(a_pass - _over(n_pass, n) * (a_pass + a_fail), n)}
    for name, values in (("minutes", minutes), ("calls", calls)):
        x = values.astype(np.float64)
        mean_pass = _over(runs.sum(x * passed), n_pass)
        mean_fail = _over(runs.sum(x * failed), n_fail)
        mean = _over(mean_pass * n_pass + mean_fail * n_fail, n)
        ax_pass, ax_fail = runs.sum(a * x * resolved), runs.sum(a * x * ~resolved)
        out[f"{name}_pass"] = _over(ax_pass - mean_pass * a_pass, n)
        out[f"{name}_fail"] = _over(ax_fail - mean_fail * a_fail, n)
        out[f"{name}_between"] = _over((mean_pass - mean) * a_pass + (mean_fail - mean) * a_fail, n)
    return out


def length_edges(medians: np.ndarray) -> tuple[float, float]:
    """The tercile edges of the groups' median run times (linear interpolation)."""
    if not len(medians):
        return (0.0, 0.0)
    lo, hi = np.quantile(medians, [1 / 3, 2 / 3])
    return float(lo), float(hi)


def length_bucket(medians: np.ndarray, edges: tuple[float, float]) -> np.ndarray:
    """0 short (median ≤ first edge), 1 medium, 2 long (median > second edge)."""
    return np.where(medians <= edges[0], 0, np.where(medians > edges[1], 2, 1))
