"""Findings: short quantitative sentences, each read from the report's own tables.

Each kind is one small function below with its definition in its docstring; it returns the
sentence for one config, or None when its definition does not hold. `findings()` puts them in the
order a user decides in (the verdict of recommendation.py first, then what disqualifies a config,
then what it teaches, then context) and sums a kind met by many configs up in one headline row
(config_id null).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.rule import Rule, kept, width
from replay_cli.advice.words import NO_LONG_PROBLEMS, num, sooner_than_off
from replay_cli.catalogue.units import minutes_text, pct
from replay_cli.config import lambda_text
from replay_cli.maths.thresholds import EXPLOSION, GAIN_EPS
from replay_cli.parameters import registry
from replay_cli.rollouts.value_checks import DURATION_EXAMPLES, Coerced

SCHEMA = {
    S.CONFIG_ID: pl.String,
    "kind": pl.String,
    "severity": pl.String,
    "value": pl.Float64,
    "text": pl.String,
    "headline": pl.Boolean,
}


def _finding(cid: str | None, kind: str, severity: str, value: Any, text: str) -> dict[str, Any]:
    """One row of the findings table (`SCHEMA`), a headline unless said otherwise later."""
    return dict(zip(SCHEMA, (cid, kind, severity, value, text, True), strict=True))


PER_KIND_IN_HEADLINE = 3
"""A kind met by more configs than this is summed up in one headline sentence."""

PARAMS = tuple(registry())
"""Every replay parameter (each a summary column), in declaration order."""


@dataclass(frozen=True)
class Found:
    """One finding of one config: its number (what the headline ranks by) and its sentence."""

    value: float | None
    text: str


@dataclass(frozen=True)
class Context:
    """What a finding may read besides the config's summary row: the whole summary (for twins),
    the config's top group and the recommendation rule."""

    summary: pl.DataFrame
    top: dict[str, Any]
    rule: Rule

    def _like(self, row: dict[str, Any], free: tuple[str, ...] = (), **changes: Any) -> pl.Expr:
        """Configs equal to `row` in every parameter but the `free` ones, `changes` applied."""
        cond = pl.lit(True)
        for c in PARAMS:
            if c in self.summary.columns and c not in free:
                cond &= pl.col(c).eq_missing(changes.get(c, row[c]))
        return cond

    def twin(self, row: dict[str, Any], **changes: Any) -> dict[str, Any] | None:
        """The config of the sweep equal to `row` but for `changes`, or None."""
        found = self.summary.filter(self._like(row, **changes))
        return found.row(0, named=True) if found.height else None

    def lambdas_without_introduced_inversion(self, row: dict[str, Any]) -> list[float]:
        """The sweep's lambda_time values, other settings as `row`'s, whose shaping introduces
        no inversion (a set: with a negative floor inversion need not grow with lambda)."""
        same = self.summary.filter(pl.col("enabled") & self._like(row, ("lambda_time",)))
        free = same.filter(pl.col(C.INTRODUCED).fill_null(0.0) == 0)
        return sorted(free["lambda_time"].to_list())


def inversion_introduced(row: dict[str, Any], ctx: Context) -> Found | None:
    """Shaping puts a resolved rollout below an unresolved one in groups where shaping off (the
    raw rewards of the same trainable rows) has no such pair."""
    rate = num(row, C.INTRODUCED)
    if rate <= 0:
        return None
    free = ctx.lambdas_without_introduced_inversion(row)
    if free:
        values = ", ".join(lambda_text(v) for v in free)
        advice = f"with these settings this sweep introduces none at λ ∈ {{{values}}}"
    else:
        advice = "every λ of this sweep with these settings introduces some"
    return Found(
        rate,
        f"shaping puts a resolved rollout below an unresolved one in {pct(rate)} of groups "
        f"that shaping off leaves in order ({_terms(row)}); {advice}.",
    )


def _terms(row: dict[str, Any]) -> str:
    """The parts of the shaping that can reorder a config's rewards."""
    items = str(row.get("internal_items") or "").split(",")
    parts = [
        name
        for name, present in (
            ("the time charge", num(row, "lambda_time") > 0),
            ("the call bonus", num(row, "lambda_call_bonus") > 0),
            ("the floor", row.get("floor") is not None),
            ("internal item 2's reset to 0", "2" in items),
        )
        if present
    ]
    who = " and ".join(parts) or "the shaping"
    return f"{who} {'reorder' if len(parts) > 1 else 'reorders'} them"


