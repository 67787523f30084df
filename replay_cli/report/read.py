"""Read a report directory back (for `plot`, `report`, `compare` and notebooks), and judge it
again where its verdict is missing or stale (`refresh_verdict`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from replay_cli import schema as S
from replay_cli.advice.recommendation import Rule
from replay_cli.advice.verdict import Verdict, judge, stored
from replay_cli.config import ReplayConfig
from replay_cli.errors import InputFileError
from replay_cli.io.files import atomic_path
from replay_cli.maths.top_groups import top_groups
from replay_cli.result import ReplayResult


def read_manifest(path: Path) -> dict[str, Any]:
    """A report's manifest.json ({} where there is none)."""
    manifest_path = Path(path) / "manifest.json"
    return json.loads(manifest_path.read_text()) if manifest_path.exists() else {}


def rule_of(manifest: dict[str, Any]) -> Rule:
    """The rule a report was judged by (the default for a report that predates the record)."""
    return Rule.model_validate(manifest["rule"]) if "rule" in manifest else Rule()


def _read(path: Path, name: str) -> pl.DataFrame | None:
    file = path / f"{name}.parquet"
    return pl.read_parquet(file) if file.exists() else None


def tops_of(path: Path) -> pl.DataFrame | None:
    """`top_groups` of a report's group table (None where it has no such column)."""
    groups = path / "groups.parquet"
    if not groups.exists():
        return None
    lf = pl.scan_parquet(groups)
    if S.G_MAX_ABS_ADVANTAGE_UNCLIPPED not in lf.collect_schema().names():
        return None
    return top_groups(lf)


def verdict_of(path: Path, summary: pl.DataFrame) -> Verdict:
    """The verdict a report stored, or, for a report written before it stored one, the verdict
    judged now from its tables under the rule it records."""
    manifest = read_manifest(path)
    rule = rule_of(manifest)
    recommendation, found = _read(path, "recommendation"), _read(path, "findings")
    if recommendation is not None and found is not None and S.SHAPING_OFF in recommendation.columns:
        return stored(recommendation, found, rule)
    return judge(summary, tops_of(path), _read(path, "resamples"), rule)


def load_report(path: str | Path) -> ReplayResult:
    """Read a report directory back (for `plot`, `compare` and notebooks); rows stay on disk."""
    path = Path(path)
    needed = ["groups.parquet", "steps.parquet", "summary.parquet", "manifest.json"]
    missing = [name for name in needed if not (path / name).exists()]
    if missing:
        raise InputFileError(f"{path} is not a replay report: missing {', '.join(missing)}.")
    manifest_data = read_manifest(path)
    configs = [
        ReplayConfig.model_validate({k: c[k] for k in ("shaping", "advantage", "metrics_by")})
        for c in manifest_data["configs"]
    ]
    summary = pl.read_parquet(path / "summary.parquet")
    advantages: dict[str, pl.Series] = {}
    deductions: dict[str, pl.Series] = {}
    minutes = None
    rows_path = path / "rollouts.parquet"
    if rows_path.exists():
        cols = [S.CONFIG_ID, S.ADVANTAGE, S.MASKED, S.CHARGED, S.DEDUCTION, S.MINUTES, S.SPLIT]
        rows = pl.read_parquet(rows_path, columns=cols)
        trainable = rows.filter(pl.col(S.ADVANTAGE).is_not_null() & ~pl.col(S.MASKED))
        charged = rows.filter(pl.col(S.CHARGED))
        for cid in summary[S.CONFIG_ID]:
            advantages[cid] = trainable.filter(pl.col(S.CONFIG_ID) == cid)[S.ADVANTAGE]
            deductions[cid] = charged.filter(pl.col(S.CONFIG_ID) == cid)[S.DEDUCTION]
        first = summary[S.CONFIG_ID][0]
        train = rows.filter(
            (pl.col(S.CONFIG_ID) == first) & (pl.col(S.SPLIT) != S.SPLIT_VALIDATION)
        )
        minutes = train[S.MINUTES]
    return ReplayResult(
        rows=None,
        groups=pl.read_parquet(path / "groups.parquet"),
        steps=pl.read_parquet(path / "steps.parquet"),
        summary=summary,
        configs=configs,
        advantages=advantages,
        deductions=deductions,
        minutes=minutes,
        resamples=_read(path, "resamples"),
        forecast=_read(path, "forecast"),
        verdict=verdict_of(path, summary),
    )


def read_highlight(path: Path) -> list[str] | None:
    """The --highlight configs a report was written with (None: the default choice)."""
    return read_manifest(path).get("highlight")


def refresh_verdict(path: Path) -> Verdict | None:
    """Judge a replay report again from its own tables under the rule it records, and rewrite
    recommendation.parquet and findings.parquet (atomically); None for a directory without a
    replay's summary."""
    summary_path = path / "summary.parquet"
    if not (summary_path.exists() and (path / "groups.parquet").exists()):
        return None
    summary = pl.read_parquet(summary_path)
    verdict = judge(summary, tops_of(path), _read(path, "resamples"), rule_of(read_manifest(path)))
    for name, frame in (("recommendation", verdict.recommendation), ("findings", verdict.findings)):
        with atomic_path(path / f"{name}.parquet") as tmp:
            frame.write_parquet(tmp)
    return verdict
