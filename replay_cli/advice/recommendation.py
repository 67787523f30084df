"""The one recommendation: which config to launch, which is the runner-up, which to avoid and why.

One documented rule decides it (docs/report.md, "The recommendation"), read from the summary
table's outcome at the horizon: the forecast's resolve rate and minutes after T training steps
(engine/forecast.py), each against shaping off's after the same T steps, with paired bootstrap
intervals over problems; every other part of the report reads its verdict (advice/verdict.py)
instead of deciding again.

* a config is **eligible** when it passes every criterion of `Rule`: launchable as replayed, no
  inversion that shaping introduces, no explosion left unbounded by the clip, the low end of the
  interval of its resolve rate after T steps at least 95% of shaping off's overall and on long
  problems, little signal from uncharged rows (failures that end sooner are a warning, not a
  criterion: what giving up costs is in the resolve rate);
* among the eligible, the **recommended** config makes successes fastest after T steps against
  shaping off (the most negative `forecast/solve_minutes_vs_off`; a gain under 1% of shaping
  off's minutes counts as none), ties going to the smaller lambda_time, then to shaping off,
  then to the config with fewer settings away from their defaults; the next that does not
  train exactly like it is the **runner-up**, the rest stay **eligible**;
* every other config is **avoid**, with each failed criterion and its number as the reason;
* without the forecast (`--no-forecast`), or with too few problems to tell the bar from
  parity, the configs that pass the other criteria are **unrated**, and the reason says so.

Shaping off competes under the same rule; when it wins, the verdict is to keep it, and the best
trade (the shaped config that keeps the most resolve rate while making successes faster,
failing nothing but the resolve criteria, and costing at most `max_trade_cost`) is named with
its numbers. The confidence of the pick is the share of bootstrap resamples in which the rule,
applied again with that resample's own interval ends, picks it or a config that trains alike
(`_confidence`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import yaml
from pydantic import BaseModel, ConfigDict, Field

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.words import NO_LONG_PROBLEMS, num, param_text, sooner_than_off
from replay_cli.catalogue.units import pct
from replay_cli.maths.thresholds import EXPLOSION, MINUTES_EPS
from replay_cli.parameters import registry

ROLES = ("recommended", "runner-up", "eligible", "avoid", "unrated")
"""`unrated`: what the rule reads is missing (no forecast, too few problems, or a report of an
earlier version); the reason says which."""
STATIC_NEEDED = (C.INTRODUCED, C.EXPLOSION_TRAINED, C.UNCHARGED_ONLY)
"""The summary columns the criteria that need no forecast read."""
NEEDED = (
    *STATIC_NEEDED,
    C.F_RESOLVE_VS_OFF,
    C.F_RESOLVE_VS_OFF_LONG,
    C.F_SOLVE_VS_OFF,
    C.F_SOLVE_OFF,
)
"""The summary columns the whole rule reads (the outcome at the horizon among them)."""
SAME_NUMBERS_NEEDED = ("trained_digest",)
"""Two configs are called the same only when they train on the same rows with the same rewards
and advantages (`trained_digest`, a hash of every training row's shaped reward, advantage after
the clip and loss mask, loss-masked rows included)."""
RULE_READS = (
    C.F_RESOLVE_VS_OFF,
    C.F_RESOLVE_VS_OFF_LOW,
    C.F_RESOLVE_VS_OFF_LONG,
    C.F_RESOLVE_VS_OFF_LOW_LONG,
    C.F_SOLVE_VS_OFF,
)
"""The numbers the rule reads, carried by the recommendation table under their summary names."""
SCHEMA = {
    S.CONFIG_ID: pl.String,
    "label": pl.String,
    "role": pl.String,
    "rank": pl.Int64,
    "failed": pl.List(pl.String),
    "reasons": pl.String,
    "overrides": pl.String,
    "yaml": pl.String,
    S.SHAPING_OFF: pl.Boolean,
    **dict.fromkeys(RULE_READS, pl.Float64),
    C.FORECAST_STEPS: pl.Float64,
    "won_share": pl.Float64,
    "set_share": pl.Float64,
    "alike": pl.List(pl.String),
    "best_trade": pl.Boolean,
    "trade": pl.String,
    "budget_check": pl.String,
}
"""`won_share`: the share of resamples in which the rule picks the config; `set_share` (the
recommended row only): the share in which it picks the config or one of `alike`, the eligible
configs that train like it within the interval, an estimate of how often a new log of the
same size gives the same pick."""


def shaping_off(summary: pl.DataFrame) -> pl.Series:
    """Configs that leave every reward as it is: shaping disabled, or lambda 0 with no bonus
    and no floor."""
    return summary.select(
        ~pl.col("enabled")
        | (
            (pl.col("lambda_time") == 0)
            & (pl.col("lambda_call_bonus") == 0)
            & pl.col("floor").is_null()
        )
    ).to_series()


class Rule(BaseModel):
    """The thresholds of the recommendation; each can be changed (`judge(summary, rule=Rule(...))`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_resolve_vs_off: float = Field(
        0.95,
        description="the low end of the interval of the resolve rate after T steps, as a share "
        "of shaping off's after T steps, over all problems (forecast/resolve_vs_off_low)",
    )
    min_resolve_vs_off_long: float = Field(
        0.95, description="the same on long problems (forecast/resolve_vs_off_low@long)"
    )
    max_fail_faster: float = Field(
        0.05,
        description="not a criterion: the fail_faster warning's threshold, how much sooner than "
        "under shaping off failures may end after T steps as a share of shaping off's mean "
        "minutes of a failure then (what giving up costs is in the resolve rate the rule reads)",
    )
    min_faster: float = Field(
        0.01,
        description="how much faster than under shaping off successes must end after T steps, "
        "as a share of shaping off's mean minutes of a success then, to count as faster at all "
        "(a smaller change, such as a rounding-sized λ's, ties with shaping off)",
    )
    max_uncharged_only: float = Field(
        0.01, description="the share of groups with signal only from uncharged rows, at most"
    )
    require_launchable: bool = Field(
        True,
        description="only configs NeMo-RL can run as they are: the PR's semantics and its own "
        "GRPO estimator (the launch overrides would run something else)",
    )
    max_trade_cost: float = Field(
        0.10,
        description="where shaping off is kept, a best trade is offered only when it keeps at "
        "least 1 − this of shaping off's resolve rate after T steps (overall and long)",
    )
    min_problems: int = Field(
        50,
        ge=1,
        description="below this many problems in the forecast, the verdict is 'not enough "
        "data to decide'",
    )
    alike_level: float = Field(
        0.90,
        gt=0,
        lt=1,
        description="two eligible configs train alike when the interval at this level of "
        "each difference the rule reads (resolve on long problems, solve minutes) holds 0",
    )

    def bars(self) -> C.Bars:
        """The thresholds the catalogue marks summary cells by."""
        return C.Bars(resolve=self.min_resolve_vs_off, fail_share=self.max_fail_faster)

    def fail_limit(self, row: dict[str, Any]) -> float:
        """Minutes by which failures may end sooner than under shaping off after T steps."""
        return self.bars().fail_limit(row)

    def faster_limit(self, row: dict[str, Any]) -> float:
        """The smallest solve-minute gain after T steps that counts."""
        return self.min_faster * num(row, C.F_SOLVE_OFF)

    def summary_text(self) -> str:
        """The rule in one sentence, with its thresholds (the page and the terminal print it)."""
        return (
            "eligible: launchable as replayed, no inversion that shaping introduces, no "
            f"|advantage| above {EXPLOSION:g} left after the clip, a resolve rate after T "
            f"training steps of at least {pct(self.min_resolve_vs_off)} of shaping off's (low "
            f"end of the interval) overall and {pct(self.min_resolve_vs_off_long)} on long "
            f"problems, signal from uncharged rows in at most "
            f"{pct(self.max_uncharged_only)} of groups; among those, the one that makes "
            "successes fastest after T steps against shaping off wins (ties: the smaller λ, "
            "then shaping off)"
        )


@dataclass(frozen=True)
class Criterion:
    """One test of the rule: its name, whether a summary row passes, and the sentence that says
    why a row fails (with its number)."""

    name: str
    passes: Callable[[dict[str, Any], Rule], bool]
    why: Callable[[dict[str, Any], Rule], str]


def _kept(row: dict[str, Any], where: str, least: float) -> bool:
    """The resolve rate after T steps keeps `least` of shaping off's at the low end of its
    interval (the point value where no interval was computed); where shaping off resolves
    nothing (the ratio is null), it may not fall below shaping off's."""
    low = row.get(C.bound(C.F_RESOLVE_VS_OFF, "low", where))
    ratio = row.get(C.scoped(C.F_RESOLVE_VS_OFF, where))
    if ratio is not None:
        return float(low if low is not None else ratio) >= least
    on, off = num(row, C.scoped(C.F_RESOLVE, where)), num(row, C.scoped(C.F_RESOLVE_OFF, where))
    return on >= off - 1e-12


def horizon_text(row: dict[str, Any], where: str = "@long") -> str:
    """The outcome at the horizon in the one wording every surface uses, a predicate for 'it
    ...' or "'label' ...": 'ends at 50.7% resolved on long problems after 50 steps, 97.5% of
    shaping off's 52.0% (it keeps +12.8 of shaping off's +14.1 points)'; 'has no outcome on long
    problems (no long problems in this input)' where there is none."""
    on = row.get(C.scoped(C.F_RESOLVE, where))
    off = row.get(C.scoped(C.F_RESOLVE_OFF, where))
    start = row.get(C.scoped(C.F_RESOLVE_START, where))
    ratio = row.get(C.scoped(C.F_RESOLVE_VS_OFF, where))
    scope = " on long problems" if where == "@long" else ""
    if on is None or off is None:
        return f"has no outcome{scope} ({NO_LONG_PROBLEMS})" if where else "has no forecast"
    against = f"{pct_ratio(ratio)} of " if ratio is not None else "against "
    text = (
        f"ends at {_rate(on)} resolved{scope} after {num(row, C.FORECAST_STEPS):.0f} steps, "
        f"{against}shaping off's {_rate(off)}"
    )
    if start is not None:
        text += (
            f" (it keeps {_points(on - start)} of shaping off's {_points(off - start)} points)"
            if off - start > 1e-12
            else f" (shaping off moves it {_points(off - start)} points)"
        )
    return text


def _rate(x: float) -> str:
    return f"{x:.1%}"


def pct_ratio(x: float | None) -> str:
    """A ratio to shaping off's for a sentence (one decimal, as the tables show it)."""
    return C.show_value("ratio", x)


def _points(x: float) -> str:
    """A change of a probability in percentage points, one decimal."""
    return f"{x * 100:+.1f}".replace("-", "−")


def _kept_text(row: dict[str, Any], where: str, least: float) -> str:
    low = row.get(C.bound(C.F_RESOLVE_VS_OFF, "low", where))
    ratio = row.get(C.scoped(C.F_RESOLVE_VS_OFF, where))
    interval = f"; low end of its interval {pct_ratio(low)}" if low is not None else ""
    if ratio is None:
        return f"{horizon_text(row, where)}, below shaping off's"
    return f"{horizon_text(row, where)}{interval}, needs {pct(least)}"


def _launchable(row: dict[str, Any]) -> bool:
    return row.get("semantics", "nemo-rl") == "nemo-rl" and row.get("estimator", "grpo") == "grpo"


STATIC_CRITERIA = (
    Criterion(
        "launchable",
        lambda r, rule: not rule.require_launchable or _launchable(r),
        lambda r, _: (
            f"NeMo-RL cannot launch it as replayed (semantics {r.get('semantics')}, "
            f"estimator {r.get('estimator')})"
        ),
    ),
    Criterion(
        "inversion",
        lambda r, _: num(r, C.INTRODUCED) == 0,
        lambda r, _: (
            f"shaping puts a resolved rollout below an unresolved one in "
            f"{pct(num(r, C.INTRODUCED))} of groups"
        ),
    ),
    Criterion(
        "explosion",
        lambda r, _: num(r, C.EXPLOSION_TRAINED) == 0,
        lambda r, _: (
            f"{pct(num(r, C.EXPLOSION_TRAINED))} of trained rows keep "
            f"|advantage| > {EXPLOSION:g} (up to {num(r, C.ABS_MAX):.4g}): clip to "
            f"[-{EXPLOSION:g}, {EXPLOSION:g}]"
        ),
    ),
    Criterion(
        "uncharged_only",
        lambda r, rule: num(r, C.UNCHARGED_ONLY) <= rule.max_uncharged_only,
        lambda r, rule: (
            f"{pct(num(r, C.UNCHARGED_ONLY))} of groups get signal only "
            f"from rows that were not charged (limit {pct(rule.max_uncharged_only)})"
        ),
    ),
)
HORIZON_CRITERIA = (
    Criterion(
        "resolve",
        lambda r, rule: _kept(r, "", rule.min_resolve_vs_off),
        lambda r, rule: f"it {_kept_text(r, '', rule.min_resolve_vs_off)}",
    ),
    Criterion(
        "resolve_long",
        lambda r, rule: _kept(r, "@long", rule.min_resolve_vs_off_long),
        lambda r, rule: f"it {_kept_text(r, '@long', rule.min_resolve_vs_off_long)}",
    ),
)
CRITERIA = (*STATIC_CRITERIA[:3], *HORIZON_CRITERIA, STATIC_CRITERIA[3])
"""Every criterion, in the order reasons list them."""
RESOLVE_CRITERIA = ("resolve", "resolve_long")
"""Criteria a config may fail and still be named as the best trade when shaping off is kept;
the confidence applies them again in each resample."""
NO_FORECAST = (
    "not judged on resolve rate: the summary has no outcome after T steps (the forecast did not "
    "run: drop --no-forecast, or replay a report of an earlier version again)"
)
NO_TRAINING = "nothing to judge: the input has no training group (every row is validation)"


def _override_value(name: str, value: Any) -> str:
    if name == "baseline":  # grpo.adv_estimator.use_leave_one_out_baseline
        return "true" if value == "loo" else "false"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _launch_values(row: dict[str, Any], is_off: bool) -> list[tuple[str, str, Any]]:
    """(parameter, trainer key, value) of every setting that launches a summary row's config:
    `grpo.time_efficiency.*` (only `enabled=false` for shaping off; all of them when shaping is
    on), and every other trainer setting that is not at its default (the clip, the estimator's
    baseline and normalisation, the mask switch). Emulation-only settings (std guard,
    precision) have no trainer key and are left out."""
    te = "grpo.time_efficiency."
    out = []
    for name, param in registry().items():
        if not param.trainer or name == "estimator" or name not in row:
            continue
        value, key = row[name], param.trainer[0]
        if key.startswith(te):
            if is_off:
                shown = name == "enabled"
                value = False if shown else value
            else:
                shown = name in ("enabled", "lambda_time", "apply_to") or value != param.default
        else:
            shown = value != param.default
        if shown and value is not None:
            out.append((name, key, value))
    return out


def launch_overrides(row: dict[str, Any], is_off: bool = False) -> str:
    """The NeMo-RL `++` overrides that launch a summary row's config (`_launch_values`)."""
    return " ".join(
        f"++{key}={_override_value(name, value)}"
        for name, key, value in _launch_values(row, is_off)
    )


def launch_yaml(row: dict[str, Any], is_off: bool = False) -> str:
    """The same settings as the block of the trainer's config file (`grpo: time_efficiency:
    ...`), values as YAML writes them (the exact float of λ)."""
    tree: dict[str, Any] = {}
    for name, key, value in _launch_values(row, is_off):
        *path, leaf = key.split(".")
        node = tree
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = (value == "loo") if name == "baseline" else value
    return yaml.safe_dump(tree, sort_keys=False)


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
    if value > MINUTES_EPS or -value > least:  # slower, or faster by enough to count
        return value
    return 0.0


def _solve_key(row: dict[str, Any], is_off: bool, rule: Rule) -> tuple[float, float, bool, int]:
    """Rank of an eligible config: successes made fastest first (a gain below the rule's
    `min_faster` counts as none), then the smaller lambda (shaping off counts as lambda 0), then
    shaping off, then the fewest settings away from their defaults (the simpler launch)."""
    return (
        0.0 if is_off else _gain(row, rule),  # shaping off against itself: no change
        0.0 if is_off else num(row, "lambda_time"),
        not is_off,
        len(_set_away(row)),
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


Row = tuple[int, dict[str, Any], list[Criterion], bool]
"""(position in the summary, summary row, failed criteria, shaping off)."""


def recommend(
    summary: pl.DataFrame,
    rule: Rule | None = None,
    resamples: pl.DataFrame | None = None,
    check_budgets: bool = True,
) -> pl.DataFrame:
    """The verdict: one row per config (config_id, label, role, rank, failed criteria, reasons
    with their numbers, launch overrides and YAML, the numbers the rule reads, the share of
    bootstrap resamples in which it would be recommended, the best trade), recommended first."""
    rule = rule or Rule()
    missing = [c for c in STATIC_NEEDED if c not in summary.columns]
    if missing:
        return _unrated(summary, missing)
    if C.GROUPS in summary.columns and summary.height and not (summary[C.GROUPS] > 0).any():
        return _unrated(summary, [], NO_TRAINING)
    judged = all(c in summary.columns for c in NEEDED)
    criteria = CRITERIA if judged else STATIC_CRITERIA
    off = shaping_off(summary).to_list() if summary.height else []
    rows: list[Row] = []
    for i, row in enumerate(summary.iter_rows(named=True)):
        failed = [c for c in criteria if not c.passes(row, rule)]
        rows.append((i, row, failed, off[i]))
    unrated_why = NO_FORECAST if not judged else _scarcity(rows, rule)
    if unrated_why is None:
        rows, unforecast = _without_outcome(rows)
    else:
        unforecast = {}
    if unrated_why is not None:
        # Nothing is ranked: what the rule would read cannot tell the bar from parity.
        static = [
            (i, row, [c for c in failed if c in STATIC_CRITERIA], o) for i, row, failed, o in rows
        ]
        return _table(static, {}, {}, rule, unrated_why=unrated_why)
    eligible = sorted(
        (r for r in rows if not r[2] and r[0] not in unforecast),
        key=lambda r: (*_solve_key(r[1], r[3], rule), r[0]),
    )
    roles: dict[int, str] = {}
    same_as_best: dict[int, str] = {}
    best = eligible[0][1] if eligible else {}
    for place, (i, row, *_) in enumerate(eligible):
        if place == 0:
            roles[i] = "recommended"
        elif _same_numbers(row, best):
            roles[i] = "eligible"
            same_as_best[i] = (
                f"no alternative to the recommended '{best['label']}': it differs only in "
                f"{_differs_in(row, best)} and trains on the same rewards and advantages"
            )
        else:
            roles[i] = "eligible" if "runner-up" in roles.values() else "runner-up"
    keep_off = bool(eligible) and eligible[0][3]
    trade = _best_trade(rows, rule) if keep_off or not eligible else None
    best_id = best.get(S.CONFIG_ID)
    checked = _budget_check(summary, rule, best_id) if check_budgets and eligible else None
    pick = eligible[0][0] if eligible else None
    confidence = _confidence(rows, rule, resamples, pick, [i for i, *_ in eligible])
    extra = {
        "trade": trade,
        "checked": checked,
        "same_as_best": same_as_best,
        "confidence": confidence,
        "ranked": eligible,
    }
    extra["unforecast"] = unforecast
    return _table(rows, roles, extra, rule)


def _without_outcome(rows: list[Row]) -> tuple[list[Row], dict[int, str]]:
    """The rows the forecast has an outcome for, and per row it has none for (its estimator
    refused the simulated groups) why; those are not ranked, only their static failures count."""
    kept, why = [], {}
    for i, row, failed, is_off in rows:
        if row.get(C.F_RESOLVE) is None and not is_off:
            reason = row.get(C.FORECAST_REFUSED) or "the forecast has no outcome for it"
            why[i] = f"not judged on resolve rate: the forecast could not train it ({reason})"
            failed = [c for c in failed if c in STATIC_CRITERIA]
        kept.append((i, row, failed, is_off))
    return kept, why


def _table(
    rows: list[Row],
    roles: dict[int, str],
    extra: dict[str, Any],
    rule: Rule,
    unrated_why: str | None = None,
) -> pl.DataFrame:
    """The recommendation table of judged rows, recommended first."""
    same_as_best = extra.get("same_as_best", {})
    unforecast = extra.get("unforecast", {})
    won, alike, set_share = extra.get("confidence") or ({}, [], None)
    trade, checked = extra.get("trade"), extra.get("checked")
    labels = {i: row["label"] for i, row, *_ in rows}
    out = []
    for i, row, failed, is_off in rows:
        unrated = unrated_why or unforecast.get(i)
        role = roles.get(i, "avoid" if failed or unrated is None else "unrated")
        if failed:
            reasons = "; ".join(c.why(row, rule) for c in failed)
        elif role == "unrated":
            reasons = unrated or ""
        elif i in same_as_best:
            reasons = same_as_best[i]
        elif is_off:
            reasons = "shaping off: the reference every config is measured against"
        else:
            reasons = _why_eligible(row)
        out.append(
            {
                S.CONFIG_ID: row[S.CONFIG_ID],
                "label": row["label"],
                "role": role,
                "rank": None,
                "failed": [c.name for c in failed],
                "reasons": reasons,
                "overrides": launch_overrides(row, is_off),
                "yaml": launch_yaml(row, is_off),
                S.SHAPING_OFF: is_off,
                **{name: row.get(name) for name in RULE_READS},
                C.FORECAST_STEPS: row.get(C.FORECAST_STEPS),
                "won_share": won.get(i),
                "set_share": set_share if role == "recommended" else None,
                "alike": [labels[j] for j in alike] if role == "recommended" else [],
                "best_trade": trade == i,
                "trade": trade_text(row) if _tradeable(row, failed, is_off, rule) else None,
                "budget_check": checked if role == "recommended" else None,
            }
        )
    order = {role: i for i, role in enumerate(ROLES)}
    # The ranking as shown: by role (a twin of the best after the runner-up), then by solve key.
    by_role = sorted((i for i, *_ in extra.get("ranked", [])), key=lambda i: order[roles[i]])
    ranked = {i: place for place, i in enumerate(by_role)}
    for i, item in enumerate(out):
        item["rank"] = ranked.get(i)
    out.sort(key=lambda r: (order[r["role"]], r["rank"] if r["rank"] is not None else len(out)))
    return pl.DataFrame(out, schema=SCHEMA) if out else pl.DataFrame(schema=SCHEMA)


def _scarcity(rows: list[Row], rule: Rule) -> str | None:
    """Why the data cannot decide (None where it can): fewer problems than `min_problems` in
    the forecast, or intervals so wide that even a shaped config at parity with shaping off
    could not show the rule's bar: the narrowest interval's lower half-width above
    1 − min_resolve_vs_off. The number of problems needed scales with the width squared."""
    if not rows:
        return None
    first = rows[0][1]
    n = first.get(C.FORECAST_PROBLEMS_SAMPLED) or first.get(C.FORECAST_PROBLEMS)
    if n is None:
        return None
    n = int(n)
    if n < rule.min_problems:
        return (
            f"not enough data to decide: the forecast rests on {n} problems, and the rule needs "
            f'at least {rule.min_problems} (docs/report.md, "Small data")'
        )
    margin = 1.0 - max(rule.min_resolve_vs_off, rule.min_resolve_vs_off_long)
    widths = []
    for _, row, failed, is_off in rows:
        if is_off or any(c in STATIC_CRITERIA for c in failed):
            continue
        halves = [
            row[C.scoped(C.F_RESOLVE_VS_OFF, w)] - row[C.bound(C.F_RESOLVE_VS_OFF, "low", w)]
            for w in ("", "@long")
            if row.get(C.scoped(C.F_RESOLVE_VS_OFF, w)) is not None
            and row.get(C.bound(C.F_RESOLVE_VS_OFF, "low", w)) is not None
        ]
        if halves:
            widths.append(max(halves))
    if not widths or margin <= 0 or min(widths) <= margin:
        return None
    width = min(widths)
    needed = math.ceil(n * (width / margin) ** 2 / 10) * 10
    return (
        f"not enough data to decide: after T steps the resolve rate against shaping off's is "
        f"known only to −{pct(width)} (the narrowest interval's low side, {n} problems), and "
        f"telling the rule's {pct(1 - margin)} from parity needs −{pct(margin)}: about "
        f"{needed:,} problems would be needed"
    )


def _budget_check(summary: pl.DataFrame, rule: Rule, best_id: str | None) -> str | None:
    """Whether the recommendation holds when the forecast runs at half and at twice the step
    budget, and after half and twice the horizon T where the forecast ran those (None without
    the budgets' forecasts): the rule applied again to the outcome at those settings. Where its
    intervals there are too wide to decide (`_scarcity`), it says so: that is no config failing
    the rule."""
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
    moved = []
    for check in ran:
        columns = {C.at_check(name, check): name for name in RULE_READS}
        alt = summary.with_columns(pl.col(c).alias(name) for c, name in columns.items())
        table = recommend(alt, rule, check_budgets=False)
        first = table.filter(pl.col("role") == "recommended")
        other = first.row(0, named=True) if first.height else None
        if other is None and (table["role"] == "unrated").any():
            moved.append(f"{where[check]} there is not enough data to decide")
        elif other is None:
            moved.append(f"{where[check]} no config passes the rule")
        elif other[S.CONFIG_ID] != best_id:
            moved.append(f"{where[check]} the rule would pick '{other['label']}'")
    held = "the verdict holds at half and at twice the step budget"
    if {"half_steps", "twice_steps"} <= set(ran):
        held += f" and after {halfway} and {twice} steps"
    return "; ".join(moved) or held


def _tradeable(row: dict[str, Any], failed: list[Criterion], is_off: bool, rule: Rule) -> bool:
    """A shaped config that fails nothing but the resolve criteria, makes successes faster by
    at least the rule's `min_faster` and keeps at least 1 − `max_trade_cost` of shaping off's
    resolve rate after T steps: a trade a user may accept knowingly."""
    names = {c.name for c in failed}
    return (
        not is_off
        and bool(names)
        and names <= set(RESOLVE_CRITERIA)
        and _gain(row, rule) < 0
        and row.get(C.F_RESOLVE_VS_OFF) is not None
        and _kept_least(row) >= 1 - rule.max_trade_cost
    )


def _best_trade(rows: list[Row], rule: Rule) -> int | None:
    """The tradeable config that keeps the most resolve rate (the lower of overall and long
    problems), ties to the larger solve-minute gain."""
    offers = [
        (_kept_least(r), -_gain(r), -i, i)
        for i, r, failed, off in rows
        if _tradeable(r, failed, off, rule)
    ]
    return max(offers)[3] if offers else None


def _kept_least(row: dict[str, Any]) -> float:
    """The lower of the resolve ratios at T overall and on long problems (point values)."""
    long = row.get(C.F_RESOLVE_VS_OFF_LONG)
    overall = num(row, C.F_RESOLVE_VS_OFF)
    return overall if long is None else min(overall, float(long))


def _faster_text(row: dict[str, Any], column: str, what: str) -> str:
    """'successes end 1.1 min sooner than under shaping off' (or later, or as soon), by sign."""
    return f"{what} end {sooner_than_off(num(row, column))}"


def trade_text(row: dict[str, Any]) -> str:
    """What a config buys and what it costs after T steps against shaping off, in words."""
    return (
        f"'{row['label']}': {_faster_text(row, C.F_SOLVE_VS_OFF, 'successes')} after "
        f"{num(row, C.FORECAST_STEPS):.0f} steps, and it {horizon_text(row, '@long')}; over all "
        f"problems it keeps {pct_ratio(row.get(C.F_RESOLVE_VS_OFF))} of shaping off's resolve rate"
    )


PREDICTIVE = 2.0
"""How much wider a new log's spread around this log's value is taken to be than the bootstrap's.
A new log carries its own noise on top of this one's (√2 under a flat prior), but the stated
share is read for the config this log picked: where the truth sits at the bar (a coin flip
between two configs, repeat rate 50%), √2 states 70% on average, and any spread states more than
50%. In that two-way normal model the mean stated share minus the repeat rate is +20 points at
√2 and ±15 at 2, the spread that minimises the worst case over every distance from the bar (it
understates clear picks by up to 14 points); docs/report.md, "Confidence"."""


def _confidence(
    rows: list[Row],
    rule: Rule,
    resamples: pl.DataFrame | None,
    pick: int | None,
    eligible: list[int],
) -> tuple[dict[int, float], list[int], float | None] | None:
    """How sure the pick is, from the forecast's paired bootstrap over problems: each resample
    stands for a new log of the same size (its deviation from this log's value scaled by
    `PREDICTIVE`, since a new log carries its own noise on top of this one's), and the rule is
    applied again with that log's own interval ends (its values shifted down by the width the
    interval has here: a new log sees its own point and about the same width), so `won_share`
    estimates how often a new log picks each config. Eligible configs whose differences to the pick (resolve rate on long problems,
    solve minutes) hold 0 within the `alike_level` interval train alike: the confidence of the
    pick is the share of resamples that pick it or one of them (`set_share`)."""
    names = (C.F_RESOLVE_VS_OFF, C.F_RESOLVE_VS_OFF_LONG, C.F_SOLVE_VS_OFF)
    if resamples is None or resamples.is_empty():
        return None
    if any(name not in resamples.columns for name in names):
        return None
    ids = [r[S.CONFIG_ID] for _, r, *_ in rows]
    wide = {
        name: resamples.pivot(on=S.CONFIG_ID, index="resample", values=name)
        .select(ids)
        .to_numpy()
        .astype(np.float64)
        for name in names
    }
    n = len(rows)
    # A new log's value differs from this log's by two logs' sampling noise, not one, and the
    # pick is the one this log favoured: each resample's deviation from the point is scaled by
    # PREDICTIVE.
    for name in names:
        point = np.array([_nan(r.get(name)) for _, r, *_ in rows])
        spread = PREDICTIVE * (wide[name] - point)
        wide[name] = np.where(np.isfinite(point), point + spread, wide[name])
    is_off = np.array([o for *_, o in rows])
    static = np.array([all(c.name in RESOLVE_CRITERIA for c in failed) for _, _, failed, _ in rows])

    def kept(where: str, least: float, name: str) -> np.ndarray:
        point = np.array([_nan(r.get(C.scoped(C.F_RESOLVE_VS_OFF, where))) for _, r, *_ in rows])
        low = np.array(
            [_nan(r.get(C.bound(C.F_RESOLVE_VS_OFF, "low", where))) for _, r, *_ in rows]
        )
        shift = np.where(np.isfinite(low), point - low, 0.0)
        fixed = np.array([_kept(r, where, least) for _, r, *_ in rows])
        with np.errstate(invalid="ignore"):
            passes = (wide[name] - shift) >= least
        return is_off | np.where(np.isfinite(point), passes, fixed)

    with np.errstate(invalid="ignore"):
        ok = (
            static
            & kept("", rule.min_resolve_vs_off, C.F_RESOLVE_VS_OFF)
            & kept("@long", rule.min_resolve_vs_off_long, C.F_RESOLVE_VS_OFF_LONG)
        )
    gain = wide[C.F_SOLVE_VS_OFF]
    least = np.array([max(MINUTES_EPS, rule.faster_limit(r)) for _, r, *_ in rows])
    small = (np.abs(gain) <= MINUTES_EPS) | ((gain < 0) & (-gain <= least))
    gain = np.where(is_off | small | ~np.isfinite(gain), 0.0, gain)
    # Ties as the rule breaks them: the point ranking's order of the other keys.
    order = sorted(range(n), key=lambda i: (*_solve_key(rows[i][1], rows[i][3], rule)[1:], i))
    tie_rank = np.empty(n)
    tie_rank[order] = np.arange(n)
    first = np.lexsort((np.broadcast_to(tie_rank, gain.shape), np.where(ok, gain, np.inf)), axis=-1)
    winner = first[:, 0]
    counted = ok[np.arange(len(winner)), winner]
    counts = np.bincount(winner[counted], minlength=n)
    total = gain.shape[0]
    won = {i: float(counts[i] / total) for i in range(n)}
    if pick is None:
        return won, [], None
    lo_q, hi_q = (1 - rule.alike_level) / 2, (1 + rule.alike_level) / 2
    alike = []
    for j in eligible:
        if j == pick:
            continue
        holds = True
        for name in (C.F_RESOLVE_VS_OFF_LONG, C.F_SOLVE_VS_OFF):
            d = wide[name][:, j] - wide[name][:, pick]
            d = d[np.isfinite(d)]
            if len(d) and not (np.quantile(d, lo_q) <= 0 <= np.quantile(d, hi_q)):
                holds = False
        if holds:
            alike.append(j)
    in_set = np.isin(winner, [pick, *alike]) & counted
    return won, alike, float(in_set.mean())


def _nan(x: Any) -> float:
    return float("nan") if x is None else float(x)


def _unrated(summary: pl.DataFrame, missing: list[str], why: str | None = None) -> pl.DataFrame:
    """Every config unrated: the report was written before the columns the rule reads (or `why`
    says another reason)."""
    why = why or (
        f"this report was written before the recommendation rule (no {', '.join(missing[:3])}"
        f"{', …' if len(missing) > 3 else ''}): replay it with this version to rate it"
    )
    off = shaping_off(summary).to_list() if summary.height and "enabled" in summary.columns else []
    rows = [
        (i, row, [], bool(off[i]) if off else False)
        for i, row in enumerate(summary.iter_rows(named=True))
    ]
    return _table(rows, {}, {}, Rule(), unrated_why=why)


def _why_eligible(row: dict[str, Any]) -> str:
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
        f"{num(row, C.FORECAST_STEPS):.0f} steps; it {horizon_text(row, '@long')}, {kept}; "
        f"{_faster_text(row, C.F_FAIL_VS_OFF, 'failures')}; no introduced inversion or "
        "unbounded explosion"
    )


def near_misses(verdict: pl.DataFrame) -> pl.DataFrame:
    """Avoided configs that fail the fewest criteria (the ones to look at when nothing is
    eligible), with the criteria they fail."""
    avoided = verdict.filter(pl.col("role") == "avoid")
    if avoided.is_empty():
        return avoided
    fewest = avoided["failed"].list.len().min()
    return avoided.filter(pl.col("failed").list.len() == fewest)
