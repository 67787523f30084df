"""The long forecast table: per config, budget, step, bucket and metric, the mean, low and high
over seeds of a run's trajectory, its shaping-off twin's and their ratio or difference."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.config import ReplayConfig
from replay_cli.forecast.world import BUCKETS, METRICS


def _ratios(run: np.ndarray, off: np.ndarray) -> dict[str, np.ndarray]:
    """Per seed and bucket: the resolve rate against shaping off's (ratio), and the minutes and
    giving up against shaping off's (differences)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = {C.vs_off(C.T_RESOLVE): run[..., 0] / off[..., 0]}
        return ratio | {C.vs_off(n): run[..., i] - off[..., i] for i, n in enumerate(METRICS) if i}


def table(
    sim: np.ndarray, configs: Sequence[ReplayConfig], twin_of: list[int], budget: float
) -> pl.DataFrame:
    """The long forecast table of one budget: mean, low, high over seeds."""
    frames = []
    steps = sim.shape[0]
    for k, cfg in enumerate(configs):
        own, off = sim[:, k], sim[:, twin_of[k]]
        series = {name: own[..., i] for i, name in enumerate(METRICS)}
        series |= {C.off(name): off[..., i] for i, name in enumerate(METRICS)}
        series |= _ratios(own, off)
        names = list(series)
        values = np.stack([series[n] for n in names])  # (metrics, steps, seeds, buckets)
        with np.errstate(all="ignore"):
            stats = [values.mean(2), values.min(2), values.max(2)]  # (metrics, steps, buckets)
        shape = stats[0].shape
        frames.append(
            pl.DataFrame(
                {
                    S.CONFIG_ID: np.full(values[..., 0, :].size, cfg.config_id),
                    "budget": np.full(values[..., 0, :].size, budget),
                    "step": np.broadcast_to(np.arange(steps)[None, :, None], shape).ravel(),
                    "bucket": np.broadcast_to(np.array(BUCKETS)[None, None, :], shape).ravel(),
                    "metric": np.broadcast_to(np.array(names)[:, None, None], shape).ravel(),
                    "mean": stats[0].ravel(),
                    "low": stats[1].ravel(),
                    "high": stats[2].ravel(),
                }
            )
        )
    frame = pl.concat(frames)
    return frame.with_columns(pl.col("mean", "low", "high").fill_nan(None))
