"""The outcome at the horizon T (engine/forecast.py; read by the rule): each metric's constant is
its entry, the columns its variants add (`@long`, interval ends, the budget checks), the rule's
bars a cell is marked by, and the long forecast table's `metric` values."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from replay_cli.catalogue.metric import (
    LONG,
    Family,
    Metric,
    _suffixed,
    at_check,
    below,
    bound,
    bounds_of,
    off,
    scoped,
    vs_off,
)


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
        value = row.get(F_FAIL_OFF)
        return self.fail_share * (0.0 if value is None else float(value))


def _fail_faster(value: float, row: dict[str, Any], bars: Bars) -> tuple[str, str] | None:
    limit = bars.fail_limit(row)
    if value < -limit:
        return "warn", f"failures end more than {limit:.2g} min sooner than under shaping off"
    return None


FORECAST = Family(
    "the outcome at the horizon T (engine/forecast.py; read by the rule)",
    "also `@long`; resolve_vs_off, solve_minutes_vs_off and fail_minutes_vs_off also "
    "`_low`, `_high` (interval ends) and `_half`, `_twice`, `_half_steps`, `_twice_steps` "
    "(at half and twice the budget and the steps)",
)
F_RESOLVE_VS_OFF = FORECAST(
    "forecast/resolve_vs_off",
    "resolve vs off at T",
    "resolve rate after T training steps as a share of shaping off's after T steps (the "
    "rule reads its interval's low end)",
    "ratio",
    "higher",
    below(lambda b: b.resolve, "warn", "below {p} of shaping off after T steps"),
    short="resolve@T",
)
F_RESOLVE = FORECAST(
    "forecast/resolve", "resolve at T", "resolve rate after T steps", "share", "higher"
)
F_RESOLVE_OFF = FORECAST(
    off(F_RESOLVE), "resolve at T (off)", "the same under shaping off", "share"
)
F_RESOLVE_OWN_OFF = FORECAST(
    "forecast/resolve_own_off",
    "resolve at T (own off)",
    "shaping off's resolve rate after T steps with the config's own non-shaping settings (the "
    "mask switch, the estimator, the clip, normalisation) where they differ from the baseline's "
    "the sweep compares every config with (null on the baseline's settings)",
    "share",
)
F_RESOLVE_START = FORECAST(
    "forecast/resolve_start", "resolve at start", "resolve rate of the logged effort", "share"
)
F_SOLVE_VS_OFF = FORECAST(
    "forecast/solve_minutes_vs_off",
    "solve Δ at T",
    "mean minutes of a resolved rollout after T steps minus shaping off's (negative: faster; "
    "the rule ranks by it)",
    "minutes_change",
    "lower",
    short="solve Δ@T",
)
F_SOLVE = FORECAST(
    "forecast/solve_minutes",
    "solve min at T",
    "mean minutes of a resolved rollout after T steps",
    "minutes",
)
F_SOLVE_OFF = FORECAST(
    off(F_SOLVE), "solve min at T (off)", "the same under shaping off", "minutes"
)
F_FAIL_VS_OFF = FORECAST(
    "forecast/fail_minutes_vs_off",
    "fail Δ at T",
    "mean minutes of a failed rollout after T steps minus shaping off's (negative: failures "
    "give up sooner)",
    "minutes_change",
    "",
    _fail_faster,
    short="fail Δ@T",
)
F_FAIL = FORECAST(
    "forecast/fail_minutes",
    "fail min at T",
    "mean minutes of a failed rollout after T steps",
    "minutes",
)
F_FAIL_OFF = FORECAST(off(F_FAIL), "fail min at T (off)", "the same under shaping off", "minutes")
F_FAIL_START = FORECAST(
    "forecast/fail_minutes_start",
    "fail min at start",
    "mean minutes of a failed rollout under the logged effort",
    "minutes",
)
F_GIVE_UP_VS_OFF = FORECAST(
    "forecast/give_up_vs_off",
    "giving up Δ at T",
    "share of effort at the lowest level after T steps minus shaping off's",
    "share",
    "lower",
)
FORECAST_STEPS = FORECAST(
    "forecast/steps", "horizon T", "T, the training steps forecast (--steps)", "count"
)
FORECAST_PROBLEMS = FORECAST(
    "forecast/problems",
    "forecast problems",
    "problems the forecast sampled per seed (stratified by length bucket)",
    "count",
)
FORECAST_PROBLEMS_SAMPLED = FORECAST(
    "forecast/problems_sampled",
    "problems resampled",
    "distinct problems in the forecast's samples: the bootstrap's units",
    "count",
)
FORECAST_PROBLEMS_TOTAL = FORECAST(
    "forecast/problems_total", "problems", "problems in the input", "count"
)
FORECAST_BUDGET = FORECAST(
    "forecast/budget",
    "step budget",
    "the forecast's step size: the mean KL (nats) of the problems' efforts per step "
    "(--step-kl, times the step size the fit reads from the log where it reads one)",
)
FORECAST_INTERVALS = (F_RESOLVE_VS_OFF, F_SOLVE_VS_OFF, F_FAIL_VS_OFF)
"""The horizon's numbers with a bootstrap interval (`_low`, `_high`) and, with the budget
check, the same at half and twice the budget (`_half`, `_twice`) and after half and twice the
steps (`_half_steps`, `_twice_steps`)."""
CHECKS = (
    ("half", "at half the step budget"),
    ("twice", "at twice the step budget"),
    ("half_steps", "after half the steps"),
    ("twice_steps", "after twice the steps"),
)
"""The forecast's checks of the verdict: the rule's numbers again at half and twice the step
budget, and after half and twice the horizon T (column suffix, words)."""
FIT = Family(
    "the forecast's start, its fit to the logged run and the backtest (forecast/fit.py, "
    "forecast/backtest.py)",
    "`_low`, `_high` (interval ends or the backtest's band), `_logged` (the backtest's logged "
    "value)",
)
FORECAST_START_STEPS = FIT(
    "forecast/start_steps",
    "start steps",
    "W, the log's first distinct steps the forecast starts from (max(min(L, 4), ceil(L / 4)))",
    "count",
)
FORECAST_FIT_STEPS = FIT(
    "forecast/fit_steps", "logged steps", "L, the log's distinct training steps", "count"
)
FORECAST_ALPHA = FIT(
    "forecast/alpha",
    "causal share α (long runs)",
    "share of the longest succeeding level's extra success the forecast reads as bought by "
    "effort, fitted to the logged shaping-off trajectory (1: as logged, the cautious reading; "
    "0: effort buys nothing)",
    "share",
)
FORECAST_SKILL = FIT(
    "forecast/skill",
    "skill",
    "success at fixed effort per step, fitted to the logged resolve drift left after the "
    "shares' (0: no skill, the cautious reading)",
    "points_per_step",
)
FORECAST_BACKTEST_RESOLVE = FIT(
    "forecast/backtest_resolve",
    "backtest resolve",
    "resolve rate the fit on the log's first two thirds forecasts for shaping off over the "
    "held-out last third (the same groups' problems; `_logged`: what the run logged)",
    "share",
)
FORECAST_BACKTEST_RESOLVE_LONG = FIT(
    scoped(FORECAST_BACKTEST_RESOLVE, LONG),
    "backtest resolve, long",
    "the same on long problems",
    "share",
)
FORECAST_BACKTEST_MINUTES = FIT(
    "forecast/backtest_minutes",
    "backtest minutes",
    "mean minutes of a rollout the backtest forecasts over the held-out steps",
    "minutes",
)
FORECAST_BACKTEST_SHARE_GAP = FIT(
    "forecast/backtest_share_gap",
    "backtest share gap",
    "the largest gap of one effort level's share between the backtest and the log (`_high`: "
    "its band's half width)",
    "share",
)
FORECAST_BACKTEST_PASS = FIT(
    "forecast/backtest_pass",
    "backtest passes",
    "1 where every logged value of the held-out steps lies in the backtest's band, 0 where one "
    "does not (the forecast then decides on the cautious reading), blank without a backtest",
    "count",
)
FORECAST_FIT = "forecast/fit"
"""Not a metric: the fit in one line (what it read, or which assumption drives the forecast)."""
FORECAST_BACKTEST = "forecast/backtest"
"""Not a metric: the backtest in one line."""
FORECAST_ALPHA_LEVELS = "forecast/alpha_levels"
"""Not a metric: the causal share of every effort level, lowest first: one row where every length
bucket reads the same, else per bucket ("short: …; medium: …; long: …")."""
FORECAST_PILOT = "forecast/pilot"
"""Not a metric: a pilot run's log (`--pilot`): the key of pilots.parquet, one row per pilot
with its config and its backtest's columns (forecast/pilots.py)."""
FORECAST_PILOT_CONFIG = "forecast/pilot_config"
"""Not a metric: the label of the config a pilot run was trained with."""
FIT_TEXT = (FORECAST_FIT, FORECAST_BACKTEST, FORECAST_ALPHA_LEVELS)
"""The fit's text columns beside its metrics."""


