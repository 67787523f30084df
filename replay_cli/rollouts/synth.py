"""Seeded synthetic SWE-agent rollouts shaped like NeMo-Gym `swe_agents` logs (vectorised numpy)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import polars as pl

from replay_cli import schema as S

AGENT_TIMEOUT_S = 1800.0
QUIT_EARLY_MAX = 0.8
"""The share of failures that give up early on the longest problems (half that at 9 minutes)."""
HOPELESS, EASY, MEDIUM = (0.3, 12.0), (12.0, 1.0), (1.2, 1.2)
"""Beta distributions of the solve rate of hopeless, easy and in-between tasks."""
KIND_SCALE = (0.9, 0.6, 1.5)
"""Run-time scale of hopeless, easy and in-between tasks relative to 9 minutes."""


def synth_rollouts(
    *,
    steps: int = 8,
    groups_per_step: int = 32,
    group_size: int = 8,
    seed: int = 0,
    agent_timeout: float = AGENT_TIMEOUT_S,
    missing_run_time_frac: float = 0.005,
    validation_groups: int = 0,
    problems: int = 0,
    success_drift: float = 0.0,
    effort_drift: float = 0.0,
) -> pl.DataFrame:
    """Rollouts with per-task difficulty, log-normal run times capped at the agent timeout (slow
    successes and early-quitting failures on long problems), timeouts and
    resolved-but-max-iterations rows masked, and call counts tied to run time.

    With `problems`, the first steps of a shaping-off training run instead of independent draws:

    * problems: a fixed pool of this many problems, named in an `instance_id` column ("synth-0042");
      group g (over all steps) samples problem g mod `problems`: with `problems == groups_per_step`
      every step logs every problem (0: each group a fresh problem, no `instance_id`).
    * success_drift: the logit added to a problem's success per step, times the chance that a
      group of it splits (GRPO learns only from split groups: hopeless and easy problems stay).
    * effort_drift: per step, the fraction by which a success on a long problem (the pool's
      longest third) takes longer (effort grows where it pays); failures keep their pace.
    """
    rng = np.random.default_rng(seed)
    n_groups = steps * groups_per_step
    pool = problems or n_groups
    p_solve, task_scale = _problems(rng, pool)
    n = n_groups * group_size
    group = np.repeat(np.arange(n_groups), group_size)
    problem = group % pool
    trained = group // groups_per_step  # steps of training before this group's step
    resolved = rng.random(n) < _success(p_solve, success_drift, group_size, problem, trained)
    # As in real SWE runs: a success takes about the task's scale (slow on long problems); a
    # failure either gives up early or wanders until the agent timeout, and the longer the
    # problem, the more failures give up early.
    scale = task_scale[problem]
    quit_early = rng.random(n) < QUIT_EARLY_MAX / (1.0 + (540.0 / scale) ** 3)
    failure_pace = np.where(quit_early, 0.3, 1.8)
    success_pace = 1.0
    if effort_drift:
        long = task_scale > np.quantile(task_scale, 2 / 3)
        success_pace = 1.0 + effort_drift * trained * long[problem]
    run_time = scale * np.where(resolved, success_pace, failure_pace) * rng.lognormal(0.0, 0.45, n)
    timed_out = run_time >= agent_timeout
    run_time = np.minimum(run_time, agent_timeout + rng.uniform(0.0, 30.0, n) * timed_out)
    resolved &= ~timed_out
    max_iterations = resolved & (rng.random(n) < 0.03)
    calls = rng.poisson(np.maximum(run_time / 18.0, 1.0)).astype(np.int64)
    missing = rng.random(n) < missing_run_time_frac

    frame = pl.DataFrame(
        {
            S.STEP: (group // groups_per_step + 1).astype(np.int64),
            S.GROUP_ID: group.astype(np.int64),
            S.ROLLOUT_INDEX: np.tile(np.arange(group_size, dtype=np.int64), n_groups),
            S.REWARD: resolved.astype(np.float64),
            S.RESOLVED: resolved,
            S.RUN_TIME: np.round(run_time, 3),
            S.CALLS: calls,
            S.MASK_SAMPLE: timed_out | max_iterations,
            "agent_timed_out": timed_out,
            "agent_error_kind": pl.Series(np.where(max_iterations, "max_iteration", "")).replace(
                "", None
            ),
            S.SPLIT: np.full(n, S.SPLIT_TRAIN),
        }
    ).with_columns(
        pl.when(pl.Series(missing)).then(None).otherwise(pl.col(S.RUN_TIME)).alias(S.RUN_TIME)
    )
    if problems:
        names = np.char.add("synth-", np.char.zfill(np.arange(pool).astype(str), 4))
        frame = frame.with_columns(pl.Series(S.INSTANCE_ID, names[problem]))
    if validation_groups:
        val = _validation(steps, validation_groups, seed + 1, agent_timeout)
        frame = pl.concat([frame, val], how="diagonal")
    return frame


def _validation(steps: int, groups: int, seed: int, agent_timeout: float) -> pl.DataFrame:
    """`groups` single validation rollouts a step, independent draws (no problem named)."""
    return synth_rollouts(
        steps=steps,
        groups_per_step=groups,
        group_size=1,
        seed=seed,
        agent_timeout=agent_timeout,
        missing_run_time_frac=0.0,
    ).with_columns(
        pl.lit(S.SPLIT_VALIDATION).alias(S.SPLIT),
        (pl.col(S.GROUP_ID) + 10_000_000).alias(S.GROUP_ID),
    )


def _problems(rng: np.random.Generator, pool: int) -> tuple[np.ndarray, np.ndarray]:
    """Each problem's solve rate and run-time scale (seconds): many hopeless problems, some easy
    ones, a spread in between (where groups split), and the in-between ones are the long ones."""
    kind = rng.choice(3, size=pool, p=[0.35, 0.2, 0.45])
    p_solve = np.where(
        kind == 0,
        rng.beta(*HOPELESS, pool),
        np.where(kind == 1, rng.beta(*EASY, pool), rng.beta(*MEDIUM, pool)),
    )
    return p_solve, np.array(KIND_SCALE)[kind] * rng.lognormal(np.log(540.0), 0.45, pool)


def _success(
    p_solve: np.ndarray, drift: float, group_size: int, problem: np.ndarray, trained: np.ndarray
) -> np.ndarray:
    """Each row's success probability: its problem's logit moved by `drift` per step trained,
    times the chance that a group of `group_size` rollouts of the problem splits."""
    if not drift:
        return p_solve[problem]
    split = 1.0 - p_solve**group_size - (1.0 - p_solve) ** group_size
    logit = np.log(p_solve) - np.log1p(-p_solve)
    return 1.0 / (1.0 + np.exp(-(logit[problem] + drift * split[problem] * trained)))


STEPS_PER_BATCH = 64
"""`synth_batches` makes this many steps at a time (the first batch equals `synth_rollouts`)."""


def synth_batches(*, steps: int, seed: int = 0, **kwargs: Any) -> Iterator[pl.DataFrame]:
    """The same kind of rollouts in batches of steps, so any size fits in memory. Batch b uses seed
    `seed + 1000 * b`, with steps and group ids shifted to follow the previous batches. A pool of
    `problems` (and its drift) spans one batch: more steps with a pool are refused."""
    if kwargs.get("problems") and steps > STEPS_PER_BATCH:
        raise ValueError(f"a pool of problems spans at most {STEPS_PER_BATCH} steps")
    groups = kwargs.get("groups_per_step", 32)
    for b, first in enumerate(range(0, steps, STEPS_PER_BATCH)):
        n = min(STEPS_PER_BATCH, steps - first)
        frame = synth_rollouts(steps=n, seed=seed + 1000 * b, **kwargs)
        yield frame.with_columns(
            pl.col(S.STEP) + first,
            pl.when(pl.col(S.SPLIT) == S.SPLIT_TRAIN)
            .then(pl.col(S.GROUP_ID) + first * groups)
            .otherwise(pl.col(S.GROUP_ID) + first * kwargs.get("validation_groups", 0)),
        )
