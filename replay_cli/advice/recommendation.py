"""The one recommendation: which config to launch, which is the runner-up, which to avoid and why
(docs/report.md, "The recommendation"). The rule (advice/rule.py) says which configs are eligible;
here they are ranked (successes fastest after T steps against shaping off first, then the smaller
λ, shaping off, the fewer settings away from their defaults; the runner-up is the next that does
not train like the best), the best trade is named where shaping off is kept, and the table is
written that every surface reads through the verdict (advice/verdict.py). Without the forecast, or
with too little data to tell the bar from parity, the configs that pass the static criteria are
unrated, and the reason says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.confidence import Confidence, alike_on_log, confidence
from replay_cli.advice.launch import launch_overrides, launch_yaml
from replay_cli.advice.rule import (
    NEEDED,
    RULE_READS,
    Judged,
    Rule,
    changes_setting,
    judge_rows,
    kept,
    plain_off,
    resolve_criteria,
    width,
)
from replay_cli.advice.texts import NO_FORECAST, NO_TRAINING, setting_text, trade_text, why_eligible
from replay_cli.advice.words import num, param_text
from replay_cli.catalogue.units import pct
from replay_cli.maths.thresholds import MINUTES_EPS
from replay_cli.parameters import registry

ROLES = ("recommended", "runner-up", "eligible", "avoid", "unrated")
"""`unrated`: what the rule reads is missing (no forecast, too few problems, no training
group); the reason says which."""
UNDECIDED = "; and "
"""Joins an avoided config's static failures to why nothing was judged on resolve rate."""
SAME_NUMBERS_NEEDED = (C.TRAINED_DIGEST,)
"""Two configs are called the same only when they train on the same rows with the same rewards
and advantages (`trained_digest`, a hash of every training row's shaped reward, advantage after
the clip and loss mask, loss-masked rows included)."""
SCHEMA = {
    S.CONFIG_ID: pl.String,
    "label": pl.String,
    C.ROLE: pl.String,
    C.RANK: pl.Int64,
    C.FAILED: pl.List(pl.String),
    C.REASONS: pl.String,
    C.OVERRIDES: pl.String,
    C.YAML: pl.String,
    S.SHAPING_OFF: pl.Boolean,
    **dict.fromkeys(RULE_READS, pl.Float64),
    C.FORECAST_STEPS: pl.Float64,
    C.WON_SHARE: pl.Float64,
    C.SET_SHARE: pl.Float64,
    C.ALIKE: pl.List(pl.String),
    C.BEST_TRADE: pl.Boolean,
    C.TRADE: pl.String,
    C.BUDGET_CHECK: pl.String,
}
"""`won_share`: the share of resamples in which the rule picks the config; `set_share` (the
recommended row only): the share in which it picks the config or one of `alike`, the eligible
configs that train like it within the interval, an estimate of how often a new log of the
same size gives the same pick."""


@dataclass(frozen=True)
class Ranking:
    """What the rule decides, before the table: every row's role, the eligible best first, the
    reason of rows not worded by their failures (`said`: unrated, twin of the best), whether
    anything was `decided`, and the best trade's index, the budget check and the confidence."""

    rows: list[Judged]
    roles: dict[int, str]
    ranked: list[Judged] = field(default_factory=list)
    said: dict[int, str] = field(default_factory=dict)
    decided: bool = True
    trade: int | None = None
    checked: str | None = None
    confidence: Confidence | None = None


def _set_away(row: dict[str, Any]) -> list[str]:
    """The parameters (besides lambda_time) a config sets away from their defaults."""
    return [
        name
        for name, param in registry().items()
        if name in row and name != "lambda_time" and row[name] != param.default
    ]


def _gain(row: dict[str, Any], rule: Rule | None = None) -> float:
    """The solve-minute change after T steps against shaping off (negative: faster), 0 within
    MINUTES_EPS, and with a rule, 0 where successes get less than its `min_faster` faster."""
    value = num(row, C.F_SOLVE_VS_OFF)
    least = MINUTES_EPS if rule is None else max(MINUTES_EPS, rule.faster_limit(row))
    # Slower, or faster by enough to count.
    return value if value > MINUTES_EPS or -value > least else 0.0