def inversion_present_unshaped(row: dict[str, Any], ctx: Context) -> Found | None:
    """Groups already inverted with shaping off (e.g. a penalised resolved rollout below an
    unresolved one): not the time term's doing."""
    rate = num(row, C.INVERSIONS_OFF)
    if rate <= 0:
        return None
    return Found(
        rate,
        f"{pct(rate)} of groups already have a resolved rollout below an unresolved one with "
        "shaping off (the input's own rewards): these inversions are not caused by the time term.",
    )


def explosion_unbounded(row: dict[str, Any], ctx: Context) -> Found | None:
    """Trained advantages (after the clip, each side bounded only by its own clip bound) with
    |A| > EXPLOSION."""
    share = num(row, C.EXPLOSION_TRAINED)
    if share <= 0:
        return None
    top = ctx.top
    where = ""
    clips = row.get("clip_low") is not None or row.get("clip_high") is not None
    # The top group is the one of the largest unclipped |A|: it is the largest trained one only
    # when nothing is clipped (a one-sided clip may bound it and leave another side's explosion).
    if not clips and top.get(S.G_MAX_ABS_ADVANTAGE_UNCLIPPED) is not None:
        std = top.get(S.G_STD_AT_MAX_ABS)
        divided = f", divided by a std of {std:.2g}" if std is not None and std > 0 else ""
        where = f"the largest at step {top[S.STEP]}, group {top[S.GROUP_ID]}{divided}"
    after = "after its clip" if clips else "(no clip)"
    twin = ctx.twin(row, clip_low=-EXPLOSION, clip_high=EXPLOSION)
    fix = (
        f"'{twin['label']}' is its clipped twin here"
        if twin is not None and twin[S.CONFIG_ID] != row[S.CONFIG_ID]
        else f"set ++grpo.advantage_clip_low=-{EXPLOSION:g} ++grpo.advantage_clip_high="
        f"{EXPLOSION:g} (the PR's recommendation)"
    )
    low, high = row.get(C.ABS_MAX_LOW), row.get(C.ABS_MAX_HIGH)
    platforms = ""
    if low is not None and high is not None and high - low > 1e-3 * max(1.0, high):
        # Another platform's float32 summation order gives another number (docs/semantics.md).
        certain = num(row, C.EXPLOSION_CERTAIN)
        platforms = f"{low:.4g} to {high:.4g} by platform, {pct(certain)} on every one"
    notes = "; ".join(part for part in (platforms, where) if part)
    return Found(
        num(row, C.ABS_MAX),
        f"{pct(share)} of trained rows have |advantage| > {EXPLOSION:g} {after}, up to "
        f"{num(row, C.ABS_MAX):.4g}{f' ({notes})' if notes else ''}; {fix}.",
    )


def explosion_bounded(row: dict[str, Any], ctx: Context) -> Found | None:
    """Rows whose unclipped |A| exceeds EXPLOSION, all brought inside it by the clip."""
    share = num(row, C.EXPLOSION_UNCLIPPED)
    if share <= 0 or num(row, C.EXPLOSION_TRAINED) > 0:
        return None
    top = ctx.top.get(S.G_MAX_ABS_ADVANTAGE_UNCLIPPED)
    up_to = f", up to {top:.4g} unclipped" if top is not None else ""
    return Found(
        num(row, C.CLIP_FRAC),
        f"the clip changes {pct(num(row, C.CLIP_FRAC))} of trained rows and bounds every "
        f"one of the {pct(share)} that would exceed |{EXPLOSION:g}|{up_to}.",
    )


def floor_tie(row: dict[str, Any], ctx: Context) -> Found | None:
    """Groups where a resolved and an unresolved trainable rollout both end on the floor: their
    shaped rewards and advantages tie, so the update no longer prefers that success."""
    share = num(row, C.FLOOR_TIES)
    if share <= 0:
        return None
    mixed = row.get(C.FLOOR_TIES_MIXED)
    of_mixed = "" if mixed is None else f" ({pct(mixed)} of mixed groups)"
    return Found(
        share,
        f"in {pct(share)} of groups{of_mixed} a resolved and an unresolved rollout both end on "
        f"the floor {num(row, 'floor'):g}: they tie, so the success is no longer preferred "
        "there. Lower lambda_time or the floor.",
    )


