"""Where the forecast starts (issue 53, item 1): the behaviour of the log's first steps.

A log of many steps is the first stretch of a training run; pooled, its drifting steps are a
blend of policies that no run starts from. The forecast's starting model (each problem's effort
and success rates, the effort levels' edges, the problems' length buckets and the sample) is
built from the training rows of the first W distinct logged steps,

    W = max(min(L, 4), ceil(L / 4))        L: the log's distinct training steps,

so a log of up to 4 steps is read whole, 12 steps start from their first 4, and 48 from their
first 12: at least 4 steps of groups for a stable start, and little drift inside the window (a
quarter of the run). The window stands for the policy at its middle step, (W − 1) / 2; the fit
(`fit.py`) aligns the simulated steps with the logged ones from there, and the horizon T counts
from the start. A log and its first W steps read alone start alike wherever the slice's own
window is itself (W ≤ 4: logs of up to 16 steps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from replay_cli.maths.problems import GroupLevels

MIN_START = 4
"""A log of up to this many steps is read whole."""


def start_steps(distinct: int) -> int:
    """W: the logged steps the start is built from, of `distinct` logged steps."""
    return max(min(distinct, MIN_START), math.ceil(distinct / 4))


def logged_steps(groups: Sequence[GroupLevels]) -> np.ndarray:
    """The log's distinct training steps, sorted (empty where the groups carry none)."""
    steps = [g.step for g in groups if g.step is not None and len(g.step)]
    return np.unique(np.concatenate(steps)) if steps else np.zeros(0, np.int64)


def step_rank(groups: Sequence[GroupLevels]) -> list[np.ndarray]:
    """Per chunk, each group's rank among the log's distinct steps (0: the first)."""
    steps = logged_steps(groups)
    return [
        np.searchsorted(steps, g.step) if g.step is not None else np.zeros(len(g.bucket), int)
        for g in groups
    ]


def _sliced(g: GroupLevels, keep: np.ndarray) -> GroupLevels:
    """The groups `keep` (a mask) of a chunk, with their kept rows renumbered."""
    rows = g.rows
    if rows is not None:
        new = np.cumsum(keep) - 1
        mine = keep[rows["group"]]
        rows = {k: v[mine] for k, v in rows.items()}
        rows["group"] = new[rows["group"]]
    return replace(
        g,
        count=g.count[keep],
        success=g.success[keep],
        minutes=g.minutes[keep],
        bucket=g.bucket[keep],
        problem=None if g.problem is None else g.problem.filter(keep),
        seeds=None if g.seeds is None else g.seeds[keep],
        rows=rows,
        step=None if g.step is None else g.step[keep],
    )


def start_groups(groups: Sequence[GroupLevels]) -> tuple[list[GroupLevels], int, int]:
    """(the start window's groups, W, L): the groups of the log's first W distinct steps (all
    of them where L ≤ W); a chunk left without groups is dropped."""
    distinct = len(logged_steps(groups))
    width = start_steps(distinct) if distinct else 0
    if distinct <= width:
        return list(groups), width, distinct
    ranks = step_rank(groups)
    out = [_sliced(g, r < width) for g, r in zip(groups, ranks, strict=True)]
    return [g for g in out if len(g.bucket)] or list(groups[:1]), width, distinct
