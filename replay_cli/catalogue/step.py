"""The first step's direction (engine/first_step.py; a diagnostic, not read by the rule): each
metric's constant is its entry, and the columns its variants add (scopes, shaping off's twin,
interval ends)."""

from __future__ import annotations

from collections.abc import Iterator

from replay_cli.catalogue.metric import LONG, Family, Metric, bounds_of, scoped, scopes_of, twin_off

STEP = Family(
    "the first step's direction (engine/first_step.py; a diagnostic, not read by the rule)",
    "also `@short`, `@medium`, `@long`; `_off`: shaping off's",
)
RESOLVE = STEP(
    "step/resolve",
    "resolve Δ/step",
    "change of the resolve probability after one step of the fixed budget",
    "points_per_step",
    "higher",
)
RESOLVE_EFFORT = STEP(
    "step/resolve_effort",
    "from effort",
    "the part of step/resolve that comes from moving effort between run-time levels (the "
    "rest is resolving more at the same effort)",
    "points_per_step",
)
SOLVE_MINUTES = STEP(
    "step/solve_minutes",
    "solve min Δ",
    "change of the mean minutes of a resolved rollout after one step",
    "minutes_per_step",
    "lower",
)
FAIL_MINUTES = STEP(
    "step/fail_minutes",
    "fail min Δ",
    "change of the mean minutes of a failed rollout after one step",
    "minutes_per_step",
)

STEP_VS_OFF = Family(
    "against shaping off", "also `@short`, `@medium`, `@long`; `_low`, `_high`: interval ends"
)
RESOLVE_VS_OFF = STEP_VS_OFF(
    "step/resolve_vs_off",
    "first step: resolve vs off",
    "the first step's resolve change as a share of shaping off's (a diagnostic of the "
    "step's direction, not read by the rule; null where shaping off makes none)",
    "ratio",
    "higher",
    short="1st step",
)
SOLVE_VS_OFF = STEP_VS_OFF(
    "step/solve_minutes_vs_off",
    "first step: solve Δ vs off",
    "the first step's change of a success's mean minutes minus shaping off's (negative: "
    "shaping makes successes faster)",
    "minutes_per_step",
    "lower",
    short="1st solve Δ",
)
FAIL_VS_OFF = STEP_VS_OFF(
    "step/fail_minutes_vs_off",
    "first step: fail Δ vs off",
    "the first step's change of a failure's mean minutes minus shaping off's (negative: "
    "failures are taught to give up sooner)",
    "minutes_per_step",
    short="1st fail Δ",
)

RESOLVE_VS_OFF_LONG = scoped(RESOLVE_VS_OFF, LONG)
SOLVE_VS_OFF_LONG = scoped(SOLVE_VS_OFF, LONG)
FAIL_VS_OFF_LONG = scoped(FAIL_VS_OFF, LONG)


def entries() -> Iterator[Metric]:
    """Every column of the family, in the catalogue's order."""
    for m in STEP:
        for s in scopes_of(m):
            yield s
            yield twin_off(s)
    for m in STEP_VS_OFF:
        for s in scopes_of(m):
            yield s
            yield from bounds_of(s)