def logged_value(name: str) -> str:
    """A backtest metric's logged value column: `forecast/backtest_resolve_logged@long`."""
    return _suffixed(name, "_logged")


FORECAST_REFUSED = "forecast/refused"
"""Not a metric: why the forecast could not train a config (its numbers are then null)."""

F_RESOLVE_VS_OFF_LOW = bound(F_RESOLVE_VS_OFF, "low")
F_RESOLVE_VS_OFF_LONG = scoped(F_RESOLVE_VS_OFF, LONG)
F_RESOLVE_VS_OFF_LOW_LONG = bound(F_RESOLVE_VS_OFF, "low", LONG)
F_RESOLVE_LONG = scoped(F_RESOLVE, LONG)
F_RESOLVE_OFF_LONG = scoped(F_RESOLVE_OFF, LONG)
F_RESOLVE_OWN_OFF_LONG = scoped(F_RESOLVE_OWN_OFF, LONG)
F_RESOLVE_START_LONG = scoped(F_RESOLVE_START, LONG)
F_FAIL_LONG = scoped(F_FAIL, LONG)
F_FAIL_START_LONG = scoped(F_FAIL_START, LONG)
F_FAIL_VS_OFF_LONG = scoped(F_FAIL_VS_OFF, LONG)
F_GIVE_UP_VS_OFF_LONG = scoped(F_GIVE_UP_VS_OFF, LONG)


