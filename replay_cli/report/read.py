"""Read a report directory back (for `plot`, `report`, `compare` and notebooks), and refresh
the tables derived from its own (findings)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from replay_cli import schema as S
from replay_cli.advice.findings import findings
from replay_cli.advice.recommendation import recommend
from replay_cli.config import ReplayConfig
from replay_cli.errors import InputFileError
from replay_cli.io.files import atomic_path
from replay_cli.result import ReplayResult


def load_report(path: str | Path) -> ReplayResult:
    """Read a report directory back (for `plot`, `compare` and notebooks); rows stay on disk."""
    path = Path(path)
    needed = ["groups.parquet", "steps.parquet", "summary.parquet", "manifest.json"]
    missing = [name for name in needed if not (path / name).exists()]
    if missing:
        raise InputFileError(f"{path} is not a replay report: missing {', '.join(missing)}.")
    manifest_data = json.loads((path / "manifest.json").read_text())
    configs = [
        ReplayConfig.model_validate({k: c[k] for k in ("shaping", "advantage", "metrics_by")})
        for c in manifest_data["configs"]
    ]
    result = ReplayResult(
        rows=None,
        groups=pl.read_parquet(path / "groups.parquet"),
        steps=pl.read_parquet(path / "steps.parquet"),
        summary=pl.read_parquet(path / "summary.parquet"),
        configs=configs,
    )
    verdict_path = path / "recommendation.parquet"
    result.recommendation = (
        pl.read_parquet(verdict_path) if verdict_path.exists() else recommend(result.summary)
    )
    findings_path = path / "findings.parquet"
    if findings_path.exists():
        result.findings = pl.read_parquet(findings_path)
    else:  # a report written before findings existed
        result.findings = findings(result.summary, pl.scan_parquet(path / "groups.parquet"))
    rows_path = path / "rollouts.parquet"
    if rows_path.exists():
        cols = [S.CONFIG_ID, S.ADVANTAGE, S.MASKED, S.CHARGED, S.DEDUCTION, S.MINUTES, S.SPLIT]
        rows = pl.read_parquet(rows_path, columns=cols)
        trainable = rows.filter(pl.col(S.ADVANTAGE).is_not_null() & ~pl.col(S.MASKED))
        charged = rows.filter(pl.col(S.CHARGED))
        for cid in result.summary[S.CONFIG_ID]:
            result.advantages[cid] = trainable.filter(pl.col(S.CONFIG_ID) == cid)[S.ADVANTAGE]
            result.deductions[cid] = charged.filter(pl.col(S.CONFIG_ID) == cid)[S.DEDUCTION]
        first = result.summary[S.CONFIG_ID][0]
        train = rows.filter(
            (pl.col(S.CONFIG_ID) == first) & (pl.col(S.SPLIT) != S.SPLIT_VALIDATION)
        )
        result.minutes = train[S.MINUTES]
    return result


def read_highlight(path: Path) -> list[str] | None:
    """The --highlight configs a report was written with (None: the default choice)."""
    manifest_path = Path(path) / "manifest.json"
    if not manifest_path.exists():
        return None
    return json.loads(manifest_path.read_text()).get("highlight")


def refresh_findings(path: Path) -> None:
    """Recompute findings.parquet from a replay report's summary and groups (atomically)."""
    summary_path, groups_path = path / "summary.parquet", path / "groups.parquet"
    if not (summary_path.exists() and groups_path.exists()):
        return
    summary = pl.read_parquet(summary_path)
    verdict = recommend(summary)
    table = findings(summary, pl.scan_parquet(groups_path), verdict=verdict)
    for name, frame in (("recommendation", verdict), ("findings", table)):
        with atomic_path(path / f"{name}.parquet") as tmp:
            frame.write_parquet(tmp)
