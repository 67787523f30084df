"""The one recommendation: which config to launch, which is the runner-up, which to avoid and why.

One documented rule decides it (docs/report.md, "The recommendation"), read from the summary
table (and, for how sure the pick is, the bootstrap table); every other part of the report reads
its verdict (advice/verdict.py) instead of deciding again. It is stated on the decision measure,
one step of fixed size (engine/measure.py), not on the first-order pushes:

* a config is **eligible** when it passes every criterion of `Rule`: launchable as replayed, no
  inversion that shaping introduces, no explosion left unbounded by the clip, the low end of the
  bootstrap interval of its resolve progress at least 95% of shaping off's overall and on long
  problems, failures not taught to give up sooner than shaping off would beyond a limit in
  minutes per step, little signal from uncharged rows;
* among the eligible, the **recommended** config makes successes fastest against shaping off (the
  most negative `step/solve_minutes_vs_off`), ties going to the smaller lambda_time, then to
  shaping off, then to the config with fewer settings away from their defaults; the next that
  does not train exactly like it is the **runner-up**, the rest stay **eligible**;
* every other config is **avoid**, with each failed criterion and its number as the reason.

Shaping off competes under the same rule; when it wins, the verdict is to keep it, and the best
trade (the shaped config that keeps the most resolve progress while making successes faster,
failing nothing but the resolve criteria) is named with its numbers.
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
from replay_cli.advice.words import (
    NO_LONG_PROBLEMS,
    minutes_shift,
    minutes_text,
    num,
    param_text,
    pct,
)
from replay_cli.maths.thresholds import EXPLOSION, MINUTES_EPS
from replay_cli.parameters import registry

ROLES = ("recommended", "runner-up", "eligible", "avoid", "unrated")
"""`unrated`: the summary predates the columns the rule reads (a report of an earlier version)."""
NEEDED = (
    C.INTRODUCED,
    C.EXPLOSION_TRAINED,
    C.RESOLVE_VS_OFF,
    C.RESOLVE_VS_OFF_LONG,
    C.SOLVE_VS_OFF,
    C.FAIL_VS_OFF,
    C.UNCHARGED_ONLY,
)
"""The summary columns the rule reads."""
SAME_NUMBERS_NEEDED = ("trained_digest",)
"""Two configs are called the same only when they train on the same rows with the same rewards
and advantages (`trained_digest`, a hash of every training row's shaped reward, advantage after
the clip and loss mask, loss-masked rows included)."""
DEFAULT_BUDGET = 0.001
"""The step budget the fail-faster limit is stated at (MeasureSettings.step_kl's default)."""
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
    "solve_minutes_vs_off": pl.Float64,
    "resolve_vs_off": pl.Float64,
    "resolve_vs_off_low": pl.Float64,
    "resolve_vs_off_long": pl.Float64,
    "resolve_vs_off_low_long": pl.Float64,
    "won_share": pl.Float64,
    "best_trade": pl.Boolean,
    "trade": pl.String,
    "budget_check": pl.String,
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
    """The thresholds of the recommendation; each can be changed (`judge(summary, rule=Rule(...))`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_resolve_vs_off: float = Field(
        0.95,
        description="the low end of the resolve progress's interval, as a share of shaping "
        "off's, over all problems (step/resolve_vs_off_low)",
    )
    min_resolve_vs_off_long: float = Field(
        0.95, description="the same on long problems (step/resolve_vs_off_low@long)"
    )
    max_fail_faster: float = Field(
        0.02,
        description="how much sooner than under shaping off failures may end, in minutes per "
        "step at the default budget (scaled by sqrt(step_kl / 0.001) at others)",
    )
    min_faster: float = Field(
        0.01,
        description="how many minutes per step faster than under shaping off successes must get "
        "for a config to count as faster at all (at the default budget; scaled like "
        "max_fail_faster): a smaller change, such as the rounding-sized charge of a tiny λ, "
        "ties with shaping off",
    )
    min_forecast_long: float = Field(
        0.95,
        description="with a forecast: the lowest seed's resolve rate on long problems after T "
        "steps, as a share of shaping off's, at least this",
    )
    max_uncharged_only: float = Field(
        0.01, description="the share of groups with signal only from uncharged rows, at most"
    )
    require_launchable: bool = Field(
        True,
        description="only configs NeMo-RL can run as they are: the PR's semantics and its own "
        "GRPO estimator (the launch overrides would run something else)",
    )

    def at_budget(self, minutes: float, row: dict[str, Any]) -> float:
        """A limit in minutes per step at the default budget, at the row's budget: a step of
        budget δ moves minutes about sqrt(δ) as far (first order)."""
        budget = row.get(C.KL_BUDGET) or DEFAULT_BUDGET
        return minutes * math.sqrt(budget / DEFAULT_BUDGET)

    def fail_limit(self, row: dict[str, Any]) -> float:
        """The fail-faster limit at the row's step budget (minutes per step)."""
        return self.at_budget(self.max_fail_faster, row)

    def faster_limit(self, row: dict[str, Any]) -> float:
        """The smallest solve-minute gain that counts, at the row's step budget."""
        return self.at_budget(self.min_faster, row)

    def summary_text(self) -> str:
        """The rule in one sentence, with its thresholds (the page and the terminal print it)."""
        return (
            "eligible: launchable as replayed, no inversion that shaping introduces, no "
            f"|advantage| above {EXPLOSION:g} left after the clip, resolve progress per step "
            f"kept at {pct(self.min_resolve_vs_off)} of shaping off's or more (low end of the "
            f"interval) overall and {pct(self.min_resolve_vs_off_long)} on long problems, "
            f"failures ending no more than {self.max_fail_faster:g} min per step sooner than "
            f"under shaping off, signal from uncharged rows in at most "
            f"{pct(self.max_uncharged_only)} of groups; among those, the one that makes "
            "successes fastest against shaping off wins (ties: the smaller λ, then shaping off)"
        )


@dataclass(frozen=True)
class Criterion:
    """One test of the rule: its name, whether a summary row passes, and the sentence that says
    why a row fails (with its number)."""

    name: str
    passes: Callable[[dict[str, Any], Rule], bool]
    why: Callable[[dict[str, Any], Rule], str]


def _kept(row: dict[str, Any], where: str, least: float) -> bool:
    """The resolve progress keeps `least` of shaping off's at the low end of its interval (the
    point value where no interval was computed); where shaping off makes none (the ratio is
    null), it may not fall below shaping off's."""
    low = row.get(C.bound(C.RESOLVE_VS_OFF, "low", where))
    ratio = row.get(C.scoped(C.RESOLVE_VS_OFF, where))
    if ratio is not None:
        return float(low if low is not None else ratio) >= least
    on, off = num(row, C.scoped(C.RESOLVE, where)), num(row, C.off(C.RESOLVE, where))
    return on >= off - 1e-12


def _kept_text(row: dict[str, Any], where: str, least: float) -> str:
    ratio = row.get(C.scoped(C.RESOLVE_VS_OFF, where))
    low = row.get(C.bound(C.RESOLVE_VS_OFF, "low", where))
    if ratio is not None:
        interval = f" (low end {pct(float(low))})" if low is not None else ""
        return f"{pct(float(ratio))} of shaping off's{interval}, needs {pct(least)}"
    return (
        f"{_points(num(row, C.scoped(C.RESOLVE, where)))} per step, below shaping off's "
        f"{_points(num(row, C.off(C.RESOLVE, where)))}"
    )


def _points(x: float) -> str:
    """A change of a probability in percentage points."""
    return f"{x * 100:+.3g} points"


def _launchable(row: dict[str, Any]) -> bool:
    return row.get("semantics", "nemo-rl") == "nemo-rl" and row.get("estimator", "grpo") == "grpo"


CRITERIA = (
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
        "resolve",
        lambda r, rule: _kept(r, "", rule.min_resolve_vs_off),
        lambda r, rule: f"resolve progress is {_kept_text(r, '', rule.min_resolve_vs_off)}",
    ),
    Criterion(
        "resolve_long",
        lambda r, rule: _kept(r, "@long", rule.min_resolve_vs_off_long),
        lambda r, rule: (
            "resolve progress on long problems is "
            f"{_kept_text(r, '@long', rule.min_resolve_vs_off_long)}"
        ),
    ),
    Criterion(
        "fail_faster",
        lambda r, rule: num(r, C.FAIL_VS_OFF) >= -rule.fail_limit(r),
        lambda r, rule: (
            "teaches failures to give up sooner: they end "
            f"{minutes_shift(num(r, C.FAIL_VS_OFF), 'sooner', 'later', ' per step')} "
            f"than under shaping off (limit {minutes_text(rule.fail_limit(r), signed=False)})"
        ),
    ),
    Criterion(
        "forecast_long",
        lambda r, rule: (
            r.get(C.FORECAST_KEPT_LOW_LONG) is None
            or r[C.FORECAST_KEPT_LOW_LONG] >= rule.min_forecast_long
        ),
        lambda r, rule: (
            f"after {num(r, C.FORECAST_STEPS):.0f} forecast steps it keeps "
            f"{pct(num(r, C.FORECAST_KEPT_LONG))} of shaping off's resolve rate on long problems "
            f"(lowest seed {pct(num(r, C.FORECAST_KEPT_LOW_LONG))}), needs "
            f"{pct(rule.min_forecast_long)}"
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
RESOLVE_CRITERIA = ("resolve", "resolve_long", "forecast_long")
"""Criteria a config may fail and still be named as the best trade when shaping off is kept."""


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
    """The solve-minute change against shaping off per step (negative: faster), 0 within
    MINUTES_EPS, and with a rule, 0 where successes get less than its `min_faster` faster."""
    value = num(row, C.SOLVE_VS_OFF)
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


def recommend(
    summary: pl.DataFrame,
    rule: Rule | None = None,
    resamples: pl.DataFrame | None = None,
    check_budgets: bool = True,
) -> pl.DataFrame:
    """The verdict: one row per config (config_id, label, role, rank, failed criteria, reasons
    with their numbers, launch overrides and YAML, the numbers it is ranked by, the share of
    bootstrap resamples in which it would be recommended, the best trade), recommended first."""
    rule = rule or Rule()
    missing = [c for c in NEEDED if c not in summary.columns]
    if missing:
        return _unrated(summary, missing)
    off = shaping_off(summary).to_list() if summary.height else []
    rows = []
    for i, row in enumerate(summary.iter_rows(named=True)):
        failed = [c for c in CRITERIA if not c.passes(row, rule)]
        rows.append((i, row, failed, off[i]))
    eligible = sorted(
        (r for r in rows if not r[2]), key=lambda r: (*_solve_key(r[1], r[3], rule), r[0])
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
    won = _won_shares(summary, rows, rule, resamples)
    out = []
    for i, row, failed, is_off in rows:
        role = roles.get(i, "avoid")
        if failed:
            reasons = "; ".join(c.why(row, rule) for c in failed)
        elif i in same_as_best:
            reasons = same_as_best[i]
        elif is_off:
            reasons = "shaping off: the reference every step is measured against"
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
                "solve_minutes_vs_off": row.get(C.SOLVE_VS_OFF),
                "resolve_vs_off": row.get(C.RESOLVE_VS_OFF),
                "resolve_vs_off_low": row.get(C.RESOLVE_VS_OFF_LOW),
                "resolve_vs_off_long": row.get(C.RESOLVE_VS_OFF_LONG),
                "resolve_vs_off_low_long": row.get(C.RESOLVE_VS_OFF_LOW_LONG),
                "won_share": won.get(i),
                "best_trade": trade == i,
                "trade": trade_text(row) if _tradeable(row, failed, is_off, rule) else None,
                "budget_check": checked if role == "recommended" else None,
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


HALF_TWICE = (("_half", "half"), ("_twice", "twice"))


def _budget_check(summary: pl.DataFrame, rule: Rule, best_id: str | None) -> str | None:
    """Whether the recommendation holds when the forecast runs at half and at twice the step
    budget (None without those forecasts): the rule applied again to the forecast's low ends at
    those budgets."""
    moved = []
    for suffix, words in HALF_TWICE:
        column = C.scoped(f"{C.FORECAST_KEPT_LOW}{suffix}", "@long")
        if column not in summary.columns:
            return None
        alt = summary.with_columns(pl.col(column).alias(C.FORECAST_KEPT_LOW_LONG))
        table = recommend(alt, rule, check_budgets=False)
        first = table.filter(pl.col("role") == "recommended")
        other = first.row(0, named=True) if first.height else None
        if other is None:
            moved.append(f"at {words} the step budget no config passes the rule")
        elif other[S.CONFIG_ID] != best_id:
            moved.append(f"at {words} the step budget the rule would pick '{other['label']}'")
    return "; ".join(moved) or "the verdict holds at half and at twice the step budget"


def _tradeable(row: dict[str, Any], failed: list[Criterion], is_off: bool, rule: Rule) -> bool:
    """A shaped config that fails nothing but the resolve criteria and makes successes faster
    by at least the rule's `min_faster`: a trade a user may accept knowingly."""
    names = {c.name for c in failed}
    return (
        not is_off
        and bool(names)
        and names <= set(RESOLVE_CRITERIA)
        and _gain(row, rule) < 0
        and row.get(C.RESOLVE_VS_OFF) is not None
    )


def _best_trade(
    rows: list[tuple[int, dict[str, Any], list[Criterion], bool]], rule: Rule
) -> int | None:
    """The tradeable config that keeps the most resolve progress (the lower of overall and long
    problems), ties to the larger solve-minute gain."""
    offers = [
        (min(num(r, C.RESOLVE_VS_OFF), _long_or_overall(r)), -_gain(r), -i, i)
        for i, r, failed, off in rows
        if _tradeable(r, failed, off, rule)
    ]
    return max(offers)[3] if offers else None


def _long_or_overall(row: dict[str, Any]) -> float:
    long = row.get(C.RESOLVE_VS_OFF_LONG)
    return num(row, C.RESOLVE_VS_OFF) if long is None else float(long)


def trade_text(row: dict[str, Any]) -> str:
    """What a config buys and what it costs per step against shaping off, in words: it buys
    only where successes get faster (a slower or unchanged success is said as such)."""
    overall = num(row, C.RESOLVE_VS_OFF)
    long = row.get(C.RESOLVE_VS_OFF_LONG)
    on_long = "" if long is None else f" ({_signed_pct(float(long) - 1)} on long problems)"
    solve = num(row, C.SOLVE_VS_OFF)
    if solve < -MINUTES_EPS:
        bought = f"buys {minutes_text(solve)} per step on successes"
    else:
        later = minutes_shift(solve, "sooner", "later", " per step")
        bought = f"buys nothing on successes (they end {later})"
    return (
        f"'{row['label']}' {bought} for {_signed_pct(overall - 1)} of resolve progress per "
        f"step{on_long}"
    )


def _signed_pct(x: float) -> str:
    return f"{x:+.1%}".replace("-", "−")


def _won_shares(
    summary: pl.DataFrame,
    rows: list[tuple[int, dict[str, Any], list[Criterion], bool]],
    rule: Rule,
    resamples: pl.DataFrame | None,
) -> dict[int, float]:
    """Per config, the share of bootstrap resamples in which the rule recommends it: the
    criteria read from the resample (resolve ratios, minute changes) are re-applied to its
    values, the others keep their verdict."""
    if resamples is None or resamples.is_empty():
        return {}
    ids = [r[S.CONFIG_ID] for _, r, *_ in rows]
    names = (
        C.RESOLVE_VS_OFF,
        C.RESOLVE_VS_OFF_LONG,
        C.SOLVE_VS_OFF,
        C.FAIL_VS_OFF,
    )
    if any(name not in resamples.columns for name in names):
        return {}
    wide = {
        name: resamples.pivot(on=S.CONFIG_ID, index="resample", values=name).select(ids).to_numpy()
        for name in names
    }
    resampled = (*RESOLVE_CRITERIA, "fail_faster")
    static = np.array([all(c.name in resampled for c in failed) for _, _, failed, _ in rows])
    is_off = np.array([o for *_, o in rows])
    limits = np.array([rule.fail_limit(r) for _, r, *_ in rows])
    overall_null = np.array([r.get(C.RESOLVE_VS_OFF) is None for _, r, *_ in rows])
    long_null = np.array([r.get(C.RESOLVE_VS_OFF_LONG) is None for _, r, *_ in rows])
    with np.errstate(invalid="ignore"):
        ok = (
            static
            & (is_off | overall_null | (wide[C.RESOLVE_VS_OFF] >= rule.min_resolve_vs_off))
            & (is_off | long_null | (wide[C.RESOLVE_VS_OFF_LONG] >= rule.min_resolve_vs_off_long))
            & (wide[C.FAIL_VS_OFF] >= -limits)
        )
    gain = wide[C.SOLVE_VS_OFF]
    least = np.array([max(MINUTES_EPS, rule.faster_limit(r)) for _, r, *_ in rows])
    small = (np.abs(gain) <= MINUTES_EPS) | ((gain < 0) & (-gain <= least))
    gain = np.where(is_off | small, 0.0, gain)
    # Ties as the rule breaks them: the point ranking's order of the other keys.
    order = sorted(
        range(len(rows)), key=lambda i: (*_solve_key(rows[i][1], rows[i][3], rule)[1:], i)
    )
    tie_rank = np.empty(len(rows))
    tie_rank[order] = np.arange(len(rows))
    first = np.lexsort((np.broadcast_to(tie_rank, gain.shape), np.where(ok, gain, np.inf)), axis=-1)
    winner = first[:, 0]
    counted = ok[np.arange(len(winner)), winner]
    counts = np.bincount(winner[counted], minlength=len(rows))
    total = wide[C.RESOLVE_VS_OFF].shape[0]
    return {i: float(counts[i] / total) for i in range(len(rows))}


def _unrated(summary: pl.DataFrame, missing: list[str]) -> pl.DataFrame:
    """Every config unrated: the report was written before the columns the rule reads."""
    why = (
        f"written before the recommendation rule (no {', '.join(missing[:3])}"
        f"{', …' if len(missing) > 3 else ''}): replay it with this version to rate it"
    )
    off = shaping_off(summary).to_list() if summary.height and "enabled" in summary.columns else []
    rows = [
        {
            S.CONFIG_ID: row[S.CONFIG_ID],
            "label": row["label"],
            "role": "unrated",
            "rank": None,
            "failed": [],
            "reasons": why,
            "overrides": launch_overrides(row, bool(off[i]) if off else False),
            "yaml": launch_yaml(row, bool(off[i]) if off else False),
            S.SHAPING_OFF: bool(off[i]) if off else False,
            "solve_minutes_vs_off": None,
            "resolve_vs_off": None,
            "resolve_vs_off_low": None,
            "resolve_vs_off_long": None,
            "resolve_vs_off_low_long": None,
            "won_share": None,
            "best_trade": False,
            "trade": None,
            "budget_check": None,
        }
        for i, row in enumerate(summary.iter_rows(named=True))
    ]
    return pl.DataFrame(rows, schema=SCHEMA) if rows else pl.DataFrame(schema=SCHEMA)


def _why_eligible(row: dict[str, Any]) -> str:
    """The numbers an eligible config is ranked by."""
    overall = row.get(C.RESOLVE_VS_OFF)
    low = row.get(C.RESOLVE_VS_OFF_LOW)
    long = row.get(C.RESOLVE_VS_OFF_LONG)
    low_long = row.get(C.RESOLVE_VS_OFF_LOW_LONG)
    kept = (
        f"{pct(overall)} of shaping off's resolve progress"
        + (f" (low end {pct(low)})" if low is not None else "")
        if overall is not None
        else "as much resolve progress as shaping off"
    )
    if long is not None:
        kept_long = f"{pct(long)} on long problems" + (
            f" (low end {pct(low_long)})" if low_long is not None else ""
        )
    elif row.get(C.RESOLVE_LONG) is None:
        kept_long = NO_LONG_PROBLEMS
    else:
        kept_long = "as much on long problems"
    faster = minutes_shift(num(row, C.SOLVE_VS_OFF), "faster", "slower", " per step")
    return (
        f"makes successes {faster} than shaping off; keeps {kept} ({kept_long}); no fail-faster "
        "drift, introduced inversion or unbounded explosion"
    )


def near_misses(verdict: pl.DataFrame) -> pl.DataFrame:
    """Avoided configs that fail the fewest criteria (the ones to look at when nothing is
    eligible), with the criteria they fail."""
    avoided = verdict.filter(pl.col("role") == "avoid")
    if avoided.is_empty():
        return avoided
    fewest = avoided["failed"].list.len().min()
    return avoided.filter(pl.col("failed").list.len() == fewest)