def fail_faster(row: dict[str, Any], ctx: Context) -> Found | None:
    """After T steps, failures end sooner than under shaping off by more than the rule's
    `max_fail_faster` share (the rule's own criterion, in words), with its `correct` twin's
    number where an `all` config has one: that twin charges no failure, yet its effort may
    drift, so its number is stated, never assumed to be 0."""
    if row.get(C.F_FAIL_VS_OFF) is None:
        return None
    change = num(row, C.F_FAIL_VS_OFF)
    if -change <= ctx.rule.fail_limit(row):
        return None
    steps = num(row, C.FORECAST_STEPS)
    twin = ctx.twin(row, apply_to="correct") if row.get("apply_to") == "all" else None
    if twin is not None and twin.get(C.F_FAIL_VS_OFF) is not None:
        advice = (
            f"; '{twin['label']}' charges no failure, and its failures end "
            f"{sooner_than_off(num(twin, C.F_FAIL_VS_OFF))} as its effort drifts"
        )
    elif row.get("apply_to") == "all":
        advice = "; apply_to=correct charges no failure"
    else:
        advice = ""
    return Found(
        change,
        f"teaches failures to give up sooner: after {steps:.0f} steps a failure ends "
        f"{sooner_than_off(change)} (limit {pct(ctx.rule.max_fail_faster)} of shaping off's "
        f"{minutes_text(num(row, C.F_FAIL_OFF), signed=False)}; "
        f"{_on_long(row.get(C.F_FAIL_VS_OFF_LONG))}){advice}.",
    )


def _on_long(change: float | None) -> str:
    """A minute change on long problems with its direction (failures there may end later while
    they end sooner overall), or that the input has none (a null is no 0)."""
    return NO_LONG_PROBLEMS if change is None else f"on long problems {sooner_than_off(change)}"


def uncharged_only(row: dict[str, Any], ctx: Context) -> Found | None:
    """Groups whose only signal is the difference between rows that were not charged and charged
    siblings that all ended equal: the update learns which rows were exempt, not the time. The
    causes named are the kinds of uncharged rows present in the groups counted."""
    share = num(row, C.UNCHARGED_ONLY)
    if share <= 0:
        return None
    kinds = {
        C.UNCHARGED_MASKED: "masked rows (they keep their reward and still vote in the baseline)",
        C.UNCHARGED_RESET: "rows a zeroing penalty reset to 0 (internal item 2)",
        C.UNCHARGED_GATE: "rows the correct gate did not charge (unresolved, or resolved with "
        "a falsy reward, under apply_to=correct)",
    }
    causes = [text for name, text in kinds.items() if num(row, name) > 0]
    advice = []
    if num(row, C.UNCHARGED_MASKED) > 0 and not row.get("exclude_masked"):
        advice.append("--exclude-masked (NeMo-RL PR #4160)")
    if row.get("floor") is not None:
        advice.append("a lower floor")
    cause = "; ".join(causes) or "rows the hook skipped"
    todo = f" Try {' or '.join(advice)}." if advice else ""
    return Found(
        share,
        f"{pct(share)} of groups get signal only because rows that were not charged ({cause}) "
        f"differ from charged siblings that all ended equal.{todo}",
    )


def validation_not_comparable(row: dict[str, Any], ctx: Context) -> Found | None:
    """Validation rows were charged (internal item 4 or the sync path) and some shaped validation
    reward differs from the raw one, so the shaped validation reward is not the accuracy an
    unshaped run logs (a charge that deducts nothing leaves the curves comparable)."""
    charged = num(row, C.VALIDATION_CHARGED)
    changed = row.get(C.VALIDATION_CHANGED)
    if charged <= 0 or (changed is not None and changed <= 0):  # charged but nothing deducted
        return None
    acc, total = row.get(C.VALIDATION_ACCURACY), row.get(C.VALIDATION_REWARD)
    numbers = (
        ""
        if acc is None or total is None
        else f": validation/total_reward/mean is {total:.4g} against a raw accuracy of {acc:.4g}"
    )
    items = str(row.get("internal_items") or "").split(",")
    why = "internal item 4" if "4" in items else "the single-controller (sync) path"
    return Found(
        None if acc is None or total is None else total - acc,
        f"{charged:.0f} validation rows are charged ({why}){numbers}, so its validation curve cannot be "
        "set beside a run whose validation is unshaped. Compare validation/accuracy instead.",
    )


