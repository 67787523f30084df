"""Findings: short quantitative sentences, generated from a report's own summary and group tables.

Each finding names a config, a number and what to do. `findings()` returns one row per (config,
kind) plus headline rows (config_id null) that sum a kind up across a sweep, so a report of 100
configs opens with a few sentences instead of hundreds. The frontier (signal gained over shaping
off against the harm done) picks the configs the charts highlight.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from replay_cli import schema as S
from replay_cli.advice.frontier import is_clipped
from replay_cli.advice.top_groups import top_groups
from replay_cli.frames import collect
from replay_cli.maths.thresholds import EXPLOSION, GAIN_EPS, TIME_ONLY_WARN
from replay_cli.parameters import registry

SCHEMA = {
    S.CONFIG_ID: pl.String,
    "kind": pl.String,
    "severity": pl.String,
    "value": pl.Float64,
    "text": pl.String,
    "headline": pl.Boolean,
}
SEVERITIES = ("hazard", "warning", "info", "ok")
"""hazard: the numbers say the config harms training; warning: read before running it; info:
context; ok: a config that adds signal without a listed harm."""

PER_KIND_IN_HEADLINE = 3
"""A kind met by more configs than this is summed up in one headline sentence."""


def _group_facts(
    groups: pl.LazyFrame | pl.DataFrame, top: pl.DataFrame | None = None
) -> dict[str, dict[str, Any]]:
    """Per config: the group of the largest unclipped |advantage| and the all-fail time-only
    count; `top` is `top_groups(groups)` when the caller has it."""
    lf = groups.lazy()
    columns = lf.collect_schema().names()
    if S.G_MAX_ABS_ADVANTAGE_UNCLIPPED not in columns:  # a report written before these columns
        return {}
    top = (
        (top_groups(lf) if top is None else top).group_by(S.CONFIG_ID, maintain_order=True).first()
    )
    top = top.select(
        S.CONFIG_ID, S.STEP, S.GROUP_ID, S.G_MAX_ABS_ADVANTAGE_UNCLIPPED, S.G_STD_AT_MAX_ABS
    )
    fail_faster = lf.group_by(S.CONFIG_ID).agg(
        # Not the groups whose spread is only an uncharged row's: no time difference there.
        (
            pl.col(S.G_TIME_ONLY_SIGNAL)
            & ~pl.col(S.G_UNCHARGED_ONLY_SIGNAL)
            & (pl.col(S.G_RESOLVED_PATTERN) == S.ALL_FAIL)
        )
        .sum()
        .alias("all_fail_time_only"),
        (pl.col(S.G_TIME_ONLY_SIGNAL) & (pl.col(S.G_RESOLVED_PATTERN) == S.ALL_PASS))
        .sum()
        .alias("all_pass_time_only"),
        pl.len().alias("groups"),
    )
    joined = collect(fail_faster).join(top, on=S.CONFIG_ID, how="left")
    return {row[S.CONFIG_ID]: row for row in joined.iter_rows(named=True)}


def _twin(summary: pl.DataFrame, row: dict[str, Any], **changes: Any) -> dict[str, Any] | None:
    """The config of the sweep equal to `row` but for `changes` (None when the sweep has none)."""
    params = [c for c in PARAMS if c in summary.columns and c not in changes]
    cond = pl.lit(True)
    for c in params:
        cond &= pl.col(c).eq_missing(row[c])
    for c, v in changes.items():
        cond &= pl.col(c).eq_missing(v)
    found = summary.filter(cond)
    return found.row(0, named=True) if found.height else None


def _safe_lambda(summary: pl.DataFrame, row: dict[str, Any]) -> float | None:
    """The largest lambda_time of the sweep with the same other settings and no inversion."""
    params = [c for c in PARAMS if c in summary.columns and c != "lambda_time"]
    cond = pl.col("inversion/group_rate").fill_null(0.0) == 0
    for c in params:
        cond &= pl.col(c).eq_missing(row[c])
    lam = summary.filter(cond & pl.col("enabled") & (pl.col("lambda_time") > 0))["lambda_time"]
    return None if lam.is_empty() else float(lam.max())


PARAMS = tuple(registry())
"""Every replay parameter (each a summary column), in declaration order."""


def _pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.1 or x == 0 else f"{x:.1%}" if x >= 0.001 else f"{x:.2%}"


def _per_config(
    summary: pl.DataFrame, row: dict[str, Any], facts: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every finding of one config."""
    out: list[dict[str, Any]] = []
    label, cid = row["label"], row[S.CONFIG_ID]

    def add(kind: str, severity: str, value: float | None, text: str) -> None:
        out.append(
            {
                S.CONFIG_ID: cid,
                "kind": kind,
                "severity": severity,
                "value": value,
                "text": f"{label}: {text}",
            }
        )

    groups = facts.get("groups") or 0
    fail_faster = (facts.get("all_fail_time_only") or 0) / groups if groups else None
    time_only = row.get("signal/time_only_rate") or 0.0
    if row["enabled"] and fail_faster:
        advice = (
            "apply_to=correct charges resolved rollouts only and keeps failures tied"
            if row["apply_to"] == "all"
            else "check which rows are charged (internal item 3 gates on resolved alone)"
        )
        twin = _twin(summary, row, apply_to="correct") if row["apply_to"] == "all" else None
        if twin is not None:
            advice += f" ('{twin['label']}': time-only {_pct(twin['signal/time_only_rate'] or 0)})"
        add(
            S.G_TIME_ONLY_SIGNAL,
            "warning" if fail_faster > TIME_ONLY_WARN else "info",
            fail_faster,
            f"{_pct(fail_faster)} of training groups are all-fail groups whose only signal is "
            f"the time term — they learn to fail faster (time-only signal in {_pct(time_only)} of "
            f"groups in all). If that is not intended, {advice}.",
        )
    explosion = row.get("adv/explosion_frac") or 0.0
    top = facts.get(S.G_MAX_ABS_ADVANTAGE_UNCLIPPED)
    if explosion > 0 and not is_clipped(row):
        where = ""
        if top is not None:
            std = facts.get(S.G_STD_AT_MAX_ABS)
            std_text = "" if std is None else f", divided by a group std of {std:.2g}"
            where = (
                f"max |advantage| {top:.4g} at step {facts[S.STEP]}, group "
                f"{facts[S.GROUP_ID]}{std_text}; "
            )
        twin = _twin(summary, row, clip_low=-3.0, clip_high=3.0)
        fix = (
            f"'{twin['label']}' is the clipped twin in this sweep"
            if twin is not None
            else "replay it with --clip-low -3 --clip-high 3 (the PR's recommendation)"
        )
        add(
            "explosion_unclipped",
            "hazard",
            top if top is not None else row.get("adv/abs_max"),
            f"{where}{_pct(explosion)} of trainable rows have |advantage| > {EXPLOSION:g} "
            f"and no clip bounds them. Clip to [-3, 3]: {fix}.",
        )
    elif explosion > 0:
        add(
            "explosion_clipped",
            "info",
            row.get("adv/clip_frac"),
            f"the clip changes {_pct(row.get('adv/clip_frac') or 0)} of trainable rows "
            f"({_pct(explosion)} would exceed |{EXPLOSION:g}|"
            + (f", up to {top:.4g}" if top is not None else "")
            + ").",
        )
    inversion = row.get("inversion/group_rate") or 0.0
    if inversion > 0:
        safe = _safe_lambda(summary, row)
        advice = (
            f"the largest inversion-free lambda_time with these settings here is {safe:.4g}"
            if safe is not None
            else "lower lambda_time, or set a floor above the unresolved rewards"
        )
        add(
            "inversion",
            "hazard",
            inversion,
            f"in {_pct(inversion)} of groups a resolved rollout ends below an unresolved one "
            f"({_pct(row.get('inversion/pair_rate') or 0)} of resolved/unresolved pairs): the time "
            f"term outweighs success. {advice[0].upper()}{advice[1:]}.",
        )
    uncharged = row.get("signal/uncharged_only_rate") or 0.0
    if uncharged > 0:
        add(
            S.G_UNCHARGED_ONLY_SIGNAL,
            "warning",
            uncharged,
            f"{_pct(uncharged)} of groups have a signal only because rows that were not charged "
            "(masked rows keep their reward and still vote in the baseline) differ from charged "
            "siblings that all ended equal (floored or charged alike): the update learns the mask, "
            "not the time. Use --exclude-masked (NeMo-RL PR #4160) or drop the floor.",
        )
    items = str(row.get("internal_items") or "").split(",")
    shaped_val = "4" in items or bool(row.get("validation_shaped"))
    val_rows = row.get("input/validation_rows") or 0
    if row["enabled"] and shaped_val and val_rows:
        acc, total = row.get("validation/accuracy"), row.get("validation/total_reward/mean")
        why = "internal item 4" if "4" in items else "the single-controller (sync) path"
        add(
            "validation_not_comparable",
            "warning",
            None if acc is None or total is None else total - acc,
            f"validation rows are charged ({why}): validation/total_reward/mean is "
            f"{total:.4g} against a raw accuracy of {acc:.4g}, so its validation curve cannot be "
            "set beside a run whose validation is unshaped. Compare validation/accuracy instead.",
        )
    gain = (row.get("signal/group_rate") or 0.0) - (row.get("signal/group_rate_raw") or 0.0)
    if (
        row["enabled"]
        and gain > GAIN_EPS
        and inversion == 0
        and (explosion == 0 or is_clipped(row))
    ):
        add(
            "recommended",
            "ok",
            gain,
            f"adds signal to {_pct(gain)} of groups over shaping off "
            f"({_pct(row.get('signal/group_rate_raw') or 0)} -> {_pct(row['signal/group_rate'])}) "
            "with no inversion and no unclipped explosion.",
        )
    return out


