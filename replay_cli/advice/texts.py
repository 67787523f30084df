"""The recommendation's sentences: the outcome at the horizon in the one wording every surface
uses, why a config misses the resolve bar, what a trade buys and costs, why an eligible config
ranks where it does, and the reasons a verdict is unrated. They only word numbers of a summary
row; the rule that decides is in advice/rule.py."""

from __future__ import annotations

from typing import Any

from replay_cli import catalogue as C
from replay_cli.advice.words import NO_LONG_PROBLEMS, num, sooner_than_off
from replay_cli.catalogue.units import pct, percent, points

NO_FORECAST = (
    "not judged on resolve rate: the summary has no outcome after T steps (the forecast did not "
    "run: replay without --no-forecast)"
)
NO_TRAINING = "nothing to judge: the input has no training group (every row is validation)"


def pct_ratio(x: float | None) -> str:
    """A ratio to shaping off's for a sentence (one decimal, as the tables show it)."""
    return C.show_value("ratio", x)


def horizon_text(row: dict[str, Any], where: str = C.LONG) -> str:
    """The outcome at the horizon in the one wording every surface uses, a predicate for 'it
    ...' or "'label' ...": 'ends at 50.7% resolved on long problems after 50 steps, 97.5% of
    shaping off's 52.0% (it gains +12.8 of shaping off's +14.1 points)'; 'has no outcome on long
    problems (no long problems in this input)' where there is none. 'Kept' is only ever the ratio
    of end levels (97.5% of shaping off's); the progress from the start is a gain."""
    on = row.get(C.scoped(C.F_RESOLVE, where))
    off = row.get(C.scoped(C.F_RESOLVE_OFF, where))
    start = row.get(C.scoped(C.F_RESOLVE_START, where))
    ratio = row.get(C.scoped(C.F_RESOLVE_VS_OFF, where))
    scope = " on long problems" if where == C.LONG else ""
    if on is None or off is None:
        return f"has no outcome{scope} ({NO_LONG_PROBLEMS})" if where else "has no forecast"
    against = f"{pct_ratio(ratio)} of " if ratio is not None else "against "
    text = (
        f"ends at {percent(on)} resolved{scope} after {num(row, C.FORECAST_STEPS):.0f} steps, "
        f"{against}shaping off's {percent(off)}"
    )
    if start is not None:
        text += (
            f" (it gains {points(on - start)} of shaping off's {points(off - start)} points)"
            if off - start > 1e-12
            else f" (shaping off moves it {points(off - start)} points)"
        )
    return text


def kept_text(row: dict[str, Any], where: str, least: float) -> str:
    """Why a config misses the resolve bar in `where`, with its numbers and the bar."""
    low = row.get(C.bound(C.F_RESOLVE_VS_OFF, "low", where))
    ratio = row.get(C.scoped(C.F_RESOLVE_VS_OFF, where))
    interval = f"; low end of its interval {pct_ratio(low)}" if low is not None else ""
    if ratio is None:
        return f"{horizon_text(row, where)}, below shaping off's"
    return f"{horizon_text(row, where)}{interval}, needs {pct(least)}"


def _faster_text(row: dict[str, Any], column: str, what: str) -> str:
    """'successes end 1.1 min sooner than under shaping off' (or later, or as soon), by sign."""
    return f"{what} end {sooner_than_off(num(row, column))}"


def trade_text(row: dict[str, Any]) -> str:
    """What a config buys and what it costs after T steps against shaping off, in words."""
    return (
        f"'{row['label']}': {_faster_text(row, C.F_SOLVE_VS_OFF, 'successes')} after "
        f"{num(row, C.FORECAST_STEPS):.0f} steps, and it {horizon_text(row, C.LONG)}; over all "
        f"problems it keeps {pct_ratio(row.get(C.F_RESOLVE_VS_OFF))} of shaping off's resolve rate"
    )


def why_eligible(row: dict[str, Any]) -> str:
    """The numbers an eligible config is ranked by, each worded by its sign."""
    low = row.get(C.F_RESOLVE_VS_OFF_LOW)
    overall = row.get(C.F_RESOLVE_VS_OFF)
    kept = (
        f"over all problems {pct_ratio(overall)} of shaping off's"
        + (f" (low end {pct_ratio(low)})" if low is not None else "")
        if overall is not None
        else "over all problems as much as shaping off"
    )
    return (
        f"{_faster_text(row, C.F_SOLVE_VS_OFF, 'successes')} after "
        f"{num(row, C.FORECAST_STEPS):.0f} steps; it {horizon_text(row, C.LONG)}, {kept}; "
        f"{_faster_text(row, C.F_FAIL_VS_OFF, 'failures')}; no introduced inversion or "
        "unbounded explosion"
    )


def setting_text(row: dict[str, Any], changed: str) -> str | None:
    """What a config's non-shaping settings (`changed`, as `name=value`) do alone: shaping off's
    resolve rate on long problems after T steps with them against the baseline's."""
    own, base = row.get(C.F_RESOLVE_OWN_OFF_LONG), row.get(C.F_RESOLVE_OFF_LONG)
    if own is None or base is None:
        return None
    return (
        f"{changed} alone (shaping off with it) moves shaping off's resolve rate on long "
        f"problems after {num(row, C.FORECAST_STEPS):.0f} steps from {percent(base)} to {percent(own)}"
    )


def off_course_text(row: dict[str, Any]) -> str:
    """Shaping off's course on long problems as the config `row` is compared with it: the one
    baseline every config is measured against (`forecast.runs.footing`: shaping off with the
    sweep's settings nearest the defaults)."""
    start = C.show(C.F_RESOLVE_START_LONG, row.get(C.F_RESOLVE_START_LONG))
    off = C.show(C.F_RESOLVE_OFF_LONG, row.get(C.F_RESOLVE_OFF_LONG))
    return (
        f"shaping off (the one baseline every config is measured against) takes long problems "
        f"from {start} to {off} resolved"
    )
