"""Every metric of the report in one place: its name, a short label, what it means, its unit, how
a person reads it, which direction is better, and the hazard test that marks it.

Each name is written once, here: the engine names what it computes with these constants and
helpers, and the page, the terminal, TensorBoard, the Parquet field metadata and docs/report.md's
metric table read them from here (tests/test_catalogue.py fails when a metric name is spelled
outside this module, or twice in it). Machine tables keep fractions and seconds;
every human surface shows one unit per quantity: shares and ratios in %, times in minutes,
probability changes in percentage points, and values within a quantity's rounding as 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from replay_cli.maths.spec import EXPLOSION

Unit = Literal[
    "share",
    "ratio",
    "minutes",
    "minutes_change",
    "seconds",
    "minutes_per_step",
    "points_per_step",
    "push",
    "reward",
    "advantage",
    "count",
    "calls",
    "number",
]
UNIT_TEXT: dict[str, str] = {
    "share": "share of the whole (0-1); shown in %",
    "ratio": "ratio to shaping off's (1 = the same); shown in %",
    "minutes": "minutes",
    "minutes_change": "a change of minutes (negative: sooner)",
    "seconds": "seconds; shown in minutes",
    "minutes_per_step": "change of minutes per step of the fixed budget",
    "points_per_step": "change of a probability per step (0-1); shown in percentage points",
    "push": "advantage × property per group (first-order tilt)",
    "reward": "reward units",
    "advantage": "advantage units",
    "count": "count",
    "calls": "tool calls",
    "number": "number",
}
ZERO: dict[str, float] = {
    "minutes_per_step": 1e-9,
    "minutes_change": 1e-9,
    "points_per_step": 1e-12,
    "push": 1e-9,
    "share": 0.0,
    "ratio": 0.0,
}
"""Per unit, the magnitude at or below which a value is rounding and shown as 0 (default 1e-12)."""


@dataclass(frozen=True)
class Bars:
    """The rule's thresholds a summary cell is marked by, handed in by the caller
    (`advice.recommendation.Rule.bars()`): a resolve rate after T below `resolve` of shaping
    off's, and failures ending sooner than shaping off's by more than `fail_share` of its
    failure minutes."""

    resolve: float
    fail_share: float

    def fail_limit(self, row: dict[str, Any]) -> float:
        """Minutes by which failures may end sooner than under shaping off after T steps."""
        off = row.get(F_FAIL_OFF)
        return self.fail_share * (0.0 if off is None else float(off))


Hazard = Callable[[float, dict[str, Any], Bars], tuple[str, str] | None]
"""(value, summary row, the rule's bars) -> (css class 'hazard' or 'warn', why) where the cell
needs a look."""


@dataclass(frozen=True)
class Metric:
    """One metric: name, short label, description, unit, better direction, hazard test."""

    name: str
    label: str
    description: str
    unit: Unit = "number"
    better: Literal["higher", "lower", ""] = ""
    hazard: Hazard | None = None
    short: str = ""
    """The terminal's column header, where the label is too long for an 80-column table."""

    @property
    def brief(self) -> str:
        return self.short or self.label

    def show(self, value: Any) -> str:
        """The value as every human surface writes it ('-' where there is none)."""
        return show_value(self.unit, value)

    def human(self, value: float | None) -> float | None:
        """The value in the unit a person reads (%, minutes, points), rounding-sized values 0:
        what TensorBoard's replay/ and HParams tags hold."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        value = float(value)
        if abs(value) <= ZERO.get(self.unit, 1e-12):
            return 0.0
        scale = {"share": 100.0, "ratio": 100.0, "points_per_step": 100.0, "seconds": 1 / 60}
        return value * scale.get(self.unit, 1.0)


HUMAN_SUFFIX: dict[str, str] = {
    "share": "_pct",
    "ratio": "_pct",
    "points_per_step": "_pts",
    "seconds": "_min",
}
"""Per unit whose human value differs from the machine one, the suffix its name takes where it
is stored in human units (a tracker's tags): a `_frac` or `_rate` key holds a fraction, never %."""


def show_value(unit: str, value: Any) -> str:
    """A value of a unit for a person: shares and ratios in %, seconds as minutes, probability
    changes in points, rounding-sized values as 0."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    return _minus(_shown_number(unit, value))


def _minus(text: str) -> str:
    """A number's sign as the reader's minus, U+2212 (the '-' of a missing value stays)."""
    return "−" + text[1:] if text.startswith("-") and len(text) > 1 else text


def _shown_number(unit: str, value: float) -> str:
    """`show_value`'s number, its sign still ASCII."""
    if isinstance(value, int) and unit in ("count", "calls", "number"):
        return f"{value:,}"
    x = float(value)
    if abs(x) <= ZERO.get(unit, 1e-12):
        return "0"
    if unit in ("share", "ratio"):
        return f"{x:.1%}" if abs(x) < 10 else f"{x:.0%}"
    if unit == "seconds":
        return f"{_digits(x / 60)} min"
    if unit == "minutes":
        return f"{_digits(x)} min"
    if unit == "minutes_change":
        return f"{x:+.3g} min"
    if unit == "minutes_per_step":
        return f"{x:+.2g} min"
    if unit == "points_per_step":
        return f"{x * 100:+.2g} pts"
    if unit == "push":
        return f"{x:.3g}"
    return _digits(x)


def show_change(unit: str, delta: Any) -> str:
    """A difference between two values of a unit for a person, signed: shares and ratios in
    percentage points (+1.2 pts), minutes and seconds in minutes, rounding-sized as 0."""
    if delta is None or (isinstance(delta, float) and math.isnan(delta)):
        return "-"
    x = float(delta)
    if abs(x) <= ZERO.get(unit, 1e-12):
        return "0"
    if unit in ("share", "ratio", "points_per_step"):
        text = f"{x * 100:+.3g} pts"
    elif unit == "seconds":
        text = f"{x / 60:+.3g} min"
    elif unit in ("minutes", "minutes_change", "minutes_per_step"):
        text = f"{x:+.3g} min"
    else:
        text = f"{x:+.3g}"
    return _minus(text)


def _digits(x: float) -> str:
    """4 significant digits, scientific only far from 1."""
    if abs(x) >= 1e5 or abs(x) < 1e-3:
        return f"{x:.3g}"
    return f"{x:.4g}"


# ---- the names ---------------------------------------------------------------------------
# Each metric's name is written once, here: the entries below, the engine that computes the
# metrics and every surface that reads them take it from these constants and helpers
# (tests/test_catalogue.py fails on a second spelling, here or anywhere else).


def scoped(name: str, scope: str) -> str:
    """A scoped metric's column: `scope` is '' or '@short', '@medium', '@long'."""
    return f"{name}{scope}"


def _suffixed(name: str, suffix: str, scope: str = "") -> str:
    """`name` with `suffix` before its scope, then `scope`: `step/resolve_vs_off@long`, `_low`
    -> `step/resolve_vs_off_low@long`."""
    base, at, own = name.partition("@")
    return f"{base}{suffix}{at}{own}{scope}"


def bound(name: str, end: str, scope: str = "") -> str:
    """An interval's end column of a metric (scoped or not): `end` is 'low' or 'high'."""
    return _suffixed(name, f"_{end}", scope)


def off(name: str, scope: str = "") -> str:
    """A metric's shaping-off twin column (the metric scoped or not)."""
    return _suffixed(name, "_off", scope)


def at_check(name: str, check: str) -> str:
    """A horizon number's column under one of `CHECKS` (`check`: 'half', 'twice', 'half_steps',
    'twice_steps'): `forecast/resolve_vs_off_low@long` -> `forecast/resolve_vs_off_low_half@long`."""
    return _suffixed(name, f"_{check}")


# The first step's direction (engine/first_step.py).
RESOLVE = "step/resolve"
RESOLVE_OFF = off(RESOLVE)
RESOLVE_EFFORT = "step/resolve_effort"
SOLVE_MINUTES = "step/solve_minutes"
FAIL_MINUTES = "step/fail_minutes"
RESOLVE_VS_OFF = "step/resolve_vs_off"
SOLVE_VS_OFF = "step/solve_minutes_vs_off"
FAIL_VS_OFF = "step/fail_minutes_vs_off"
TIME_ONLY_SHARE = "step/time_only_share"
FIRST_ORDER_GAP = "step/first_order_gap"
ETA = "step/eta"
KL_BUDGET = "step/kl_budget"

# Inversions and floor ties.
INTRODUCED = "inversion/introduced_group_rate"
INVERSIONS = "inversion/group_rate"
INVERSIONS_OFF = off(INVERSIONS)
INVERTED_PAIRS = "inversion/pair_rate"
FLOOR_TIES = "floor/tie_group_rate"
FLOOR_TIES_MIXED = "floor/tie_mixed_rate"

# The advantages.
ABS_MAX = "adv/abs_max"
EXPLOSION_TRAINED = "adv/explosion_trained_frac"
EXPLOSION_UNCLIPPED = "adv/explosion_frac"
EXPLOSION_CERTAIN = "adv/explosion_certain_frac"
EXPLOSION_POSSIBLE = "adv/explosion_possible_frac"
ABS_MAX_LOW = "adv/abs_max_low"
ABS_MAX_HIGH = "adv/abs_max_high"
CLIP_FRAC = "adv/clip_frac"
FRAGILE_STD = "adv/fragile_std_frac"
SIGN_FLIPS = "adv/sign_flip_frac"
ADV_DISTRIBUTION = {
    q: f"adv/{q}" for q in ("mean", "std", "min", "max", "p01", "p05", "p50", "p95", "p99")
}
"""The trained advantages' mean, std, extremes and quantiles (after the clip), by statistic."""
ADV_BANDS = {q: name for q, name in ADV_DISTRIBUTION.items() if q not in ("mean", "std")}
"""The advantage distribution's extremes and quantiles (the distribution chart's bands)."""
ADV_RESOLVED = "adv/resolved_mean"
ADV_UNRESOLVED = "adv/unresolved_mean"
MASKED_SHIFT = "baseline/masked_shift"

# Signal, group patterns and the filter.
SIGNAL = "signal/group_rate"
SIGNAL_RAW = "signal/group_rate_raw"
TIME_ONLY_GROUPS = "signal/time_only_rate"
UNCHARGED_ONLY = "signal/uncharged_only_rate"
GAINED = "signal/gained_rate"
LOST = "signal/lost_rate"
UNCHARGED_BY_CAUSE = {
    kind: f"signal/uncharged_only_{kind}_rate" for kind in ("masked", "reset", "gate")
}
"""Per kind of uncharged row (schema.UNCHARGED_CAUSES), the share of groups whose only signal
comes from uncharged rows, among them that kind."""
UNCHARGED_MASKED = UNCHARGED_BY_CAUSE["masked"]
UNCHARGED_RESET = UNCHARGED_BY_CAUSE["reset"]
UNCHARGED_GATE = UNCHARGED_BY_CAUSE["gate"]
PATTERN_SHARES = {k: f"groups/{k}" for k in ("all_fail", "mixed", "all_pass")}
"""Per resolved pattern of a group (schema.ALL_FAIL, MIXED, ALL_PASS), the share of groups with
it."""
GROUP_SHARES = tuple(PATTERN_SHARES.values())
KEPT_ROWS = "filter/kept_rows_frac"
KEPT_GROUPS = "filter/kept_groups_frac"
PHANTOM_GROUPS = "filter/phantom_groups_frac"

# The trainer's curves: its reward and advantages, validation, and its time_efficiency/*
# metrics (NeMo-RL's names, then the internal implementation's).
TOTAL_REWARD = "total_reward/mean"
ADVANTAGES_MEAN = "advantages/mean"
ADVANTAGES_MAX = "advantages/max"
ADVANTAGES_MIN = "advantages/min"
VALIDATION_ACCURACY = "validation/accuracy"
VALIDATION_REWARD = "validation/total_reward/mean"
MINUTES_MEAN = "time_efficiency/minutes/mean"
MINUTES_MAX = "time_efficiency/minutes/max"
DEDUCTION_MEAN = "time_efficiency/deduction/mean"
DEDUCTION_MAX = "time_efficiency/deduction/max"
CALLS_MEAN = "time_efficiency/calls/mean"
BONUS_MEAN = "time_efficiency/bonus/mean"
SECONDS_PER_CALL = "time_efficiency/seconds_per_call"
BONUS_SATURATED = "time_efficiency/bonus_saturated_frac"
FLOORED = "time_efficiency/floored_frac"
GROUP_HAS_SIGNAL = "time_efficiency/group_has_signal"
MINUTES_MEAN_INTERNAL = "time_efficiency/minutes_mean"
MINUTES_MAX_INTERNAL = "time_efficiency/minutes_max"
DEDUCTION_MEAN_INTERNAL = "time_efficiency/deduction_mean"
DEDUCTION_MAX_INTERNAL = "time_efficiency/deduction_max"
INTERNAL_NAMES = {
    MINUTES_MEAN_INTERNAL: MINUTES_MEAN,
    MINUTES_MAX_INTERNAL: MINUTES_MAX,
    DEDUCTION_MEAN_INTERNAL: DEDUCTION_MEAN,
    DEDUCTION_MAX_INTERNAL: DEDUCTION_MAX,
}
"""The internal implementation's metric names (spec §3.3 item 5) and the PR's for the same."""

# The input.
ROWS = "input/rows"
GROUPS = "input/groups"
STEPS = "input/steps"
VALIDATION_ROWS = "input/validation_rows"
VALIDATION_CHARGED = "input/validation_charged"
VALIDATION_CHANGED = "input/validation_changed"
MASKED_FRAC = "input/masked_frac"
RESOLVED_FRAC = "input/resolved_frac"
RUN_TIME_STATS = {q: f"input/run_time_{q}" for q in ("p50", "p90", "p99", "max")}
"""The finite run times' quantiles and maximum, by statistic."""
RUN_TIMES = tuple(RUN_TIME_STATS.values())
LENGTH_SHORT_MAX = "input/length_short_max_minutes"
LENGTH_LONG_MIN = "input/length_long_min_minutes"
RUN_TIME_INVALID = "input/run_time_invalid"
RUN_TIME_NULL = "input/run_time_null"
RUN_TIME_NEGATIVE = "input/run_time_negative"
BAD_RUN_TIMES = (RUN_TIME_NULL, RUN_TIME_INVALID, RUN_TIME_NEGATIVE)
NEGATIVE_CHARGED = "quirk/negative_reward_charged"

# The first-order pushes (engine/pushes.py).
PUSH_NAMES = {
    k: f"push/{k}"
    for k in (
        "resolve",
        "minutes_fail",
        "minutes_pass",
        "minutes_between",
        "calls_fail",
        "calls_pass",
        "calls_between",
    )
}
"""Every first-order push, in report order (engine/pushes.PUSHES reads them), and its metric: the
mean over the groups."""
RESOLVE_PUSH = PUSH_NAMES["resolve"]
FAIL_PUSH = PUSH_NAMES["minutes_fail"]
SOLVE_PUSH = PUSH_NAMES["minutes_pass"]
SCOPED_PUSHES = (RESOLVE_PUSH, FAIL_PUSH, SOLVE_PUSH)
"""The pushes also reported per problem-length bucket (`@short`, `@medium`, `@long`)."""
RESOLVE_PUSH_VS_OFF = "push/resolve_vs_off"

# The outcome at the horizon T (engine/forecast.py).
F_RESOLVE_VS_OFF = "forecast/resolve_vs_off"
F_RESOLVE = "forecast/resolve"
F_RESOLVE_OFF = off(F_RESOLVE)
F_RESOLVE_START = "forecast/resolve_start"
F_SOLVE_VS_OFF = "forecast/solve_minutes_vs_off"
F_SOLVE = "forecast/solve_minutes"
F_SOLVE_OFF = off(F_SOLVE)
F_FAIL_VS_OFF = "forecast/fail_minutes_vs_off"
F_FAIL = "forecast/fail_minutes"
F_FAIL_OFF = off(F_FAIL)
F_FAIL_START = "forecast/fail_minutes_start"
F_GIVE_UP_VS_OFF = "forecast/give_up_vs_off"
FORECAST_STEPS = "forecast/steps"
FORECAST_PROBLEMS = "forecast/problems"
FORECAST_PROBLEMS_SAMPLED = "forecast/problems_sampled"
FORECAST_PROBLEMS_TOTAL = "forecast/problems_total"
FORECAST_BUDGET = "forecast/budget"
FORECAST_ALPHA = "forecast/alpha"
FORECAST_ALPHA_LOW = bound(FORECAST_ALPHA, "low")
FORECAST_ALPHA_HIGH = bound(FORECAST_ALPHA, "high")
FORECAST_DRIFT_LOGGED = "forecast/drift_logged"
FORECAST_DRIFT_MODEL = "forecast/drift_model"
FORECAST_DRIFT_STEPS = "forecast/drift_steps"
FORECAST_INTERVALS = (F_RESOLVE_VS_OFF, F_SOLVE_VS_OFF, F_FAIL_VS_OFF)
"""The horizon's numbers with a bootstrap interval (`_low`, `_high`) and, with the budget
check, the same at half and twice the budget (`_half`, `_twice`) and after half and twice the
steps (`_half_steps`, `_twice_steps`)."""

# Scoped and bound names the readers use.
RESOLVE_VS_OFF_LOW = bound(RESOLVE_VS_OFF, "low")
RESOLVE_VS_OFF_HIGH = bound(RESOLVE_VS_OFF, "high")
RESOLVE_VS_OFF_LONG = scoped(RESOLVE_VS_OFF, "@long")
RESOLVE_VS_OFF_LOW_LONG = bound(RESOLVE_VS_OFF, "low", "@long")
RESOLVE_LONG = scoped(RESOLVE, "@long")
SOLVE_VS_OFF_LONG = scoped(SOLVE_VS_OFF, "@long")
FAIL_VS_OFF_LONG = scoped(FAIL_VS_OFF, "@long")

F_RESOLVE_VS_OFF_LOW = bound(F_RESOLVE_VS_OFF, "low")
F_RESOLVE_VS_OFF_LONG = scoped(F_RESOLVE_VS_OFF, "@long")
F_RESOLVE_VS_OFF_LOW_LONG = bound(F_RESOLVE_VS_OFF, "low", "@long")
F_RESOLVE_LONG = scoped(F_RESOLVE, "@long")
F_RESOLVE_OFF_LONG = scoped(F_RESOLVE_OFF, "@long")
F_RESOLVE_START_LONG = scoped(F_RESOLVE_START, "@long")
F_FAIL_LONG = scoped(F_FAIL, "@long")
F_FAIL_START_LONG = scoped(F_FAIL_START, "@long")
F_FAIL_VS_OFF_LONG = scoped(F_FAIL_VS_OFF, "@long")
F_GIVE_UP_VS_OFF_LONG = scoped(F_GIVE_UP_VS_OFF, "@long")

# Columns beside the metrics.
FORECAST_REFUSED = "forecast/refused"
"""Not a metric: why the forecast could not train a config (its numbers are then null)."""
TRAINED_DIGEST = "trained_digest"
"""Not a metric: a hash of what a config trains on (rows, shaped rewards, advantages)."""


# ---- hazard tests ------------------------------------------------------------------------


def _above(threshold: float, css: str, why: str) -> Hazard:
    def test(value: float, row: dict[str, Any], bars: Bars) -> tuple[str, str] | None:
        return (css, why.format(t=threshold)) if value > threshold else None

    return test


def _below(threshold: Callable[[Bars], float], css: str, why: str) -> Hazard:
    def test(value: float, row: dict[str, Any], bars: Bars) -> tuple[str, str] | None:
        t = threshold(bars)
        return (css, why.format(t=t, p=f"{t:.0%}")) if value < t else None

    return test


def _fail_faster(value: float, row: dict[str, Any], bars: Bars) -> tuple[str, str] | None:
    limit = bars.fail_limit(row)
    if value < -limit:
        return "warn", f"failures end more than {limit:.2g} min sooner than under shaping off"
    return None


def _inversions(value: float, row: dict[str, Any], bars: Bars) -> tuple[str, str] | None:
    if value <= 0:
        return None
    if (row.get(INTRODUCED) or 0.0) > 0:
        return "hazard", "some introduced by shaping"
    return "warn", "present with shaping off too"


def _explosions(value: float, row: dict[str, Any], bars: Bars) -> tuple[str, str] | None:
    if value <= 0:
        return None
    if (row.get(EXPLOSION_TRAINED) or 0.0) > 0:
        return "hazard", "not all bounded by the clip"
    return "warn", "bounded by the clip"


TIME_ONLY_CELL = 0.25
"""Share of the step spent on time alone above which the summary table marks the cell."""
SIGN_FLIP_CELL = 0.05
"""Share of rows flipping sign vs shaping off above which the summary table marks the cell."""


# ---- the catalogue -----------------------------------------------------------------------

SCOPES = {
    "": "",
    "@short": " on short problems",
    "@medium": " on medium problems",
    "@long": " on long problems",
}
"""The length-bucket suffixes of a scoped metric, and how its description says so."""


def _scoped(m: Metric) -> Iterator[Metric]:
    for suffix, words in SCOPES.items():
        label = m.label + ("" if not suffix else f", {suffix[1:]}")
        short = m.short and m.short + ("" if not suffix else f" {suffix[1:]}")
        yield replace(
            m,
            name=scoped(m.name, suffix),
            label=label,
            short=short,
            description=m.description + words,
        )


def _twin_off(m: Metric) -> Metric:
    return replace(
        m,
        name=off(m.name),
        label=m.label + " (off)",
        description=m.description + ", from the shaping-off advantages of the same rows",
        hazard=None,
        better="",
    )


def _bounds(m: Metric) -> Iterator[Metric]:
    for end in ("low", "high"):
        yield replace(
            m,
            name=bound(m.name, end),
            label=f"{m.label} ({end})",
            short=m.short and f"{m.short} {end}",
            description=f"{end} end of the bootstrap interval of: {m.description}",
            hazard=None,
        )


STEP = [
    Metric(
        RESOLVE,
        "resolve Δ/step",
        "change of the resolve probability after one step of the fixed budget",
        "points_per_step",
        "higher",
    ),
    Metric(
        RESOLVE_EFFORT,
        "from effort",
        "the part of step/resolve that comes from moving effort between run-time levels (the "
        "rest is resolving more at the same effort)",
        "points_per_step",
    ),
    Metric(
        SOLVE_MINUTES,
        "solve min Δ",
        "change of the mean minutes of a resolved rollout after one step",
        "minutes_per_step",
        "lower",
    ),
    Metric(
        FAIL_MINUTES,
        "fail min Δ",
        "change of the mean minutes of a failed rollout after one step",
        "minutes_per_step",
    ),
]
STEP_VS_OFF = [
    Metric(
        RESOLVE_VS_OFF,
        "first step: resolve vs off",
        "the first step's resolve change as a share of shaping off's (a diagnostic of the "
        "step's direction, not read by the rule; null where shaping off makes none)",
        "ratio",
        "higher",
    ),
    Metric(
        SOLVE_VS_OFF,
        "first step: solve Δ vs off",
        "the first step's change of a success's mean minutes minus shaping off's (negative: "
        "shaping makes successes faster)",
        "minutes_per_step",
        "lower",
    ),
    Metric(
        FAIL_VS_OFF,
        "first step: fail Δ vs off",
        "the first step's change of a failure's mean minutes minus shaping off's (negative: "
        "failures are taught to give up sooner)",
        "minutes_per_step",
    ),
]
OTHER = [
    Metric(
        TIME_ONLY_SHARE,
        "time-only step",
        "share of the step's KL spent in groups whose outcomes are all equal (shaping off "
        "gives them no signal): update about time alone",
        "share",
        "lower",
        _above(TIME_ONLY_CELL, "warn", "over a quarter of the step is about time alone"),
    ),
    Metric(
        FIRST_ORDER_GAP,
        "first-order gap",
        "|exact − first-order| resolve change of the step, relative to the exact one",
        "share",
        "lower",
    ),
    Metric(ETA, "η", "the step size that spends the budget", "number"),
    Metric(KL_BUDGET, "budget", "the step's budget: mean KL per problem (nats)", "number"),
    Metric(
        INTRODUCED,
        "inv. added",
        "share of groups where shaping puts a resolved rollout below an unresolved one that "
        "shaping off kept in order",
        "share",
        "lower",
        _above(0.0, "hazard", "shaping puts resolved rollouts below unresolved ones"),
    ),
    Metric(
        INVERSIONS,
        "inversions",
        "share of groups with a resolved rollout's shaped reward below an unresolved one's",
        "share",
        "lower",
        _inversions,
    ),
    Metric(
        INVERSIONS_OFF,
        "inversions (off)",
        "the same with shaping off (the input's own rewards)",
        "share",
    ),
    Metric(
        INVERTED_PAIRS,
        "inverted pairs",
        "share of (resolved, unresolved) pairs inverted",
        "share",
        "lower",
    ),
    Metric(
        FLOOR_TIES,
        "floor ties",
        "share of groups where a resolved and an unresolved rollout both end on the floor",
        "share",
        "lower",
        _above(0.0, "hazard", "successes tie failures on the floor"),
    ),
    Metric(FLOOR_TIES_MIXED, "floor ties (mixed)", "the same, of mixed groups", "share", "lower"),
    Metric(
        ABS_MAX,
        "max |adv|",
        "largest trained |advantage| (after the clip)",
        "advantage",
        "lower",
        _above(EXPLOSION, "hazard", "trained |advantage| above {t:g} (after the clip)"),
    ),
    Metric(
        EXPLOSION_TRAINED,
        f"|adv|>{EXPLOSION:g} trained",
        f"share of trained rows with |advantage| > {EXPLOSION:g} after the clip",
        "share",
        "lower",
        _above(0.0, "hazard", f"trained |advantage| above {EXPLOSION:g}: no clip bounds them"),
    ),
    Metric(
        EXPLOSION_UNCLIPPED,
        f"|adv|>{EXPLOSION:g} unclipped",
        f"share of rows with |unclipped advantage| > {EXPLOSION:g}",
        "share",
        "lower",
        _explosions,
    ),
    Metric(
        EXPLOSION_CERTAIN,
        f"|adv|>{EXPLOSION:g} every platform",
        f"share of trained rows beyond {EXPLOSION:g} on every float32 platform",
        "share",
        "lower",
    ),
    Metric(
        EXPLOSION_POSSIBLE,
        f"|adv|>{EXPLOSION:g} some platform",
        f"share of trained rows beyond {EXPLOSION:g} on some float32 platform",
        "share",
        "lower",
    ),
    Metric(
        ABS_MAX_LOW,
        "max |adv| (low platform)",
        "the smallest max |advantage| any float32 platform gives",
        "advantage",
    ),
    Metric(
        ABS_MAX_HIGH,
        "max |adv| (high platform)",
        "the largest max |advantage| any float32 platform gives",
        "advantage",
    ),
    Metric(CLIP_FRAC, "clipped", "share of trained rows the clip changes", "share"),
    Metric(
        FRAGILE_STD,
        "fragile std",
        "share of rows normalised by a rounding-sized std (platform-dependent)",
        "share",
        "lower",
        _above(0.0, "warn", "rows normalised by a rounding-sized std"),
    ),
    Metric(
        SIGN_FLIPS,
        "sign flips",
        "share of rows whose advantage sign differs from shaping off's",
        "share",
        "lower",
        _above(SIGN_FLIP_CELL, "warn", "over 5% of rows flip sign vs shaping off"),
    ),
    *(
        Metric(name, f"adv {q}", f"advantage distribution: {q} (after the clip)", "advantage")
        for q, name in ADV_DISTRIBUTION.items()
    ),
    Metric(ADV_RESOLVED, "adv (resolved)", "mean advantage of resolved rows", "advantage"),
    Metric(ADV_UNRESOLVED, "adv (unresolved)", "mean advantage of unresolved rows", "advantage"),
    Metric(
        MASKED_SHIFT,
        "masked shift",
        "mean |baseline with masked rows voting − without|",
        "reward",
    ),
    Metric(SIGNAL, "signal", "share of groups with any |advantage| > 1e-6", "share"),
    Metric(SIGNAL_RAW, "signal (off)", "the same with shaping off", "share"),
    Metric(
        TIME_ONLY_GROUPS,
        "time-only groups",
        "share of groups with signal only because shaping breaks their reward ties",
        "share",
        "lower",
    ),
    Metric(
        UNCHARGED_ONLY,
        "uncharged-only",
        "share of groups whose only signal is uncharged rows differing from charged siblings",
        "share",
        "lower",
        _above(0.0, "warn", "signal only from uncharged rows"),
    ),
    Metric(
        GAINED,
        "signal gained",
        "share of groups that gain signal against shaping off",
        "share",
    ),
    Metric(
        LOST,
        "signal lost",
        "share of groups that lose shaping off's signal",
        "share",
        "lower",
        _above(0.0, "warn", "groups that lose their signal to shaping"),
    ),
    *(
        Metric(
            name,
            k.replace("_", " "),
            f"share of groups that are {k.replace('_', ' ')}",
            "share",
        )
        for k, name in PATTERN_SHARES.items()
    ),
    Metric(
        KEPT_ROWS,
        "kept rows",
        "share of rows the dynamic-sampling filter keeps",
        "share",
    ),
    Metric(KEPT_GROUPS, "kept groups", "share of groups the filter keeps", "share"),
    Metric(
        PHANTOM_GROUPS,
        "phantom groups",
        "share of groups kept with no signal",
        "share",
    ),
    Metric(
        TOTAL_REWARD,
        "reward",
        "mean shaped reward of training rows (trainer metric)",
        "reward",
    ),
    Metric(ADVANTAGES_MEAN, "adv mean", "mean advantage (trainer metric)", "advantage"),
    Metric(ADVANTAGES_MAX, "adv max", "largest advantage (trainer metric)", "advantage"),
    Metric(ADVANTAGES_MIN, "adv min", "smallest advantage (trainer metric)", "advantage"),
    Metric(VALIDATION_ACCURACY, "val. accuracy", "mean raw reward of validation rows", "reward"),
    Metric(
        VALIDATION_REWARD,
        "val. reward",
        "mean shaped reward of validation rows",
        "reward",
    ),
    Metric(ROWS, "rollouts", "rollouts in the input", "count"),
    Metric(GROUPS, "groups", "training groups", "count"),
    Metric(STEPS, "steps", "training steps", "count"),
    Metric(VALIDATION_ROWS, "validation rollouts", "validation rollouts", "count"),
    Metric(VALIDATION_CHARGED, "validation charged", "validation rows charged", "count"),
    Metric(
        VALIDATION_CHANGED,
        "validation changed",
        "charged validation rows whose shaped reward differs from the raw one",
        "count",
    ),
    *(
        Metric(
            UNCHARGED_BY_CAUSE[kind],
            f"uncharged-only: {words}",
            f"share of groups with signal only from uncharged rows, among them {words}",
            "share",
        )
        for kind, words in (
            ("masked", "loss-masked rows"),
            ("reset", "rows a zeroing penalty reset"),
            ("gate", "rows the correct gate skipped"),
        )
    ),
    Metric(MASKED_FRAC, "masked", "loss-masked share of training rows", "share"),
    Metric(RESOLVED_FRAC, "resolved", "resolved share of training rows", "share"),
    *(
        Metric(name, f"run time {q}", f"run time {q} over finite run times", "seconds")
        for q, name in RUN_TIME_STATS.items()
    ),
    Metric(
        LENGTH_SHORT_MAX,
        "short ≤",
        "longest median run time of a short problem",
        "minutes",
    ),
    Metric(
        LENGTH_LONG_MIN,
        "long >",
        "shortest median run time of a long problem",
        "minutes",
    ),
    Metric(
        RUN_TIME_INVALID,
        "NaN/inf run times",
        "NaN or infinite run times (0 minutes)",
        "count",
    ),
    Metric(RUN_TIME_NULL, "missing run times", "null run times (0 minutes)", "count"),
    Metric(RUN_TIME_NEGATIVE, "negative run times", "negative run times (0 minutes)", "count"),
    Metric(
        NEGATIVE_CHARGED,
        "negative rewards charged",
        "rows with a negative reward the correct gate charges (spec §3.2 quirk)",
        "count",
    ),
]
FORECAST = [
    Metric(
        F_RESOLVE_VS_OFF,
        "resolve vs off at T",
        "resolve rate after T training steps as a share of shaping off's after T steps (the "
        "rule reads its interval's low end)",
        "ratio",
        "higher",
        _below(lambda b: b.resolve, "warn", "below {p} of shaping off after T steps"),
    ),
    Metric(F_RESOLVE, "resolve at T", "resolve rate after T steps", "share", "higher"),
    Metric(F_RESOLVE_OFF, "resolve at T (off)", "the same under shaping off", "share"),
    Metric(F_RESOLVE_START, "resolve at start", "resolve rate of the logged effort", "share"),
    Metric(
        F_SOLVE_VS_OFF,
        "solve Δ at T",
        "mean minutes of a resolved rollout after T steps minus shaping off's (negative: faster; "
        "the rule ranks by it)",
        "minutes_change",
        "lower",
    ),
    Metric(
        F_SOLVE,
        "solve min at T",
        "mean minutes of a resolved rollout after T steps",
        "minutes",
    ),
    Metric(
        F_SOLVE_OFF,
        "solve min at T (off)",
        "the same under shaping off",
        "minutes",
    ),
    Metric(
        F_FAIL_VS_OFF,
        "fail Δ at T",
        "mean minutes of a failed rollout after T steps minus shaping off's (negative: failures "
        "give up sooner)",
        "minutes_change",
        "",
        _fail_faster,
    ),
    Metric(
        F_FAIL,
        "fail min at T",
        "mean minutes of a failed rollout after T steps",
        "minutes",
    ),
    Metric(
        F_FAIL_OFF,
        "fail min at T (off)",
        "the same under shaping off",
        "minutes",
    ),
    Metric(
        F_FAIL_START,
        "fail min at start",
        "mean minutes of a failed rollout under the logged effort",
        "minutes",
    ),
    Metric(
        F_GIVE_UP_VS_OFF,
        "giving up Δ at T",
        "share of effort at the lowest level after T steps minus shaping off's",
        "share",
        "lower",
    ),
    Metric(FORECAST_STEPS, "horizon T", "T, the training steps forecast (--steps)", "count"),
    Metric(
        FORECAST_PROBLEMS,
        "forecast problems",
        "problems the forecast sampled per seed (stratified by length bucket)",
        "count",
    ),
    Metric(
        FORECAST_PROBLEMS_SAMPLED,
        "problems resampled",
        "distinct problems in the forecast's samples: the bootstrap's units",
        "count",
    ),
    Metric(FORECAST_PROBLEMS_TOTAL, "problems", "problems in the input", "count"),
    Metric(
        FORECAST_BUDGET,
        "step budget",
        "the forecast's step size: the mean KL (nats) of the problems' efforts per step "
        "(--step-kl; the log's drift cannot separate it from the causal share)",
        "number",
    ),
    Metric(
        FORECAST_ALPHA,
        "causal share α",
        "share of each problem's success differences between run-time levels the forecast "
        "reads as bought by effort, calibrated so that shaping off drifts over the log's steps "
        "as the log does (1: as logged, 0: effort buys nothing)",
        "number",
    ),
    Metric(FORECAST_ALPHA_LOW, "α low", "low end of the causal share's interval", "number"),
    Metric(FORECAST_ALPHA_HIGH, "α high", "high end of the causal share's interval", "number"),
    Metric(
        FORECAST_DRIFT_LOGGED,
        "logged drift",
        "minutes per rollout per step within problems over the log's steps",
        "minutes_per_step",
    ),
    Metric(
        FORECAST_DRIFT_MODEL,
        "model drift (α = 1)",
        "the same forecast under shaping off over as many steps, success as logged",
        "minutes_per_step",
    ),
    Metric(FORECAST_DRIFT_STEPS, "drift steps", "steps the calibration's drift spans", "count"),
]
TRAINER = [
    Metric(MINUTES_MEAN, "minutes", "mean agent minutes (trainer metric)", "minutes"),
    Metric(
        MINUTES_MAX,
        "minutes max",
        "largest agent minutes (trainer metric)",
        "minutes",
    ),
    Metric(DEDUCTION_MEAN, "deduction", "mean deduction (trainer metric)", "reward"),
    Metric(
        DEDUCTION_MAX,
        "deduction max",
        "largest deduction (trainer metric)",
        "reward",
    ),
    Metric(CALLS_MEAN, "calls", "mean tool calls (trainer metric)", "calls"),
    Metric(BONUS_MEAN, "bonus", "mean call bonus (trainer metric)", "reward"),
    Metric(
        SECONDS_PER_CALL,
        "s per call",
        "agent seconds per tool call (trainer metric)",
        "number",
    ),
    Metric(
        BONUS_SATURATED,
        "bonus saturated",
        "share of rows at the bonus's cap (trainer metric)",
        "share",
    ),
    Metric(
        FLOORED,
        "floored",
        "share of rows clamped at the floor (trainer metric)",
        "share",
    ),
    Metric(
        GROUP_HAS_SIGNAL,
        "group has signal",
        "share of groups whose deductions differ (trainer metric)",
        "share",
    ),
    Metric(
        MINUTES_MEAN_INTERNAL,
        "minutes (internal)",
        "mean agent minutes (internal name)",
        "minutes",
    ),
    Metric(
        MINUTES_MAX_INTERNAL,
        "minutes max (internal)",
        "largest agent minutes (internal name)",
        "minutes",
    ),
    Metric(
        DEDUCTION_MEAN_INTERNAL,
        "deduction (internal)",
        "mean deduction (internal name)",
        "reward",
    ),
    Metric(
        DEDUCTION_MAX_INTERNAL,
        "deduction max (internal)",
        "largest deduction (internal name)",
        "reward",
    ),
]
PUSHES = [
    Metric(
        RESOLVE_PUSH,
        "resolve push",
        "first-order push toward resolving (advantage × probability per group)",
        "push",
        "higher",
    ),
    Metric(
        FAIL_PUSH,
        "fail-time push",
        "first-order push on failures' minutes (negative: fail faster)",
        "push",
    ),
    Metric(
        SOLVE_PUSH,
        "solve-time push",
        "first-order push on successes' minutes (negative: solve faster)",
        "push",
        "lower",
    ),
    Metric(
        "push/minutes_between",
        "between push",
        "first-order push on minutes that only follows the outcome",
        "push",
    ),
    Metric(
        "push/calls_fail", "fail-calls push", "first-order push on failures' tool calls", "push"
    ),
    Metric(
        "push/calls_pass", "solve-calls push", "first-order push on successes' tool calls", "push"
    ),
    Metric(
        "push/calls_between",
        "between calls push",
        "first-order push on calls that only follows the outcome",
        "push",
    ),
]
PUSH_VS_OFF = Metric(
    RESOLVE_PUSH_VS_OFF,
    "first-order push: resolve vs off",
    "first-order resolve push as a share of shaping off's (a push, not a resolve rate: not what "
    "the rule reads, and it grows with the update's size; can exceed 100%)",
    "ratio",
)


SHORT = {
    RESOLVE_VS_OFF: "1st step",
    SOLVE_VS_OFF: "1st solve Δ",
    FAIL_VS_OFF: "1st fail Δ",
    TIME_ONLY_SHARE: "time-only",
    F_RESOLVE_VS_OFF: "resolve@T",
    F_RESOLVE_VS_OFF_LONG: "long@T",
    F_SOLVE_VS_OFF: "solve Δ@T",
    F_FAIL_VS_OFF: "fail Δ@T",
    EXPLOSION_TRAINED: f"|adv|>{EXPLOSION:g}",
}
"""Terminal headers of the metrics whose labels are too long for a narrow table."""


CHECKS = (
    ("half", "at half the step budget"),
    ("twice", "at twice the step budget"),
    ("half_steps", "after half the steps"),
    ("twice_steps", "after twice the steps"),
)
"""The forecast's checks of the verdict: the rule's numbers again at half and twice the step
budget, and after half and twice the horizon T (column suffix, words)."""


def _build() -> dict[str, Metric]:
    out: dict[str, Metric] = {}

    def add(m: Metric) -> None:
        out[m.name] = m

    for m in STEP:
        for s in _scoped(m):
            add(s)
            add(_twin_off(s))
    for m in STEP_VS_OFF:
        for s in _scoped(replace(m, short=SHORT.get(m.name, ""))):
            add(s)
            for b in _bounds(s):
                add(b)
    for m in (*OTHER, *TRAINER):
        add(replace(m, short=SHORT.get(m.name, "")))
    for m in PUSHES:
        add(m)
        add(_twin_off(m))
    for name in SCOPED_PUSHES:
        base = next(m for m in PUSHES if m.name == name)
        for s in list(_scoped(base))[1:]:
            add(s)
            add(_twin_off(s))
    for s in _scoped(PUSH_VS_OFF):
        add(s)
    for m in FORECAST:
        m = replace(m, short=SHORT.get(m.name, ""))
        add(m)
        if m.unit == "count":  # the forecast's size, not a measure per bucket
            continue
        words = m.description + " on long problems"
        long = replace(
            m,
            name=scoped(m.name, "@long"),
            label=f"{m.label}, long",
            short=SHORT.get(scoped(m.name, "@long"), ""),
            description=words,
        )
        add(long)
        if m.name not in FORECAST_INTERVALS:
            continue
        for scoped_m in (m, long):
            for b in _bounds(scoped_m):
                add(b)
            for check, words in CHECKS:
                for x in (scoped_m, *_bounds(scoped_m)):
                    add(
                        replace(
                            x,
                            name=at_check(x.name, check),
                            label=f"{x.label} ({check.replace('_', ' ')})",
                            description=f"{x.description}, {words}",
                            hazard=None,
                        )
                    )
    return out


CATALOGUE: dict[str, Metric] = _build()
"""Every metric of the summary, step and group tables, by name."""


def metric(name: str) -> Metric:
    """The catalogue's entry for a column (a plain number for a column it does not know)."""
    return CATALOGUE.get(name) or Metric(name, name, name)


def human_name(name: str) -> str:
    """A metric's name where its value is stored in human units (`Metric.human`), saying the unit
    when it is not the table's: `adv/explosion_frac` -> `adv/explosion_pct`,
    `forecast/resolve_vs_off_low@long` -> `forecast/resolve_vs_off_low_pct@long`; a metric
    whose human value is its table value keeps its name."""
    suffix = HUMAN_SUFFIX.get(metric(name).unit)
    if suffix is None:
        return name
    base, at, scope = name.partition("@")
    return f"{base.removesuffix('_frac')}{suffix}{at}{scope}"


def show(name: str, value: Any) -> str:
    """A column's value as every human surface writes it."""
    return metric(name).show(value)


def hazard(name: str, value: Any, row: dict[str, Any], bars: Bars) -> tuple[str, str]:
    """(css class, why) for a summary cell that crosses its hazard threshold under the rule's
    `bars`, else ('', '')."""
    m = CATALOGUE.get(name)
    if m is None or m.hazard is None or value is None or not isinstance(value, int | float):
        return "", ""
    return m.hazard(float(value), row, bars) or ("", "")


def field_metadata(name: str) -> dict[str, str] | None:
    """A metric column's Parquet field metadata (description and machine unit), or None."""
    m = CATALOGUE.get(name)
    if m is None:
        return None
    return {"description": m.description, "unit": m.unit, "unit_text": UNIT_TEXT[m.unit]}


FAMILIES = (
    (
        "the first step's direction (engine/first_step.py; a diagnostic, not read by the rule)",
        STEP,
        "also `@short`, `@medium`, `@long`; `_off`: shaping off's",
    ),
    (
        "against shaping off",
        STEP_VS_OFF,
        "also `@short`, `@medium`, `@long`; `_low`, `_high`: interval ends",
    ),
    ("diagnostics", OTHER, ""),
    ("trainer metrics (NeMo-RL's names)", TRAINER, ""),
    (
        "first-order pushes (not read by the rule)",
        [*PUSHES, PUSH_VS_OFF],
        "also `_off`; resolve, minutes_fail and minutes_pass also `@short`, `@medium`, `@long`",
    ),
    (
        "the outcome at the horizon T (engine/forecast.py; read by the rule)",
        FORECAST,
        (
            "also `@long`; resolve_vs_off, solve_minutes_vs_off and fail_minutes_vs_off also "
            "`_low`, `_high` (interval ends) and `_half`, `_twice`, `_half_steps`, `_twice_steps` "
            "(at half and twice the budget and the steps)"
        ),
    ),
)
"""The catalogue as docs/report.md's metric table shows it: families of base names."""


def markdown_table() -> str:
    """docs/report.md's metric table, generated from the catalogue (a test holds them equal)."""
    lines = ["| metric | label | unit | better | meaning |", "|---|---|---|---|---|"]
    for family, metrics, variants in FAMILIES:
        note = f" ({variants})" if variants else ""
        lines.append(f"| **{family}**{note} | | | | |")
        for m in metrics:
            better = m.better or "-"
            description = m.description.replace("|", "\\|")
            label = m.label.replace("|", "\\|")
            lines.append(f"| `{m.name}` | {label} | {m.unit} | {better} | {description} |")
    return "\n".join(lines) + "\n"
