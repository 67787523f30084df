"""The outcome at the horizon T: each config against its shaping-off twin over all problems and
on long problems, with paired-bootstrap intervals over problems (`horizon`), and the resample
table the verdict's confidence reads (`resample_frame`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.config import EffortSettings, ReplayConfig
from replay_cli.forecast.world import World
from replay_cli.maths.bootstrap import interval, summary_value
from replay_cli.maths.effort import outcome_sums
from replay_cli.maths.scopes import ALL, LONG

REFUSED = C.FORECAST_REFUSED
HORIZON_SCOPES = (ALL, LONG)
"""The horizon's scopes: all problems, and the long bucket."""
RESAMPLED = (
    C.F_RESOLVE_VS_OFF,
    C.F_RESOLVE_VS_OFF_LONG,
    C.F_SOLVE_VS_OFF,
)
"""The horizon's numbers the resample table holds (what the rule reads)."""
INTERVALS = C.FORECAST_INTERVALS
"""The horizon's numbers given an interval (`_low`, `_high`), in every scope."""
RULED = (*INTERVALS, *(C.bound(n, end) for n in INTERVALS for end in ("low", "high")))
"""What the checks re-read at half and twice the budget and the steps (`catalogue.CHECKS`)."""


def horizon(
    world: World,
    last: np.ndarray,
    twin_of: list[int],
    settings: EffortSettings,
    own_of: list[int] | None = None,
) -> tuple[dict[str, list[float | None]], dict[str, np.ndarray]]:
    """The outcome after T steps per config, against its shaping-off twin, over all problems and
    on long problems: the resolve rate and its ratio to shaping off's, the mean minutes of a
    resolved and of a failed rollout and their differences to shaping off's; each problem
    counted with its weight, the seeds pooled. Intervals (`_low`, `_high`, at
    `settings.interval`) from a paired bootstrap over problems: each problem of the input gets
    one Poisson(1) weight per resample, the same for every config, twin and seed that drew it.
    With `own_of` (each config's own shaping-off twin, where the twin it is measured against is
    the sweep's one baseline), that twin's resolve rate where it differs (`resolve_own_off`; a setting that does not move
    shaping off's resolve rate leaves it null).
    Returns the point values (name -> per config) and the resampled `RESAMPLED` (name ->
    (resamples, configs))."""
    sums = outcome_sums(last, world.rate[None], world.m[None])  # each (runs, S, P)
    flat = {k: v.reshape(v.shape[0], -1) for k, v in sums.items()}
    problem, unit = np.unique(world.index.ravel(), return_inverse=True)
    rng = np.random.default_rng([settings.seed, 17])
    draws = rng.poisson(1.0, size=(settings.resamples, len(problem))).astype(np.float64)
    weights = np.concatenate([np.ones((1, len(problem))), draws])[:, unit]  # (1 + B, S * P)
    configs = np.arange(len(twin_of))
    twins = np.asarray(twin_of, dtype=np.int64)
    point: dict[str, list[float | None]] = {}
    boot: dict[str, np.ndarray] = {}
    lo_q, hi_q = (1 - settings.interval) / 2, (1 + settings.interval) / 2
    for where in HORIZON_SCOPES:
        scope = where.suffix
        mine = where.weights(world.weight.ravel(), world.bucket.ravel())
        w = weights * mine  # (1 + B, S * P)
        total = w.sum(-1)[:, None]
        summed = {k: w @ v.T for k, v in flat.items()}  # (1 + B, runs)
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = summed["p"] / total
            solve = summed["pm"] / summed["p"]
            fail = summed["fm"] / summed["f"]
            values = {
                C.F_RESOLVE: rate[:, configs],
                C.F_RESOLVE_OFF: rate[:, twins],
                C.F_RESOLVE_VS_OFF: summed["p"][:, configs] / summed["p"][:, twins],
                C.F_SOLVE: solve[:, configs],
                C.F_SOLVE_OFF: solve[:, twins],
                C.F_SOLVE_VS_OFF: solve[:, configs] - solve[:, twins],
                C.F_FAIL: fail[:, configs],
                C.F_FAIL_OFF: fail[:, twins],
                C.F_FAIL_VS_OFF: fail[:, configs] - fail[:, twins],
            }
            low = (last[..., 0].reshape(len(last), -1) * mine).sum(-1) / mine.sum()
        point[C.scoped(C.F_GIVE_UP_VS_OFF, scope)] = [
            summary_value(x) for x in low[configs] - low[twins]
        ]
        if own_of is not None:
            point[C.scoped(C.F_RESOLVE_OWN_OFF, scope)] = [
                None if abs(rate[0, o] - rate[0, t]) <= 1e-9 else summary_value(rate[0, o])
                for o, t in zip(own_of, twin_of, strict=True)
            ]
        for name, v in values.items():
            point[C.scoped(name, scope)] = [summary_value(x) for x in v[0]]
            if C.scoped(name, scope) in RESAMPLED:
                boot[C.scoped(name, scope)] = v[1:]
            if name in INTERVALS and settings.resamples:
                low, high = interval(v[1:], lo_q), interval(v[1:], hi_q)
                point[C.bound(name, "low", scope)] = [summary_value(x) for x in low]
                point[C.bound(name, "high", scope)] = [summary_value(x) for x in high]
    return point, boot


def resample_frame(configs: Sequence[ReplayConfig], boot: dict[str, np.ndarray]) -> pl.DataFrame:
    """The resample table: config_id, resample, the `RESAMPLED` columns."""
    b = next(iter(boot.values())).shape[0]
    return pl.DataFrame(
        {
            S.CONFIG_ID: np.repeat(np.array([c.config_id for c in configs]), b).tolist(),
            "resample": np.tile(np.arange(b), len(configs)),
            **{name: boot[name].T.reshape(-1) for name in RESAMPLED},
        }
    )
