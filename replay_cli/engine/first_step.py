"""The first step's direction, a diagnostic the rule does not read: its summary columns and
bootstrap intervals from a replay's gathered levels (engine/effort_levels.py), one step of fixed
size (maths/effort_step.py) per config beside its shaping-off twin's, per scope (all problems,
then each length bucket); docs/report.md, "The first step, as reported", lists the columns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

import numpy as np

from replay_cli import catalogue as C
from replay_cli.config import EffortSettings
from replay_cli.engine.effort_levels import ConfigLevels
from replay_cli.maths.bootstrap import interval, measures, summary_value, sums
from replay_cli.maths.effort import Direction, EffortModel
from replay_cli.maths.effort_step import Steps, take_steps
from replay_cli.maths.problems import Problems
from replay_cli.maths.scopes import SCOPES

BLOCK_VALUES = 1 << 18
"""Values of a block's (configs, problems, levels) arrays: 2 MiB each, so that numpy's many
temporaries stay in cache and in memory the allocator reuses (larger ones are mapped and zeroed
afresh each time: at 625k problems, 8 configs at once took 2.4x as long as one at a time)."""
MAX_BLOCK = 8
"""Configs computed together at most (each evaluation of the step is a few dozen numpy calls)."""


def config_block(rows: int, levels: int) -> int:
    """Configs whose steps are computed together over `rows` problems (or groups): a config's
    results do not depend on the others of its block, so this sets only the speed."""
    return max(1, min(MAX_BLOCK, BLOCK_VALUES // max(rows * levels, 1)))


RESOLVE_EPS = 1e-12
"""A shaping-off resolve change at or below this has nothing to keep: the ratio is null."""
INTERVALS = (C.RESOLVE_VS_OFF, C.RESOLVE_VS_OFF_LONG, C.SOLVE_VS_OFF, C.FAIL_VS_OFF)
INTERVALS += (C.SOLVE_VS_OFF_LONG, C.FAIL_VS_OFF_LONG)
"""The measures given an interval in the summary (`_low`, `_high`)."""


def _concat_steps(parts: list[Steps]) -> Steps:
    def joined(name: str) -> object:
        if name == "new":
            return {k: np.concatenate([p.new[k] for p in parts]) for k in parts[0].new}
        return np.concatenate([getattr(p, name) for p in parts])

    return Steps(**{f.name: joined(f.name) for f in fields(Steps)})


NAMES = {m.name.partition("/")[2]: m.name for m in C.STEP}
"""Each measure of the step (`bootstrap.measures`' keys: `resolve`, ...) and its summary column."""
MEASURES = tuple(NAMES)
VS_OFF = {"solve_minutes": C.SOLVE_VS_OFF, "fail_minutes": C.FAIL_VS_OFF}
"""The minute measures also taken against shaping off's (a difference), and that column."""


def point_measures(model: EffortModel, steps: Steps) -> dict[str, np.ndarray]:
    """The point estimate per (1, config, scope), as `bootstrap.measures` lays it out, from the
    problems' sums before and after the step taken directly (no base + change)."""
    w = model.weight
    out = {name: np.zeros((1, len(steps.eta), len(SCOPES))) for name in MEASURES}
    for scope, where in enumerate(SCOPES):
        mine = where.weights(w, model.bucket)
        total = mine.sum()

        def summed(x: np.ndarray, mine: np.ndarray = mine) -> np.ndarray:
            return (x * mine).sum(-1)

        with np.errstate(divide="ignore", invalid="ignore"):
            out["resolve"][0, :, scope] = summed(steps.d_p) / total
            out["resolve_effort"][0, :, scope] = summed(steps.d_pe) / total
            new, old = steps.new, model.outcomes
            for name, (m, p) in {"solve_minutes": ("pm", "p"), "fail_minutes": ("fm", "f")}.items():
                change = summed(new[m]) / summed(new[p]) - summed(old[m]) / summed(old[p])
                out[name][0, :, scope] = change
    return out


def _steps(model: EffortModel, a: np.ndarray, ay: np.ndarray, budget: float) -> Steps:
    """take_steps over blocks of configs (bounded memory)."""
    block = config_block(*model.pi.shape)
    return _concat_steps(
        [
            take_steps(model, a[i : i + block], ay[i : i + block], budget)
            for i in range(0, len(a), block)
        ]
    )


def _time_only_share(
    problems: Problems, gather: Callable[[str, str], np.ndarray], ids: list[str]
) -> np.ndarray:
    """Per config, the share of the step's (second-order) KL spent in groups where shaping off
    has no signal, each group's own direction (its own advantages, not its problem's mean) taken
    on its problem's model; groups stay in the replay's order throughout, so a problem seen at
    several steps, or an `instance_id` that pools nothing, pairs each group with its own row."""
    m = problems.model
    at = problems.of_group
    group_model = EffortModel(m.pi[at], m.p[at], m.m[at], m.bucket[at], np.ones(len(at)))
    out = []
    size = config_block(*group_model.pi.shape)
    for i in range(0, len(ids), size):
        block = ids[i : i + size]
        a = np.stack([gather("a", c) for c in block])
        ay = np.stack([gather("ay", c) for c in block])
        tied = np.stack([gather("off_tied", c) for c in block])
        q = Direction.of(group_model, a, ay)
        energy = q.second_order_kl(group_model)
        total = energy.sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(np.where(total > 0, (energy * tied).sum(-1) / total, 0.0))
    return np.concatenate(out) if out else np.zeros(0)


def _ratio(on: np.ndarray, off: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(off > RESOLVE_EPS, on / off, np.nan)


def _named(values: dict[str, np.ndarray], off: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every measure per (resample, config) under its summary name."""
    out = {}
    for k, where in enumerate(SCOPES):
        scope = where.suffix
        for name, v in values.items():
            out[C.scoped(NAMES[name], scope)] = v[..., k]
            out[C.off(NAMES[name], scope)] = off[name][..., k]
        out[C.scoped(C.RESOLVE_VS_OFF, scope)] = _ratio(
            values["resolve"][..., k], off["resolve"][..., k]
        )
        for name, vs_off in VS_OFF.items():
            out[C.scoped(vs_off, scope)] = values[name][..., k] - off[name][..., k]
    return out


def diagnose(
    problems: Problems | None, per_config: dict[str, list[ConfigLevels]], settings: EffortSettings
) -> dict[str, dict[str, float | None]]:
    """Per config id, the first-step diagnostic's summary columns; `problems`: the input's (None:
    it has none)."""
    ids = list(per_config)
    if not ids or problems is None:
        return {cid: {} for cid in ids}
    model = problems.model

    def gather(name: str, cid: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in per_config[cid]])

    a = np.stack([problems.mean(gather("a", c)) for c in ids])
    ay = np.stack([problems.mean(gather("ay", c)) for c in ids])
    off_of: dict[object, int] = {}
    for cid in ids:
        off_of.setdefault(per_config[cid][0].off_key, len(off_of))
    first = {key: next(c for c in ids if per_config[c][0].off_key == key) for key in off_of}
    a_off = np.stack([problems.mean(gather("a_off", first[k])) for k in off_of])
    ay_off = np.stack([problems.mean(gather("ay_off", first[k])) for k in off_of])
    budget = settings.step_kl
    steps = _concat_steps([_steps(model, a, ay, budget), _steps(model, a_off, ay_off, budget)])
    twin = np.array([off_of[per_config[c][0].off_key] for c in ids]) + len(ids)
    del a, ay, a_off, ay_off  # (configs, problems, levels) each: freed before the sums
    share = _time_only_share(problems, gather, ids)

    _, boot_sums = sums(model, steps, settings.resamples, settings.seed)
    point = point_measures(model, steps)
    values = {k: v[0, : len(ids)] for k, v in point.items()}
    off = {k: v[0, twin] for k, v in point.items()}
    named = _named(values, off)
    w = model.weight
    exact = (steps.d_p[: len(ids)] * w).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.abs(exact - (steps.first_p[: len(ids)] * w).sum(-1)) / np.abs(exact)

    columns: dict[str, dict[str, float | None]] = {}
    if boot_sums is not None:
        boot = measures(boot_sums, budget, point=False)
        resampled = _named(
            {k: v[:, : len(ids)] for k, v in boot.items()}, {k: v[:, twin] for k, v in boot.items()}
        )
        ends = {"low": (1 - settings.interval) / 2, "high": (1 + settings.interval) / 2}
        named |= {
            C.bound(name, end): interval(resampled[name], q)
            for name in INTERVALS
            for end, q in ends.items()
        }
    for k, cid in enumerate(ids):
        row: dict[str, float | None] = {name: summary_value(v[k]) for name, v in named.items()}
        row[C.TIME_ONLY_SHARE] = float(share[k])
        row[C.FIRST_ORDER_GAP] = summary_value(gap[k])
        row[C.ETA] = float(steps.eta[k])
        row[C.KL_BUDGET] = budget
        columns[cid] = row
    return columns
