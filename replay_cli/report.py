"""Write a report directory atomically: Parquet tables, charts and a manifest (spec §6)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import polars as pl

from replay_cli.engine import ReplayResult
from replay_cli.errors import OutputExistsError
from replay_cli.validation import Rollouts

TABLES = ("rollouts", "groups", "steps", "summary")


def check_out_dir(out: Path, force: bool) -> None:
    """Refuse an existing report directory unless force (checked before any work is done)."""
    if out.exists() and not force:
        raise OutputExistsError(
            f"Output directory {out} already exists.\n\nPass --force to replace it."
        )
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"Output path {out} exists and is not a directory.")


def manifest(
    result: ReplayResult, rollouts: Rollouts, argv: list[str] | None = None
) -> dict[str, Any]:
    """Tool version, command line, input files with sizes and hashes, configs and loading notes."""
    return {
        "tool": "replay_cli",
        "version": version("replay-cli"),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "command_line": argv if argv is not None else sys.argv,
        "inputs": [vars(f) for f in rollouts.files],
        "resolved_derived_from_reward": rollouts.resolved_derived,
        "notes": rollouts.notes,
        "configs": [
            {"config_id": c.config_id, "label": c.label, **c.model_dump(mode="json")}
            for c in result.configs
        ],
        "tables": {name: f"{name}.parquet" for name in TABLES},
    }


def write_directory(
    out: Path,
    tables: dict[str, pl.DataFrame],
    extra: Callable[[Path], object] | None = None,
    *,
    force: bool = False,
) -> Path:
    """Write `name.parquet` per table (and whatever `extra` puts in the directory) in a temporary
    sibling directory, then rename it into place: readers see all of it or nothing."""
    out = Path(out)
    check_out_dir(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        for name, frame in tables.items():
            frame.write_parquet(tmp / f"{name}.parquet", row_group_size=256_000)
        if extra is not None:
            extra(tmp)
        _swap_into_place(tmp, out, force)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def write_report(
    out: Path,
    result: ReplayResult,
    rollouts: Rollouts,
    *,
    force: bool = False,
    charts: Callable[[ReplayResult, Path], list[Path]] | None = None,
    argv: list[str] | None = None,
) -> Path:
    """The report of spec §6: four tables, optional charts/, manifest.json."""
    tables = {
        "rollouts": result.rows,
        "groups": result.groups,
        "steps": result.steps,
        "summary": result.summary,
    }

    def extra(tmp: Path) -> None:
        if charts is not None:
            charts(result, tmp / "charts")
        text = json.dumps(manifest(result, rollouts, argv), indent=2) + "\n"
        (tmp / "manifest.json").write_text(text)

    return write_directory(out, tables, extra, force=force)


def _swap_into_place(tmp: Path, out: Path, force: bool) -> None:
    """rename() the finished directory over the target; an old report is removed only after."""
    if out.exists():
        if not force:
            raise OutputExistsError(
                f"Output directory {out} appeared while the report was written."
            )
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        try:
            os.replace(tmp, out)
        except OSError:
            raise OutputExistsError(
                f"Output directory {out} appeared while the report was written."
            ) from None


def load_report(path: str | Path) -> ReplayResult:
    """Read a report directory back into a ReplayResult (for `plot`, `compare` and notebooks)."""
    from replay_cli.config import ReplayConfig
    from replay_cli.errors import InputFileError

    path = Path(path)
    missing = [f"{n}.parquet" for n in TABLES if not (path / f"{n}.parquet").exists()]
    if not (path / "manifest.json").exists():
        missing.append("manifest.json")
    if missing:
        raise InputFileError(f"{path} is not a replay report: missing {', '.join(missing)}.")
    manifest_data = json.loads((path / "manifest.json").read_text())
    configs = [
        ReplayConfig.model_validate({k: c[k] for k in ("shaping", "advantage", "metrics_by")})
        for c in manifest_data["configs"]
    ]
    tables = {name: pl.read_parquet(path / f"{name}.parquet") for name in TABLES}
    return ReplayResult(
        rows=tables["rollouts"],
        groups=tables["groups"],
        steps=tables["steps"],
        summary=tables["summary"],
        configs=configs,
    )