def signal_change(row: dict[str, Any], ctx: Context) -> Found | None:
    """Groups that gain a learning signal under shaping and groups that lose the one shaping
    off gives them, both stated (a net figure hides the losses)."""
    gained, lost = num(row, C.GAINED), num(row, C.LOST)
    if gained <= GAIN_EPS and lost <= GAIN_EPS:
        return None
    return Found(
        gained,
        f"signal gained in {pct(gained)} of groups (ties the shaping breaks) and lost in "
        f"{pct(lost)} against shaping off ({pct(num(row, C.SIGNAL_RAW))} -> "
        f"{pct(num(row, C.SIGNAL))}).",
    )


def forecast_drift(row: dict[str, Any], ctx: Context) -> Found | None:
    """After T forecast steps, the config's resolve rate on long problems falls below the rule's
    share of shaping off's (the low end of its interval; the point value where no interval was
    computed, as the rule reads it): how far failures' minutes and the resolve rate on long
    problems move, start to T."""
    low = kept(row, C.LONG)
    if low is None or low >= ctx.rule.min_resolve_vs_off_long:
        return None
    which = (
        "low end of the interval" if width(row, C.LONG) is not None else "point value, no interval"
    )
    steps = num(row, C.FORECAST_STEPS)
    fail0, fail = num(row, C.F_FAIL_START_LONG), num(row, C.F_FAIL_LONG)
    res0, res = num(row, C.F_RESOLVE_START_LONG), num(row, C.F_RESOLVE_LONG)
    off = num(row, C.F_RESOLVE_OFF_LONG)
    return Found(
        low,
        f"after {steps:.0f} steps the forecast moves failures on long problems from "
        f"{fail0:.1f} to {fail:.1f} minutes and resolve there from {pct(res0)} to {pct(res)}, "
        f"against {pct(off)} with shaping off ({which}: {pct(low)} of shaping off's, the rule "
        f"needs {pct(ctx.rule.min_resolve_vs_off_long)}).",
    )


TINY_LAMBDA = 1e-4
"""A λ below this charges an hour of agent time less than 0.006 reward: a charge of that size
trains only through normalisation (the jump at λ → 0⁺)."""


def time_only_step(row: dict[str, Any], ctx: Context) -> Found | None:
    """Part of the config's step goes to groups whose outcomes are all equal (shaping off gives
    them no signal): there normalisation divides the time term by λ·sd(minutes), so it trains
    at nearly full size for any λ well above 1e-6 / sd(minutes); λ trades resolving against time
    only in mixed groups. At a tiny λ this is the jump at λ → 0⁺."""
    share = num(row, C.TIME_ONLY_SHARE)
    if share <= 0 or not row.get("enabled", True):
        return None
    groups = pct(num(row, C.TIME_ONLY_GROUPS))
    text = (
        f"{pct(share)} of its step goes to groups whose outcomes are all equal ({groups} of "
        "groups), about time alone: normalisation trains them at nearly full size for any λ "
        "well above 1e-6 / sd(minutes), so λ trades resolving against time only in mixed groups"
    )
    lam = num(row, "lambda_time")
    if 0 < lam < TINY_LAMBDA:
        text += (
            f"; at λ={lambda_text(lam)} the charge is far below any reward difference, yet the "
            "update jumps from shaping off's (the jump at λ → 0⁺)"
        )
    return Found(share, text + ".")


KINDS: dict[str, tuple[str, Callable[[dict[str, Any], Context], Found | None], str]] = {
    "inversion_introduced": ("hazard", inversion_introduced, "introduce inversions"),
    "explosion_unbounded": (
        "hazard",
        explosion_unbounded,
        f"train on |advantage| > {EXPLOSION:g} (after their clip, where they have one)",
    ),
    "floor_tie": ("hazard", floor_tie, "tie successes to failures on the floor"),
    "forecast_drift": (
        "warning",
        forecast_drift,
        "lose resolve rate on long problems over the forecast",
    ),
    "fail_faster": ("warning", fail_faster, "teach failures to give up sooner"),
    S.G_UNCHARGED_ONLY_SIGNAL: ("warning", uncharged_only, "get signal only from uncharged rows"),
    "validation_not_comparable": (
        "warning",
        validation_not_comparable,
        "charge validation rows (curves not comparable)",
    ),
    "time_only_step": ("info", time_only_step, "spend part of their step on time alone"),
    "inversion_present_unshaped": (
        "info",
        inversion_present_unshaped,
        "have inversions already present with shaping off",
    ),
    "explosion_bounded": ("info", explosion_bounded, "rely on the clip to bound explosions"),
    "signal_change": ("info", signal_change, "gain or lose signal against shaping off"),
}
"""Every per-config kind in the order a user decides in: (severity, definition, headline)."""


