"""The measure's numbers from weighted sums over problems: the point estimate (every problem
weighted by its groups) and the paired bootstrap (Poisson(1) resample weights per problem, the same
for every config and its shaping-off twin), so an interval costs matrix products, not replays.

A resample reweights the problems; its step keeps the budget: the config's step is rescaled by s =
sqrt(δ / resampled mean KL) (exact to second order, the step being the one solved on all problems),
and every quantity is a ratio of reweighted sums."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from replay_cli.maths.effort import EffortModel
from replay_cli.maths.effort_step import Steps
from replay_cli.maths.scopes import SCOPES

BLOCK = 1 << 16
"""Problems whose resample weights are drawn and multiplied at a time (bounded memory)."""
BASE = ("w", "p0", "pm0", "f0", "fm0")
PER_CONFIG = ("d_p", "d_pm", "d_fm", "d_pe", "kl")


@dataclass(frozen=True)
class Sums:
    """Weighted sums per (resample, scope): the base's (B, scopes) and each config's (B, C,
    scopes); scope 0 is every problem, 1-3 the length buckets."""

    base: dict[str, np.ndarray]
    config: dict[str, np.ndarray]


def _columns(model: EffortModel, steps: Steps) -> tuple[np.ndarray, int]:
    """(problems, 5 + 5 C) float64 columns of every summed quantity (`BASE`, then each of
    `PER_CONFIG` per config), weighted by the problem's groups."""
    w, before = model.weight, model.outcomes
    base = [w, *(w * before[name] for name in ("p", "pm", "f", "fm"))]
    per = [w * getattr(steps, name) for name in PER_CONFIG]  # each (C, P)
    configs = per[0].shape[0]
    stacked = np.stack(per).reshape(len(PER_CONFIG) * configs, -1)  # (5C, P), value-major
    return np.concatenate([np.stack(base), stacked]).T, configs


def sums(
    model: EffortModel, steps: Steps, resamples: int = 0, seed: int = 0
) -> tuple[Sums, Sums | None]:
    """The point estimate's sums and, with `resamples`, the bootstrap's (Poisson(1) weights
    drawn per block of problems from `seed`, so any input size fits in memory)."""
    x, configs = _columns(model, steps)
    bucket = model.bucket
    point = np.zeros((1, len(SCOPES), x.shape[1]))
    boot = np.zeros((resamples, len(SCOPES), x.shape[1])) if resamples else None
    for start in range(0, len(bucket), BLOCK):
        part = slice(start, start + BLOCK)
        xb, bb = x[part], bucket[part]
        weights = None
        if resamples:
            rng = np.random.default_rng([seed, start // BLOCK])
            weights = rng.poisson(1.0, size=(resamples, len(bb))).astype(np.float64)
        for k, scope in enumerate(SCOPES[1:], start=1):  # every problem: the buckets' sum
            mine = bb == scope.bucket
            xs = xb[mine]
            point[0, k] += xs.sum(0)
            if weights is not None:
                boot[:, k] += weights[:, mine] @ xs
    point[:, 0] = point[:, 1:].sum(1)
    if boot is not None:
        boot[:, 0] = boot[:, 1:].sum(1)
    return _split(point, configs), None if boot is None else _split(boot, configs)


def _split(total: np.ndarray, configs: int) -> Sums:
    base = {name: total[:, :, i] for i, name in enumerate(BASE)}
    rest = total[:, :, len(BASE) :].reshape(total.shape[0], 4, len(PER_CONFIG), configs)
    config = {name: rest[:, :, i, :].transpose(0, 2, 1) for i, name in enumerate(PER_CONFIG)}
    return Sums(base, config)


def measures(s: Sums, budget: float, point: bool) -> dict[str, np.ndarray]:
    """Per (resample, config, scope): the resolve change per step and its effort part, and the
    change of the mean minutes of successes and of failures per step. The point estimate keeps
    the solved step (s = 1); a resample rescales it to its own mean KL."""
    b, c = s.base, s.config
    w = b["w"][:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        if point:
            scale = np.ones_like(c["kl"][:, :, :1])
        else:
            mean_kl = c["kl"][:, :, :1] / w[:, :, :1]
            scale = np.sqrt(np.where(mean_kl > 0, budget / mean_kl, 0.0))
        d_p, d_pm, d_fm = scale * c["d_p"], scale * c["d_pm"], scale * c["d_fm"]
        p0, pm0 = b["p0"][:, None, :], b["pm0"][:, None, :]
        f0, fm0 = b["f0"][:, None, :], b["fm0"][:, None, :]
        solve = (pm0 + d_pm) / (p0 + d_p) - pm0 / p0
        fail = (fm0 + d_fm) / (f0 - d_p) - fm0 / f0
        return {
            "resolve": d_p / w,
            "resolve_effort": scale * c["d_pe"] / w,
            "solve_minutes": solve,
            "fail_minutes": fail,
        }


def interval(x: np.ndarray, q: float) -> np.ndarray:
    """Per config, the q-quantile of a measure over the resamples where it is defined (NaN
    where it never is): an interval end of the step measure and of the forecast's horizon."""
    x = np.where(np.isfinite(x), x, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a config whose measure is never defined
        return np.nanquantile(x, q, axis=0)


def summary_value(x: float) -> float | None:
    """A measure as a summary value: None where it is undefined (NaN)."""
    x = float(x)
    return None if not np.isfinite(x) else x