def _headline(kind: str, rows: list[dict[str, Any]], labels: dict[str, str]) -> dict[str, Any]:
    """One sentence for a kind met by many configs: how many, and the worst (or best) three."""
    ranked = sorted(rows, key=lambda r: -(r["value"] or 0.0))
    show = (lambda v: f"{v:.4g}") if kind.startswith("explosion_unclipped") else _pct
    names = ", ".join(f"'{labels[r[S.CONFIG_ID]]}' ({show(r['value'] or 0.0)})" for r in ranked[:3])
    what = {
        S.G_TIME_ONLY_SIGNAL: "have all-fail groups learning to fail faster",
        "explosion_unclipped": "have unclipped advantage explosions (|A| > 3); clip to [-3, 3]",
        "explosion_clipped": "rely on the clip to bound explosions",
        "inversion": "invert rewards (a resolved rollout below an unresolved one)",
        S.G_UNCHARGED_ONLY_SIGNAL: "get signal only from rows that were not charged",
        "validation_not_comparable": "charge validation rows (curves not comparable)",
        "recommended": "add signal with no inversion and no unclipped explosion",
    }[kind]
    lead = "largest gain" if kind == "recommended" else "worst"
    return {
        S.CONFIG_ID: None,
        "kind": kind,
        "severity": rows[0]["severity"] if kind == "recommended" else _worst(rows),
        "value": ranked[0]["value"],
        "text": f"{len(rows)} configs {what}; {lead}: {names}.",
        "headline": True,
    }