INPUT_COERCED = "input_coerced"
"""The kind of an input's values that the trainer coerces (one row per column, config_id null,
before every per-config kind): a hazard when a value does not parse, a warning for nulls."""


def input_findings(coerced: Sequence[Coerced]) -> list[dict[str, Any]]:
    """One finding per column whose values the trainer would coerce (value: their share)."""
    out = []
    for c in coerced:
        text = f"Input: {c.what()}: the trainer reads them as {c.read_as}, and so does this replay"
        if c.refused_by_strict:
            text += (
                " (no time charge: those rollouts get the highest shaped reward). Write run times "
                f"in seconds (`replay-cli import table --durations` reads {DURATION_EXAMPLES}); "
                "`--strict` refuses such input"
            )
        severity = "hazard" if c.refused_by_strict else "warning"
        out.append(_finding(None, INPUT_COERCED, severity, c.share, text + "."))
    return out


def findings(
    summary: pl.DataFrame,
    tops: pl.DataFrame | None = None,
    rule: Rule | None = None,
    coerced: Sequence[Coerced] = (),
) -> pl.DataFrame:
    """The findings table (`SCHEMA`): the input's coerced values first, then `KINDS` order;
    `tops`: `maths.top_groups.top_groups` of the group table (a config's worst group)."""
    rule = rule or Rule()
    tops_of = _tops(tops)
    labels = dict(summary.select(S.CONFIG_ID, "label").rows())
    by_kind: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for row in summary.iter_rows(named=True):  # one row per config: the summary is small
        ctx = Context(summary, tops_of.get(row[S.CONFIG_ID], {}), rule)
        for kind, (severity, define, _) in KINDS.items():
            found = define(row, ctx)
            if found is not None:
                text = f"{row['label']}: {found.text}"
                by_kind[kind].append(_finding(row[S.CONFIG_ID], kind, severity, found.value, text))
    out: list[dict[str, Any]] = input_findings(coerced)
    for kind, members in by_kind.items():
        many = len(members) > PER_KIND_IN_HEADLINE
        if many:
            out.append(_headline(kind, members, labels))
        out.extend({**r, "headline": not many} for r in members)
    return pl.DataFrame(out, schema=SCHEMA) if out else pl.DataFrame(schema=SCHEMA)


def _tops(top: pl.DataFrame | None) -> dict[str, dict]:
    """Per config, its group of the largest unclipped |advantage|."""
    if top is None or top.is_empty():
        return {}
    first = top.group_by(S.CONFIG_ID, maintain_order=True).first()
    return {row[S.CONFIG_ID]: row for row in first.iter_rows(named=True)}


KEPT_SHARES = {"forecast_drift": "largest losses (the low end of the share of shaping off's kept)"}
"""Kinds whose value is a share kept, not a size: the smaller it is, the larger the loss, so their
headline ranks the smallest first (and says what the numbers are)."""


def _headline(kind: str, rows: list[dict[str, Any]], labels: dict[str, str]) -> dict[str, Any]:
    """One sentence for a kind met by many configs: how many, and the three largest values (for
    a share kept, the three smallest: the largest losses), worst first."""
    severity, _, what = KINDS[kind]
    if kind in KEPT_SHARES:
        ranked = sorted(rows, key=lambda r: r["value"] if r["value"] is not None else math.inf)
    else:
        ranked = sorted(rows, key=lambda r: -abs(r["value"] or 0.0))
    show = {"explosion_unbounded": lambda v: f"{v:.4g}", "fail_faster": minutes_text}.get(kind, pct)
    names = ", ".join(f"'{labels[r[S.CONFIG_ID]]}' ({show(r['value'] or 0.0)})" for r in ranked[:3])
    text = f"{len(rows)} configs {what}; {KEPT_SHARES.get(kind, 'largest')}: {names}."
    return _finding(None, kind, severity, ranked[0]["value"], text)
