"""The trainer's time_efficiency/* metrics (NeMo-RL's names, then the internal implementation's
for the same, spec §3.3 item 5): each metric's constant is its entry."""

from __future__ import annotations

from replay_cli.catalogue.metric import Family

TRAINER = Family("trainer metrics (NeMo-RL's names)")
MINUTES_MEAN = TRAINER(
    "time_efficiency/minutes/mean", "minutes", "mean agent minutes (trainer metric)", "minutes"
)
MINUTES_MAX = TRAINER(
    "time_efficiency/minutes/max",
    "minutes max",
    "largest agent minutes (trainer metric)",
    "minutes",
)
DEDUCTION_MEAN = TRAINER(
    "time_efficiency/deduction/mean", "deduction", "mean deduction (trainer metric)", "reward"
)
DEDUCTION_MAX = TRAINER(
    "time_efficiency/deduction/max", "deduction max", "largest deduction (trainer metric)", "reward"
)
CALLS_MEAN = TRAINER(
    "time_efficiency/calls/mean", "calls", "mean tool calls (trainer metric)", "calls"
)
BONUS_MEAN = TRAINER(
    "time_efficiency/bonus/mean", "bonus", "mean call bonus (trainer metric)", "reward"
)
SECONDS_PER_CALL = TRAINER(
    "time_efficiency/seconds_per_call", "s per call", "agent seconds per tool call (trainer metric)"
)
BONUS_SATURATED = TRAINER(
    "time_efficiency/bonus_saturated_frac",
    "bonus saturated",
    "share of rows at the bonus's cap (trainer metric)",
    "share",
)
FLOORED = TRAINER(
    "time_efficiency/floored_frac",
    "floored",
    "share of rows clamped at the floor (trainer metric)",
    "share",
)
GROUP_HAS_SIGNAL = TRAINER(
    "time_efficiency/group_has_signal",
    "group has signal",
    "share of groups whose deductions differ (trainer metric)",
    "share",
)


def _internal(pr: str) -> str:
    """Enters the internal implementation's name of a PR metric (`minutes/mean` as
    `minutes_mean`), the same quantity, and returns it."""
    m = next(m for m in TRAINER if m.name == pr)
    base, _, statistic = pr.rpartition("/")
    description = m.description.replace("(trainer metric)", "(internal name)")
    return TRAINER(f"{base}_{statistic}", f"{m.label} (internal)", description, m.unit)


INTERNAL_NAMES = {
    _internal(pr): pr for pr in (MINUTES_MEAN, MINUTES_MAX, DEDUCTION_MEAN, DEDUCTION_MAX)
}
"""The internal implementation's metric names (spec §3.3 item 5) and the PR's for the same."""