def _worst(rows: list[dict[str, Any]]) -> str:
    return min((r["severity"] for r in rows), key=SEVERITIES.index)


def findings(
    summary: pl.DataFrame, groups: pl.LazyFrame | pl.DataFrame, top: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The findings table (config_id, kind, severity, value, text, headline), most severe first;
    `top` is `top_groups(groups)` when the caller has it (the engine keeps it)."""
    facts = _group_facts(groups, top)
    labels = dict(summary.select(S.CONFIG_ID, "label").rows())
    rows: list[dict[str, Any]] = []
    for row in summary.iter_rows(named=True):  # one row per config: the summary is small
        rows.extend(_per_config(summary, row, facts.get(row[S.CONFIG_ID], {})))
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_kind.setdefault(r["kind"], []).append(r)
    out = []
    for kind, members in by_kind.items():
        many = len(members) > PER_KIND_IN_HEADLINE
        if many:
            out.append(_headline(kind, members, labels))
        out.extend({**r, "headline": not many} for r in members)
    if summary["enabled"].any() and "recommended" not in by_kind:
        out.append(
            {
                S.CONFIG_ID: None,
                "kind": "recommended",
                "severity": "warning",
                "value": None,
                "text": "No shaped config adds signal without an inversion or an unclipped "
                "explosion: lower lambda_time, use apply_to=correct, or clip to [-3, 3].",
                "headline": True,
            }
        )
    frame = pl.DataFrame(out, schema=SCHEMA) if out else pl.DataFrame(schema=SCHEMA)
    order = pl.col("severity").replace_strict(
        {s: i for i, s in enumerate(SEVERITIES)}, return_dtype=pl.Int32
    )
    return frame.with_row_index("_i").sort([order, "_i"]).drop("_i")
