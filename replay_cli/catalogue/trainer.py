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
MINUTES_MEAN_INTERNAL = TRAINER(
    "time_efficiency/minutes_mean",
    "minutes (internal)",
    "mean agent minutes (internal name)",
    "minutes",
)
MINUTES_MAX_INTERNAL = TRAINER(
    "time_efficiency/minutes_max",
    "minutes max (internal)",
    "largest agent minutes (internal name)",
    "minutes",
)
DEDUCTION_MEAN_INTERNAL = TRAINER(
    "time_efficiency/deduction_mean",
    "deduction (internal)",
    "mean deduction (internal name)",
    "reward",
)
DEDUCTION_MAX_INTERNAL = TRAINER(
    "time_efficiency/deduction_max",
    "deduction max (internal)",
    "largest deduction (internal name)",
    "reward",
)
INTERNAL_NAMES = {
    MINUTES_MEAN_INTERNAL: MINUTES_MEAN,
    MINUTES_MAX_INTERNAL: MINUTES_MAX,
    DEDUCTION_MEAN_INTERNAL: DEDUCTION_MEAN,
    DEDUCTION_MAX_INTERNAL: DEDUCTION_MAX,
}
"""The internal implementation's metric names (spec §3.3 item 5) and the PR's for the same."""