def fit_entries() -> Iterator[Metric]:
    """The fit's columns: each with its interval ends or band, the backtest's with the logged
    value."""
    for m in FIT:
        yield m
        if m.name.startswith("forecast/backtest_") and m.unit != "count":
            yield replace(m, name=logged_value(m.name), label=f"{m.label} (logged)")
        if m.unit != "count":
            yield from bounds_of(m)


def entries() -> Iterator[Metric]:
    """Every column of the family, in the catalogue's order."""
    for m in FORECAST:
        yield m
        if m.unit == "count":  # the forecast's size, not a measure per bucket
            continue
        long = replace(
            m,
            name=scoped(m.name, LONG),
            label=f"{m.label}, long",
            short="long@T" if m.name == F_RESOLVE_VS_OFF else "",
            description=m.description + " on long problems",
        )
        yield long
        if m.name in FORECAST_INTERVALS:
            yield from _checked(m)
            yield from _checked(long)


def _checked(m: Metric) -> Iterator[Metric]:
    """A horizon number's interval ends, then it and its ends under each of `CHECKS`."""
    yield from bounds_of(m)
    for check, words in CHECKS:
        for x in (m, *bounds_of(m)):
            yield replace(
                x,
                name=at_check(x.name, check),
                label=f"{x.label} ({check.replace('_', ' ')})",
                description=f"{x.description}, {words}",
                hazard=None,
            )


# ---- the long forecast table (forecast.parquet) -------------------------------------------

T_RESOLVE = "resolve"
T_SOLVE = "solve_minutes"
T_FAIL = "fail_minutes"
T_GIVE_UP = "give_up"
TABLE_METRICS = (T_RESOLVE, T_SOLVE, T_FAIL, T_GIVE_UP)
"""The long table's `metric` values, in the simulation's order (its last axis): the resolve
rate, the minutes of a resolved and of a failed rollout, the share of effort at the lowest level;
each also as shaping off's (`off`) and against it (`vs_off`)."""


TABLE_NAMES = (*TABLE_METRICS, *map(off, TABLE_METRICS), *map(vs_off, TABLE_METRICS))
"""Every `metric` value of the long table, in its order."""
