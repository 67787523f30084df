"""The one recommendation: which config to launch, which is the runner-up, which to avoid and why.

One documented rule decides it (docs/report.md, "The recommendation"), read from the summary
table alone, and every other part of the report (findings, index.html, both frontiers, the step
curves' highlights, the terminal) reads its verdict instead of deciding again:

* a config is **eligible** when it passes every criterion of `Rule` (no inversion that shaping
  introduces, no explosion left unbounded by the clip, resolve push kept overall and on long
  problems, no fail-faster push, little signal from uncharged rows);
* among the eligible, the **recommended** config teaches solving faster most strongly (the most
  negative `push/minutes_pass`), ties going to the smaller lambda_time, then to shaping off, then
  to the config with fewer settings away from their defaults; the next that does not give the
  recommended config's numbers on every summary metric is the **runner-up** (a config that does,
  such as one whose floor never binds, is no alternative to it), the rest stay **eligible**;
* every other config is **avoid**, with each failed criterion and its number as the reason.

Shaping off competes under the same rule: when it wins, the advice is to keep shaping off.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from replay_cli import schema as S
from replay_cli.advice.words import NO_LONG_PROBLEMS, num, param_text, pct, push_text
from replay_cli.maths.thresholds import EXPLOSION, PUSH_EPS
from replay_cli.parameters import registry

ROLES = ("recommended", "runner-up", "eligible", "avoid", "unrated")
"""`unrated`: the summary predates the columns the rule reads (a report of an earlier version)."""
NEEDED = (
    "inversion/introduced_group_rate",
    "adv/explosion_trained_frac",
    "push/resolve",
    "push/resolve_off",
    "push/resolve@long",
    "push/resolve_off@long",
    "push/minutes_fail",
    "push/minutes_pass",
    "signal/uncharged_only_rate",
)
"""The summary columns the rule reads."""
SAME_NUMBERS_NEEDED = (
    "total_reward/mean",
    "advantages/mean",
    "adv/std",
    "adv/min",
    "adv/max",
    "adv/p50",
    "signal/group_rate",
    "time_efficiency/deduction/mean",
)
"""Two configs are called the same only when the summary has at least these (what the shaped
rewards and their advantages look like) and every metric column is equal."""
SCHEMA = {
    S.CONFIG_ID: pl.String,
    "label": pl.String,
    "role": pl.String,
    "rank": pl.Int64,
    "failed": pl.List(pl.String),
    "reasons": pl.String,
    "overrides": pl.String,
    "solve_push": pl.Float64,
}


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
    """The thresholds of the recommendation; each can be changed (`recommend(summary, Rule(...))`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_resolve_vs_off: float = Field(
        0.95, description="push/resolve at least this share of shaping off's, over all groups"
    )
    min_resolve_vs_off_long: float = Field(
        0.95, description="the same on long problems (push/resolve_vs_off@long)"
    )
    max_fail_faster: float = Field(
        0.05,
        description="-push/minutes_fail at most this (advantage × minutes per group): how hard "
        "failures are taught to give up sooner",
    )
    max_uncharged_only: float = Field(
        0.01, description="signal/uncharged_only_rate at most this share of groups"
    )
    require_launchable: bool = Field(
        True,
        description="only configs NeMo-RL can run as they are: the PR's semantics and its own "
        "GRPO estimator (the launch overrides would run something else)",
    )


@dataclass(frozen=True)
class Criterion:
    """One test of the rule: its name, whether a summary row passes, and the sentence that says
    why a row fails (with its number)."""

    name: str
    passes: Callable[[dict[str, Any], Rule], bool]
    why: Callable[[dict[str, Any], Rule], str]


def _kept(row: dict[str, Any], where: str, least: float) -> bool:
    """The resolve push keeps `least` of shaping off's; where shaping off has none to keep (its
    push is not positive, the ratio is null), it may not fall below shaping off's."""
    ratio = row.get(f"push/resolve_vs_off{where}")
    if ratio is not None:
        return float(ratio) >= least
    return num(row, f"push/resolve{where}") >= num(row, f"push/resolve_off{where}") - PUSH_EPS


def _kept_text(row: dict[str, Any], where: str, least: float) -> str:
    ratio = row.get(f"push/resolve_vs_off{where}")
    if ratio is not None:
        return f"{pct(float(ratio))} of shaping off's (needs {pct(least)})"
    return (
        f"{push_text(num(row, f'push/resolve{where}'))}, below shaping off's "
        f"{push_text(num(row, f'push/resolve_off{where}'))}"
    )


CRITERIA = (
    Criterion(
        "launchable",
        lambda r, rule: (
            not rule.require_launchable
            or (r.get("semantics", "nemo-rl") == "nemo-rl" and r.get("estimator", "grpo") == "grpo")
        ),
        lambda r, _: (
            f"NeMo-RL cannot launch it as replayed (semantics {r.get('semantics')}, "
            f"estimator {r.get('estimator')})"
        ),
    ),
    Criterion(
        "inversion",
        lambda r, _: num(r, "inversion/introduced_group_rate") == 0,
        lambda r, _: (
            f"shaping puts a resolved rollout below an unresolved one in "
            f"{pct(num(r, 'inversion/introduced_group_rate'))} of groups"
        ),
    ),
    Criterion(
        "explosion",
        lambda r, _: num(r, "adv/explosion_trained_frac") == 0,
        lambda r, _: (
            f"{pct(num(r, 'adv/explosion_trained_frac'))} of trained rows keep "
            f"|advantage| > {EXPLOSION:g} (up to {num(r, 'adv/abs_max'):.4g}): clip to "
            f"[-{EXPLOSION:g}, {EXPLOSION:g}]"
        ),
    ),
    Criterion(
        "resolve",
        lambda r, rule: _kept(r, "", rule.min_resolve_vs_off),
        lambda r, rule: f"resolve push is {_kept_text(r, '', rule.min_resolve_vs_off)}",
    ),
    Criterion(
        "resolve_long",
        lambda r, rule: _kept(r, "@long", rule.min_resolve_vs_off_long),
        lambda r, rule: (
            f"resolve push on long problems is {_kept_text(r, '@long', rule.min_resolve_vs_off_long)}"
        ),
    ),
    Criterion(
        "fail_faster",
        lambda r, rule: -num(r, "push/minutes_fail") <= rule.max_fail_faster,
        lambda r, rule: (
            f"teaches failures to give up sooner (fail-time push "
            f"{num(r, 'push/minutes_fail'):.3g}, limit -{rule.max_fail_faster:g})"
        ),
    ),
    Criterion(
        "uncharged_only",
        lambda r, rule: num(r, "signal/uncharged_only_rate") <= rule.max_uncharged_only,
        lambda r, rule: (
            f"{pct(num(r, 'signal/uncharged_only_rate'))} of groups get signal only "
            f"from rows that were not charged (limit {pct(rule.max_uncharged_only)})"
        ),
    ),
)


def _override_value(name: str, value: Any) -> str:
    if name == "baseline":  # grpo.adv_estimator.use_leave_one_out_baseline
        return "true" if value == "loo" else "false"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def launch_overrides(row: dict[str, Any]) -> str:
    """The NeMo-RL overrides that launch a summary row's config: `++grpo.time_efficiency.*` (all
    of them when shaping is on), and every other trainer setting that is not at its default
    (`++grpo.advantage_clip_*`, the estimator's baseline and normalisation, the mask switch).
    Emulation-only settings (std guard, precision) have no trainer key and are left out."""
    te = "grpo.time_efficiency."
    parts = []
    for name, param in registry().items():
        if not param.trainer or name == "estimator" or name not in row:
            continue
        value, key = row[name], param.trainer[0]
        if key.startswith(te):
            shown = name == "enabled" or (
                row["enabled"] and (name in ("lambda_time", "apply_to") or value != param.default)
            )
        else:
            shown = value != param.default
        if shown and value is not None:
            parts.append(f"++{key}={_override_value(name, value)}")
    return " ".join(parts)


def _set_away(row: dict[str, Any]) -> list[str]:
    """The parameters (besides lambda_time) a config sets away from their defaults."""
    return [
        name
        for name, param in registry().items()
        if name in row and name != "lambda_time" and row[name] != param.default
    ]


def _solve_key(row: dict[str, Any], is_off: bool) -> tuple[float, float, bool, int]:
    """Rank of an eligible config: the strongest solve-faster push first (pushes within PUSH_EPS
    of 0 count as 0), then the smaller lambda (shaping off counts as lambda 0), then shaping off,
    then the fewest settings away from their defaults (the simpler launch)."""
    push = num(row, "push/minutes_pass")
    return (
        push if abs(push) > PUSH_EPS else 0.0,
        0.0 if is_off else num(row, "lambda_time"),
        not is_off,
        len(_set_away(row)),
    )


def _same_numbers(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two summary rows hold the same value in every metric column (NaN equal to NaN),
    and the summary has the columns that describe the shaped rewards and advantages."""
    if any(c not in a for c in SAME_NUMBERS_NEEDED):
        return False
    params = registry()
    for column, value in a.items():
        if column in params or column in (S.CONFIG_ID, "label"):
            continue
        other = b.get(column)
        both_nan = isinstance(value, float) and isinstance(other, float)
        if not (value == other or (both_nan and math.isnan(value) and math.isnan(other))):
            return False
    return True


def _differs_in(row: dict[str, Any], base: dict[str, Any]) -> str:
    """The parameters in which `row` differs from `base`, as `name=value`."""
    names = [n for n in registry() if n in row and row[n] != base.get(n)]
    return " ".join(f"{n}={param_text(n, row[n])}" for n in names) or "no parameter"


def recommend(summary: pl.DataFrame, rule: Rule | None = None) -> pl.DataFrame:
    """The verdict: one row per config (config_id, label, role, rank, failed criteria, reasons with
    their numbers, launch overrides, the solve-time push it is ranked by), recommended first."""
    rule = rule or Rule()
    missing = [c for c in NEEDED if c not in summary.columns]
    if missing:
        return _unrated(summary, missing)
    off = shaping_off(summary).to_list() if summary.height else []
    rows = []
    for i, row in enumerate(summary.iter_rows(named=True)):
        failed = [c for c in CRITERIA if not c.passes(row, rule)]
        rows.append((i, row, failed, off[i]))
    eligible = sorted((r for r in rows if not r[2]), key=lambda r: (*_solve_key(r[1], r[3]), r[0]))
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
                f"{_differs_in(row, best)} and every summary metric of this replay is the same"
            )
        else:
            roles[i] = "eligible" if "runner-up" in roles.values() else "runner-up"
    out = []
    for i, row, failed, is_off in rows:
        role = roles.get(i, "avoid")
        if failed:
            reasons = "; ".join(c.why(row, rule) for c in failed)
        elif i in same_as_best:
            reasons = same_as_best[i]
        elif is_off:
            reasons = "shaping off: the reference every push is measured against"
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
                "overrides": launch_overrides(row),
                "solve_push": row.get("push/minutes_pass"),
            }
        )
    order = {role: i for i, role in enumerate(ROLES)}
    # The ranking as shown: by role (a twin of the best after the runner-up), then by solve key.
    by_role = sorted((i for i, *_ in eligible), key=lambda i: order[roles[i]])
    ranked = {i: place for place, i in enumerate(by_role)}
    for i, item in enumerate(out):
        item["rank"] = ranked.get(i)
    out.sort(key=lambda r: (order[r["role"]], r["rank"] if r["rank"] is not None else len(out)))
    return pl.DataFrame(out, schema=SCHEMA) if out else pl.DataFrame(schema=SCHEMA)


def _unrated(summary: pl.DataFrame, missing: list[str]) -> pl.DataFrame:
    """Every config unrated: the report was written before the columns the rule reads."""
    why = (
        f"written before the recommendation rule (no {', '.join(missing[:3])}"
        f"{', …' if len(missing) > 3 else ''}): replay it with this version to rate it"
    )
    rows = [
        {
            S.CONFIG_ID: row[S.CONFIG_ID],
            "label": row["label"],
            "role": "unrated",
            "rank": None,
            "failed": [],
            "reasons": why,
            "overrides": launch_overrides(row),
            "solve_push": None,
        }
        for row in summary.iter_rows(named=True)
    ]
    return pl.DataFrame(rows, schema=SCHEMA) if rows else pl.DataFrame(schema=SCHEMA)


def _why_eligible(row: dict[str, Any]) -> str:
    """The numbers an eligible config is ranked by. A resolve push is a share of shaping off's
    where shaping off has one to keep; where the ratio is null both pushes are given (not 0%)."""
    overall = row.get("push/resolve_vs_off")
    long = row.get("push/resolve_vs_off@long")
    kept = f"{pct(overall)} of shaping off's" if overall is not None else _pushes(row, "")
    if long is not None:
        kept_long = f"{pct(long)} on long problems"
    elif row.get("push/resolve@long") is None:
        kept_long = NO_LONG_PROBLEMS
    else:
        kept_long = f"pushes {_pushes(row, '@long')} on long problems"
    return (
        f"solve-time push {push_text(num(row, 'push/minutes_pass'))} (negative: teaches solving "
        f"faster); resolve push {kept} ({kept_long}); no fail-faster push, introduced inversion "
        "or unbounded explosion"
    )


def _pushes(row: dict[str, Any], where: str) -> str:
    """A resolve push beside shaping off's, for where shaping off has none to keep."""
    on, off = num(row, f"push/resolve{where}"), num(row, f"push/resolve_off{where}")
    return f"{push_text(on)} against shaping off's {push_text(off)}"


def near_misses(verdict: pl.DataFrame) -> pl.DataFrame:
    """Avoided configs that fail the fewest criteria (the ones to look at when nothing is
    eligible), with the criteria they fail."""
    avoided = verdict.filter(pl.col("role") == "avoid")
    if avoided.is_empty():
        return avoided
    fewest = avoided["failed"].list.len().min()
    return avoided.filter(pl.col("failed").list.len() == fewest)


def decision(verdict: pl.DataFrame) -> dict[str, Any]:
    """The verdict as a reader meets it first: the recommended and runner-up rows (or None), the
    avoided rows, and the near misses when nothing is eligible."""

    def first(role: str) -> dict[str, Any] | None:
        found = verdict.filter(pl.col("role") == role)
        return found.row(0, named=True) if found.height else None

    recommended = first("recommended")
    eligible = verdict.filter(pl.col("role").is_in(ROLES[:3]))
    unrated = first("unrated")
    return {
        "unrated": None if unrated is None else unrated["reasons"],
        "shaped_eligible": eligible.filter(
            ~pl.col("reasons").str.starts_with("shaping off")
        ).height,
        "recommended": recommended,
        "runner_up": first("runner-up"),
        "avoid": verdict.filter(pl.col("role") == "avoid").to_dicts(),
        "near_misses": (
            [] if recommended is not None or unrated else near_misses(verdict).to_dicts()
        ),
    }
