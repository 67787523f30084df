"""The first-order pushes (engine/pushes.py; not read by the rule): each metric's constant is its
entry, and the columns its variants add (shaping off's twin, the length buckets)."""

from __future__ import annotations

from collections.abc import Iterator

from replay_cli.catalogue.metric import Family, Metric, scopes_of, twin_off

PUSHES = Family(
    "first-order pushes (not read by the rule)",
    "also `_off`; resolve, minutes_fail and minutes_pass also `@short`, `@medium`, `@long`",
)
RESOLVE_PUSH = PUSHES(
    "push/resolve",
    "resolve push",
    "first-order push toward resolving (advantage × probability per group)",
    "push",
    "higher",
)
FAIL_PUSH = PUSHES(
    "push/minutes_fail",
    "fail-time push",
    "first-order push on failures' minutes (negative: fail faster)",
    "push",
)
SOLVE_PUSH = PUSHES(
    "push/minutes_pass",
    "solve-time push",
    "first-order push on successes' minutes (negative: solve faster)",
    "push",
    "lower",
)
BETWEEN_PUSH = PUSHES(
    "push/minutes_between",
    "between push",
    "first-order push on minutes that only follows the outcome",
    "push",
)
FAIL_CALLS_PUSH = PUSHES(
    "push/calls_fail", "fail-calls push", "first-order push on failures' tool calls", "push"
)
SOLVE_CALLS_PUSH = PUSHES(
    "push/calls_pass", "solve-calls push", "first-order push on successes' tool calls", "push"
)
BETWEEN_CALLS_PUSH = PUSHES(
    "push/calls_between",
    "between calls push",
    "first-order push on calls that only follows the outcome",
    "push",
)
RESOLVE_PUSH_VS_OFF = PUSHES(
    "push/resolve_vs_off",
    "first-order push: resolve vs off",
    "first-order resolve push as a share of shaping off's (a push, not a resolve rate: not what "
    "the rule reads, and it grows with the update's size; can exceed 100%)",
    "ratio",
)

PUSH_NAMES = {m.name.partition("/")[2]: m.name for m in PUSHES if m.name != RESOLVE_PUSH_VS_OFF}
"""Every push by its key in the engine (`resolve`, `minutes_fail`, ...), in report order."""
SCOPED_PUSHES = (RESOLVE_PUSH, FAIL_PUSH, SOLVE_PUSH)
"""The pushes also reported per problem-length bucket (`@short`, `@medium`, `@long`)."""


def entries() -> Iterator[Metric]:
    """Every column of the family, in the catalogue's order."""
    for m in PUSHES:
        if m.name != RESOLVE_PUSH_VS_OFF:
            yield m
            yield twin_off(m)
    for m in PUSHES:
        if m.name in SCOPED_PUSHES:
            for s in list(scopes_of(m))[1:]:
                yield s
                yield twin_off(s)
    yield from scopes_of(PUSHES[-1])  # RESOLVE_PUSH_VS_OFF, scoped only
