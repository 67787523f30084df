"""The one verdict of a report: the recommendation, the findings and the decision, computed once
by `judge` (after a replay, and by `Report.judged_again`) and only read afterwards by the page, the
terminal, TensorBoard and the notebook. A custom `Rule` is recorded in the verdict (and in the
manifest), so every surface states the rule that was applied."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.findings import INPUT_COERCED, findings
from replay_cli.advice.recommendation import ROLES, near_misses, recommend, undecided
from replay_cli.advice.rule import Rule, resolve_criteria
from replay_cli.advice.texts import pct_ratio
from replay_cli.catalogue.units import pct
from replay_cli.rollouts.value_checks import Coerced


@dataclass(frozen=True)
class Decision:
    """The verdict as a reader meets it first: what to launch (or to keep shaping off), the
    runner-up, the avoided configs, and the near misses when nothing passes the rule."""

    recommended: dict[str, Any] | None
    runner_up: dict[str, Any] | None
    avoid: list[dict[str, Any]]
    near_misses: list[dict[str, Any]]
    unrated: str | None
    """Why no config was rated (no forecast, not enough data, no training rows), else None: the
    one verdict every surface words the same, avoided configs or not."""
    keep_off: bool
    """The recommended config is shaping off: no shaped config is worth launching."""
    shaped_eligible: int
    """How many shaped configs pass the rule."""
    best_trade: dict[str, Any] | None = None
    """Where shaping off is kept: the shaped config that keeps the most resolve progress while
    making successes faster, failing only the resolve criteria (its `trade` says the cost)."""

    @classmethod
    def of(cls, verdict: pl.DataFrame) -> Decision:
        """The decision a recommendation table holds (it is derived, never decided again)."""

        def first(role: str, flag: str = C.ROLE) -> dict[str, Any] | None:
            found = verdict.filter(pl.col(flag) == role if flag == C.ROLE else pl.col(flag))
            return found.row(0, named=True) if found.height else None

        recommended, unrated = first("recommended"), undecided(verdict)
        eligible = verdict.filter(pl.col(C.ROLE).is_in(ROLES[:3]))
        return cls(
            recommended=recommended,
            runner_up=first("runner-up"),
            avoid=verdict.filter(pl.col(C.ROLE) == "avoid").to_dicts(),
            near_misses=(
                [] if recommended is not None or unrated else near_misses(verdict).to_dicts()
            ),
            unrated=unrated,
            keep_off=bool(recommended is not None and recommended.get(S.SHAPING_OFF)),
            shaped_eligible=eligible.filter(~pl.col(S.SHAPING_OFF)).height,
            best_trade=first("", C.BEST_TRADE),
        )


@dataclass(frozen=True)
class Verdict:
    """What the report concludes: one role per config (`recommendation`), the findings, the
    decision, and the rule they were judged by."""

    recommendation: pl.DataFrame
    findings: pl.DataFrame
    decision: Decision
    rule: Rule


def keep_off_text(d: Decision, rule: Rule) -> str:
    """Why shaping off is kept, at the thresholds of the `rule` the verdict was judged by (the
    best trade, if any, is `d.best_trade['trade']`)."""
    if d.shaped_eligible:
        return "the shaped configs that pass the rule make successes no faster than shaping off"
    least = min(c.least(rule) for c in resolve_criteria())
    return (
        f"no shaped config keeps {pct(least)} of shaping off's resolve rate "
        "after T steps with confidence (and passes the other criteria)"
        + ("; the best trade is below" if d.best_trade is not None else "")
    )


def _picked_for(row: dict[str, Any], alike: Sequence[dict[str, Any] | None]) -> str:
    """Why the rule picks `row` over the configs that train alike (their recommendation rows,
    None where unknown): 'soonest' only where its successes end sooner than each of theirs by
    more than the minutes' rounding (shaping off's at 0); else the tie-break that decided."""
    mine = 0.0 if row.get(S.SHAPING_OFF) else row.get(C.F_SOLVE_VS_OFF)

    def apart(theirs: Any) -> bool:
        shown = C.show(C.F_SOLVE_VS_OFF, mine) != C.show(C.F_SOLVE_VS_OFF, theirs)
        return theirs is not None and mine is not None and mine < theirs and shown

    if all(
        a is not None and apart(0.0 if a.get(S.SHAPING_OFF) else a.get(C.F_SOLVE_VS_OFF))
        for a in alike
    ):
        return ", whose successes end soonest"
    return (
        " by its tie-break (the smaller λ, then shaping off, then the fewest settings away from "
        "their defaults): its successes end no sooner than each of theirs beyond rounding"
    )


def confidence_text(row: dict[str, Any], others: Sequence[dict[str, Any]] = ()) -> str:
    """How sure the pick is: its outcome at the horizon with its interval, the configs that
    train like it, and how often a new log of the same size would give the same pick. `others`:
    the recommendation table's rows (the alike configs' minutes are read from them; where one is
    missing, no 'soonest' is claimed)."""
    parts = []
    low, low_long = row.get(C.F_RESOLVE_VS_OFF_LOW), row.get(C.F_RESOLVE_VS_OFF_LOW_LONG)
    if not row.get(S.SHAPING_OFF) and low_long is not None:
        parts.append(
            f"The low end of the interval of its resolve rate after "
            f"{row.get(C.FORECAST_STEPS) or 0:.0f} steps is {pct_ratio(low_long)} of shaping "
            "off's on long problems"
            + (f" and {pct_ratio(low)} over all problems" if low is not None else "")
            + "."
        )
    alike = [a for a in row.get(C.ALIKE) or [] if a != row.get("label")]
    by_label = {o.get("label"): o for o in others}
    share = row.get(C.SET_SHARE)
    if share is None:
        share = row.get(C.WON_SHARE)
    if alike:
        names = ", ".join(f"'{a}'" for a in alike)
        picked = _picked_for(row, [by_label.get(a) for a in alike])
        parts.append(
            f"{names} train{'s' if len(alike) == 1 else ''} alike here (within the interval); "
            f"the rule picks '{row.get('label')}'{picked}."
        )
    if share is not None:
        which = "it or a config that trains alike" if alike else "it"
        often = (
            "almost always (99% or more"
            if share >= 0.99
            else f"about {C.show_value('share', share)} of the time ("
        )
        sep = "; " if share >= 0.99 else ""
        parts.append(
            f"A new log of this size would pick {which} {often}{sep}an estimate: the rule "
            "applied again in each bootstrap resample of the problems, widened by the rule's "
            "spread)."
        )
    return " ".join(parts) or "No bootstrap was run (--resamples 0): no interval."


def backtest_caveat(row: dict[str, Any], pilots: pl.DataFrame | None = None) -> str:
    """What a failed backtest means for the pick (`row`: a summary row; `pilots`: the pilots
    table; "" where every backtest passed or none ran)."""
    parts = []
    if row.get(C.FORECAST_BACKTEST_PASS) == 0.0:
        parts.append(
            "The forecast of shaping off does not reproduce the later steps of your run (its "
            "backtest, under Forecast): the pick rests on the cautious reading (longer runs "
            "cause all of their extra success), not on a prediction of this run."
        )
    failed = pl.DataFrame()
    if pilots is not None and C.FORECAST_BACKTEST_PASS in pilots.columns:
        failed = pilots.filter(pl.col(C.FORECAST_BACKTEST_PASS) == 0.0)
    if failed.height:
        names = ", ".join(
            f"{r[C.FORECAST_PILOT]} ({r[C.FORECAST_PILOT_CONFIG]})" for r in failed.to_dicts()
        )
        parts.append(
            f"The forecast does not reproduce the pilot run{'s' if failed.height > 1 else ''} "
            f"{names} under {'their' if failed.height > 1 else 'its'} own config: what it says "
            "shaping does to success is not confirmed by a shaped run."
        )
    return " ".join(parts)


def pilot_lines(pilots: pl.DataFrame | None) -> list[str]:
    """Each pilot's line beside the backtest: "Pilot <file> (<config>): <its backtest>"."""
    if pilots is None:
        return []
    return [
        f"Pilot {r[C.FORECAST_PILOT]} ({r[C.FORECAST_PILOT_CONFIG]}): {r[C.FORECAST_BACKTEST]}"
        for r in pilots.to_dicts()
    ]


def judge(
    summary: pl.DataFrame,
    tops: pl.DataFrame | None = None,
    resamples: pl.DataFrame | None = None,
    rule: Rule | None = None,
    coerced: Sequence[Coerced] = (),
) -> Verdict:
    """The verdict of a summary table; `tops`: `maths.top_groups.top_groups` of the group table,
    `resamples`: the forecast's bootstrap table, `coerced`: `Rollouts.coerced` (a finding each)."""
    rule = rule or Rule()
    table = recommend(summary, rule, resamples)
    return Verdict(table, findings(summary, tops, rule, coerced), Decision.of(table), rule)


def with_input_findings(verdict: Verdict, before: pl.DataFrame) -> Verdict:
    """`verdict` with the input's findings of an earlier verdict of the same report (judging
    again reads the summary, which does not hold the input's values)."""
    kept = before.filter(pl.col("kind") == INPUT_COERCED)
    if kept.is_empty():
        return verdict
    rest = verdict.findings.filter(pl.col("kind") != INPUT_COERCED)
    return replace(verdict, findings=pl.concat([kept, rest], how="vertical_relaxed"))
