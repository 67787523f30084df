"""One step of fixed size on the effort model (maths/effort.py) per config: what it does to each
problem's resolve probability and to the minutes of its successes and failures. The first-step
diagnostic (engine/first_step.py) and its bootstrap (maths/bootstrap.py) read it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay_cli.maths.effort import (
    Direction,
    EffortModel,
    kl,
    outcome_sums,
    solve_eta,
    stepped,
    success,
)
from replay_cli.maths.level_axis import level_sum


@dataclass(frozen=True)
class Steps:
    """One step per config (or shaping-off twin) on every problem: per problem the change of the
    resolve probability P, of the minutes-weighted success and failure probabilities PM and FM,
    of the resolve probability with only the effort moved (Pe), the step's KL, and its
    first-order P (failures summed directly: where they are rare, M − PM would cancel)."""

    kl: np.ndarray
    d_p: np.ndarray
    d_pm: np.ndarray
    d_fm: np.ndarray
    d_pe: np.ndarray
    first_p: np.ndarray
    eta: np.ndarray
    new: dict[str, np.ndarray]
    """Per problem after the step: P, PM, F (failure probability) and FM, summed directly (the
    point estimate's ratios then need no difference of nearly equal sums)."""


def take_steps(model: EffortModel, a: np.ndarray, ay: np.ndarray, budget: float) -> Steps:
    """The fixed-KL step of each config (rows of a, ay: (configs, problems, levels))."""
    direction = Direction.of(model, a, ay)
    eta = solve_eta(model, direction, budget)
    pi2, z2 = stepped(model, direction, eta)
    p2 = np.where(eta[:, None, None] == 0, model.p, success(z2))  # no step: p as it was
    pi, p = model.pi, model.p
    old = model.outcomes
    mean_d = level_sum(pi * direction.d, keepdims=True)
    first = level_sum(pi * (direction.d - mean_d) * p) + level_sum(pi * p * (1 - p) * direction.e)
    new = outcome_sums(pi2, p2, model.m)
    return Steps(
        kl=kl(model, pi2, z2),
        d_p=new["p"] - old["p"],
        d_pm=new["pm"] - old["pm"],
        d_fm=new["fm"] - old["fm"],
        d_pe=level_sum(pi2 * p) - old["p"],
        first_p=eta[:, None] * first,
        eta=eta,
        new=new,
    )