def _solve_key(r: Judged, rule: Rule) -> tuple[float, float, bool, int]:
    """Rank of an eligible config: successes made fastest first (a gain below the rule's
    `min_faster` counts as none), then the smaller lambda (shaping off counts as lambda 0), then
    shaping off, then the fewest settings away from their defaults (the simpler launch)."""
    return (
        0.0 if r.off else _gain(r.row, rule),  # shaping off against itself: no change
        0.0 if r.off else num(r.row, "lambda_time"),
        not r.off,
        len(_set_away(r.row)),
    )


def _same_numbers(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two configs train on the same rows with the same rewards and advantages."""
    if any(a.get(c) is None for c in SAME_NUMBERS_NEEDED):
        return False
    return all(a.get(c) == b.get(c) for c in SAME_NUMBERS_NEEDED)


def _differs_in(row: dict[str, Any], base: dict[str, Any]) -> str:
    """The parameters in which `row` differs from `base`, as `name=value`."""
    names = [n for n in registry() if n in row and row[n] != base.get(n)]
    return " ".join(f"{n}={param_text(n, row[n])}" for n in names) or "no parameter"


def recommend(
    summary: pl.DataFrame,
    rule: Rule | None = None,
    resamples: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The verdict: one row per config (config_id, label, role, rank, failed criteria, reasons
    with their numbers, launch overrides and YAML, the numbers the rule reads, the share of
    bootstrap resamples in which it would be recommended, the best trade), recommended first."""
    rule = rule or Rule()
    if C.GROUPS in summary.columns and summary.height and not (summary[C.GROUPS] > 0).any():
        return _unrated(summary, NO_TRAINING)
    judged = all(c in summary.columns for c in NEEDED)
    off = _reference(summary)
    ranking = _rank(judge_rows(summary.iter_rows(named=True), off, rule, judged), rule, judged)
    ranking = _on_footing_first(ranking, rule, resamples, judged)
    if not ranking.decided:
        return _table(ranking, rule)
    rows, eligible = ranking.rows, ranking.ranked
    keep_off = bool(eligible) and eligible[0].off
    best_id = eligible[0].row.get(S.CONFIG_ID) if eligible else None
    # Ties as the rule breaks them: the point ranking's order of the keys after the gain.
    ties = sorted(range(len(rows)), key=lambda i: (*_solve_key(rows[i], rule)[1:], i))
    pick = eligible[0].index if eligible else None
    return _table(
        replace(
            ranking,
            trade=_best_trade(rows, rule) if keep_off or not eligible else None,
            checked=_budget_check(summary, rule, best_id) if eligible else None,
            confidence=confidence(rows, rule, resamples, pick, [r.index for r in eligible], ties),
        ),
        rule,
    )


def _reference(summary: pl.DataFrame) -> list[bool]:
    """The rows that are the reference every config is measured against: shaping off on the
    baseline's non-shaping settings (a shaping-off config that changes one is ranked as any)."""
    return [plain_off(r) and not changes_setting(r) for r in summary.iter_rows(named=True)]


def _footing_settings(rows: list[Judged]) -> dict[str, Any]:
    """The non-shaping settings of the baseline, read from a row measured on its own footing."""
    base = next((r.row for r in rows if not changes_setting(r.row)), {})
    return {n: base.get(n) for n in _non_shaping() if n in base}


def _non_shaping() -> list[str]:
    """The settings an off twin keeps: the mask switch and every advantage setting."""
    return [n for n, p in registry().items() if p.section == "advantage" or n == "mask_flagged"]


def _changed(row: dict[str, Any], base: dict[str, Any]) -> str:
    """The non-shaping settings in which `row` differs from the baseline's, as `name=value`."""
    names = [n for n in base if row.get(n) != base[n]]

    def text(n: str) -> str:
        value = row.get(n)
        return ("true" if value else "false") if isinstance(value, bool) else param_text(n, value)

    return " ".join(f"{n}={text(n)}" for n in names) or "its settings"


def _on_footing_first(
    ranking: Ranking, rule: Rule, resamples: pl.DataFrame | None, judged: bool
) -> Ranking:
    """A best config that changes a non-shaping setting is not launched on a difference within
    the interval: where an eligible config on the baseline's settings trains like it (each
    difference the rule reads holds 0 at `alike_level` over the log's own resamples), that one
    ranks first, and the other says why it was not picked."""
    if not ranking.decided or not ranking.ranked or not changes_setting(ranking.ranked[0].row):
        return ranking
    best = ranking.ranked[0]
    footed = [r.index for r in ranking.ranked[1:] if not changes_setting(r.row)]
    twin = alike_on_log(ranking.rows, resamples, best.index, footed, rule.alike_level)
    if twin is None:
        return ranking
    again = _rank(ranking.rows, rule, judged, first=twin)
    changed = _changed(best.row, _footing_settings(ranking.rows))
    said = {
        **again.said,
        best.index: (
            f"trains like '{ranking.rows[twin].row['label']}' within the interval after "
            f"{num(best.row, C.FORECAST_STEPS):.0f} steps: it changes {changed} from the "
            "baseline the log was run with, and a change the data cannot tell from noise is not "
            f"launched ({why_eligible(best.row)})"
        ),
    }
    return replace(again, said=said)


def _rank(rows: list[Judged], rule: Rule, judged: bool = True, first: int | None = None) -> Ranking:
    """The roles the rule gives judged rows. Without the forecast (not `judged`) or with too
    little data (`_scarcity`) nothing is ranked: only static failures avoid, the rest is
    unrated. Else the eligible rank by `_solve_key` (`first`, where given, before them); the
    runner-up is the first that does not train like the best."""
    why = NO_FORECAST if not judged else _scarcity(rows, rule)
    if why is not None:
        rows = [r.without_horizon() for r in rows]
        roles = {r.index: "avoid" if r.failed else "unrated" for r in rows}
        return Ranking(rows, roles, said=dict.fromkeys(roles, why), decided=False)
    rows, said = _without_outcome(rows)
    eligible = sorted(
        (r for r in rows if not r.failed and r.index not in said),
        key=lambda r: (r.index != first, *_solve_key(r, rule), r.index),
    )
    roles: dict[int, str] = {}
    best = eligible[0].row if eligible else {}
    for place, r in enumerate(eligible):
        if place == 0:
            roles[r.index] = "recommended"
        elif _same_numbers(r.row, best):
            roles[r.index] = "eligible"
            said[r.index] = (
                f"no alternative to the recommended '{best['label']}': it differs only in "
                f"{_differs_in(r.row, best)} and trains on the same rewards and advantages"
            )
        else:
            roles[r.index] = "eligible" if "runner-up" in roles.values() else "runner-up"
    for r in rows:
        roles.setdefault(r.index, "avoid" if r.failed or r.index not in said else "unrated")
    return Ranking(rows, roles, eligible, said)


def _without_outcome(rows: list[Judged]) -> tuple[list[Judged], dict[int, str]]:
    """The rows, those the forecast has no outcome for (its estimator refused the simulated
    groups) reduced to their static failures, and per such row why it is not ranked."""
    kept_rows, why = [], {}
    for r in rows:
        if r.row.get(C.F_RESOLVE) is None and not r.off:
            reason = r.row.get(C.FORECAST_REFUSED) or "the forecast has no outcome for it"
            why[r.index] = f"not judged on resolve rate: the forecast could not train it ({reason})"
            r = r.without_horizon()
        kept_rows.append(r)
    return kept_rows, why


def _reasons(r: Judged, ranking: Ranking, rule: Rule) -> str:
    """Why the row has its role; for a config off the baseline's non-shaping settings, what
    those settings do alone (`setting_text`)."""
    said = _said(r, ranking, rule)
    if changes_setting(r.row):
        alone = setting_text(r.row, _changed(r.row, _footing_settings(ranking.rows)))
        return said if alone is None else f"{said}; {alone}"
    return said


def _said(r: Judged, ranking: Ranking, rule: Rule) -> str:
    if r.failed:
        failed = "; ".join(c.why(r.row, rule) for c in r.failed)
        # Undecided (no forecast, too little data): the failures that need no forecast, then
        # why the resolve rate was not judged, which the decision reads (`undecided`).
        return failed if ranking.decided else f"{failed}{UNDECIDED}{ranking.said[r.index]}"
    if r.index in ranking.said:
        return ranking.said[r.index]
    if r.off:
        return "shaping off: the reference every config is measured against"
    return why_eligible(r.row)


def _table(ranking: Ranking, rule: Rule) -> pl.DataFrame:
    """The recommendation table of judged rows, recommended first."""
    sure = ranking.confidence or Confidence({}, [], None)
    labels = {r.index: r.row["label"] for r in ranking.rows}
    order = {role: i for i, role in enumerate(ROLES)}
    # The ranking as shown: by role (a twin of the best after the runner-up), then by solve key.
    by_role = sorted((r.index for r in ranking.ranked), key=lambda i: order[ranking.roles[i]])
    ranks = {i: place for place, i in enumerate(by_role)}
    out = []
    for r in ranking.rows:
        row, role = r.row, ranking.roles[r.index]
        best = role == "recommended"
        out.append(
            {
                S.CONFIG_ID: row[S.CONFIG_ID],
                "label": row["label"],
                C.ROLE: role,
                C.RANK: ranks.get(r.index),
                C.FAILED: [c.name for c in r.failed],
                C.REASONS: _reasons(r, ranking, rule),
                C.OVERRIDES: launch_overrides(row, plain_off(row)),
                C.YAML: launch_yaml(row, plain_off(row)),
                S.SHAPING_OFF: plain_off(row),
                **{name: row.get(name) for name in RULE_READS},
                C.FORECAST_STEPS: row.get(C.FORECAST_STEPS),
                C.WON_SHARE: sure.won.get(r.index),
                C.SET_SHARE: sure.set_share if best else None,
                C.ALIKE: [labels[j] for j in sure.alike] if best else [],
                C.BEST_TRADE: ranking.trade == r.index,
                C.TRADE: trade_text(row) if _tradeable(r, rule) else None,
                C.BUDGET_CHECK: ranking.checked if best else None,
            }
        )
    out.sort(key=lambda r: (order[r[C.ROLE]], r[C.RANK] if r[C.RANK] is not None else len(out)))
    return pl.DataFrame(out, schema=SCHEMA) if out else pl.DataFrame(schema=SCHEMA)


def _scarcity(rows: list[Judged], rule: Rule) -> str | None:
    """Why the data cannot decide (None where it can): fewer problems than `min_problems` in the
    forecast, or intervals so wide that even a shaped config at parity with shaping off could not
    show the bar of a resolve criterion: the narrowest interval's lower half-width (`rule.width`)
    above 1 − the highest bar. The number of problems needed scales with the width squared."""
    if not rows:
        return None
    first = rows[0].row
    n = first.get(C.FORECAST_PROBLEMS_SAMPLED) or first.get(C.FORECAST_PROBLEMS)
    if n is None:
        return None
    n = int(n)
    if n < rule.min_problems:
        return (
            f"not enough data to decide: the forecast rests on {n} problems, and the rule needs "
            f'at least {rule.min_problems} (docs/report.md, "Small data")'
        )
    criteria = resolve_criteria()
    margin = 1.0 - max(c.least(rule) for c in criteria)
    widths = []
    for r in rows:
        if r.off or any(c.static for c in r.failed):
            continue
        halves = [w for c in criteria if (w := width(r.row, c.scope)) is not None]
        if halves:
            widths.append(max(halves))
    if not widths or margin <= 0 or min(widths) <= margin:
        return None
    width_ = min(widths)
    needed = math.ceil(n * (width_ / margin) ** 2 / 10) * 10
    return (
        f"not enough data to decide: after T steps the resolve rate against shaping off's is "
        f"known only to −{pct(width_)} (the narrowest interval's low side, {n} problems), and "
        f"telling the rule's {pct(1 - margin)} from parity needs −{pct(margin)}: about "
        f"{needed:,} problems would be needed"
    )


def _budget_check(summary: pl.DataFrame, rule: Rule, best_id: str | None) -> str | None:
    """Whether the rule, applied again to each check's columns, still picks the recommendation at
    half and twice the step budget and horizon T (None without the budgets' forecasts); a check
    too wide to decide (`_scarcity`) says so, which is no config failing the rule."""
    steps = int(summary[C.FORECAST_STEPS][0] or 0) if C.FORECAST_STEPS in summary.columns else 0
    halfway, twice = max(1, steps // 2), 2 * steps  # as the forecast reads them
    # The catalogue's words, and the step checks' with the step numbers they ran at.
    where = {
        **dict(C.CHECKS),
        "half_steps": f"after {halfway} steps",
        "twice_steps": f"after {twice} steps",
    }
    ran = [
        check
        for check, _ in C.CHECKS
        if all(C.at_check(name, check) in summary.columns for name in RULE_READS)
    ]
    if not {"half", "twice"} <= set(ran):
        return None
    off, rows = _reference(summary), list(summary.iter_rows(named=True))
    moved, held = [], []
    for check in ran:
        views = ({**row, **{n: row[C.at_check(n, check)] for n in RULE_READS}} for row in rows)
        there = _rank(judge_rows(views, off, rule), rule)
        if not there.ranked and "unrated" in there.roles.values():
            moved.append(f"{where[check]} there is not enough data to decide")
        elif not there.ranked:
            moved.append(f"{where[check]} no config passes the rule")
        elif there.ranked[0].row[S.CONFIG_ID] != best_id:
            moved.append(f"{where[check]} the rule would pick '{there.ranked[0].row['label']}'")
        else:
            held.append(check)
    said = _checks_text(held, halfway, twice)
    if not moved:
        return f"the verdict holds {said}"
    return "; ".join(moved) + (f"; the rule still picks it {said}" if held else "")


def _checks_text(checks: list[str], halfway: int, twice: int) -> str:
    """The checks in words: 'at half and at twice the step budget and after 25 and 100 steps'."""
    budgets = [c for c in checks if c in ("half", "twice")]
    steps = [
        {"half_steps": halfway, "twice_steps": twice}[c] for c in checks if c.endswith("_steps")
    ]
    parts = [" and ".join(f"at {c}" for c in budgets) + " the step budget"] if budgets else []
    if steps:
        parts.append("after " + " and ".join(str(n) for n in steps) + " steps")
    return " and ".join(parts)


def _tradeable(r: Judged, rule: Rule) -> bool:
    """A shaped config that fails nothing but the resolve criteria, makes successes faster by
    at least the rule's `min_faster` and keeps at least 1 − `max_trade_cost` of shaping off's
    resolve rate after T steps: a trade a user may accept knowingly."""
    return (
        not r.off
        and bool(r.failed)
        and not any(c.static for c in r.failed)
        and _gain(r.row, rule) < 0
        and r.row.get(C.F_RESOLVE_VS_OFF) is not None
        and _kept_least(r.row) >= 1 - rule.max_trade_cost
    )


def _best_trade(rows: list[Judged], rule: Rule) -> int | None:
    """The tradeable config that keeps the most resolve rate (the lower over the resolve
    criteria's scopes), ties to the larger solve-minute gain."""
    offers = [
        (_kept_least(r.row), -_gain(r.row), -r.index, r.index) for r in rows if _tradeable(r, rule)
    ]
    return max(offers)[3] if offers else None


def _kept_least(row: dict[str, Any]) -> float:
    """The lower of the resolve ratios after T steps over the resolve criteria's scopes (overall
    and long problems; point values)."""
    points = (kept(row, c.scope, "point") for c in resolve_criteria())
    return min(p for p in points if p is not None)


def _unrated(summary: pl.DataFrame, why: str) -> pl.DataFrame:
    """Every config unrated, for the reason `why`."""
    rows = [
        Judged(i, row, (), plain_off(row)) for i, row in enumerate(summary.iter_rows(named=True))
    ]
    roles = {r.index: "unrated" for r in rows}
    return _table(Ranking(rows, roles, said=dict.fromkeys(roles, why), decided=False), Rule())


def undecided(verdict: pl.DataFrame) -> str | None:
    """Why the verdict decided nothing (no forecast, too little data: every config unrated or
    avoided for a failure that needs no forecast), else None."""
    if verdict.is_empty() or verdict.filter(pl.col(C.ROLE).is_in(ROLES[:3])).height:
        return None
    unrated = verdict.filter(pl.col(C.ROLE) == "unrated")
    if unrated.height:
        return unrated[C.REASONS][0]
    for why in verdict[C.REASONS].to_list():
        tail = why.rpartition(UNDECIDED)[2] if UNDECIDED in why else ""
        if tail.startswith(("not enough data to decide", NO_FORECAST, NO_TRAINING)):
            return tail
    return None


def near_misses(verdict: pl.DataFrame) -> pl.DataFrame:
    """Avoided configs that fail the fewest criteria (the ones to look at when nothing is
    eligible), with the criteria they fail."""
    avoided = verdict.filter(pl.col(C.ROLE) == "avoid")
    if avoided.is_empty():
        return avoided
    fewest = avoided[C.FAILED].list.len().min()
    return avoided.filter(pl.col(C.FAILED).list.len() == fewest)
