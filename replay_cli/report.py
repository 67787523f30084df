"""Write a report directory atomically: Parquet tables, charts and a manifest (spec §6)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from replay_cli import schema as S
from replay_cli.config import ReplayConfig
from replay_cli.engine import ReplayResult
from replay_cli.errors import InputFileError, OutputExistsError
from replay_cli.findings import findings
from replay_cli.html_report import render_index
from replay_cli.io.parquet import atomic_path
from replay_cli.peers import whitening_weights
from replay_cli.validation import Rollouts

TABLES = ("rollouts", "groups", "steps", "summary", "findings")
ROW_GROUP_SIZE = 128_000
RowsMode = Literal["all", "sample", "none"]
SAMPLE_ONE_IN = 20


def check_out_dir(out: Path, force: bool) -> None:
    """Refuse an existing report directory unless force (checked before any work is done)."""
    if out.exists() and not force:
        raise OutputExistsError(
            f"Output directory {out} already exists.\n\nPass --force to replace it."
        )
    if out.exists() and not out.is_dir():
        raise OutputExistsError(f"Output path {out} exists and is not a directory.")


@contextmanager
def staged_directory(out: Path, force: bool = False) -> Iterator[Path]:
    """A temporary sibling directory that replaces `out` by rename when the block succeeds.

    Readers see the whole report or none of it; on any error (or a kill) only the hidden
    temporary directory is left behind, and an error removes it.
    """
    out = Path(out)
    check_out_dir(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        yield tmp
        _swap_into_place(tmp, out, force)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


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


class ParquetRowSink:
    """Streams per-row results into one Parquet file, chunk by chunk (`--rows all|sample|none`).

    `sample` keeps whole groups, about one in SAMPLE_ONE_IN, picked by a hash of (step, group_id)
    so the same groups are kept for every config.
    """

    def __init__(self, path: Path, mode: RowsMode = "all") -> None:
        self.path, self.mode = path, mode
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None
        self._schema: pa.Schema | None = None

    def __call__(self, rows: pl.DataFrame) -> None:
        if self.mode == "none":
            return
        if self.mode == "sample":
            key = pl.struct(S.STEP, S.GROUP_ID).hash(seed=0)
            rows = rows.filter(key % SAMPLE_ONE_IN == 0)
        table = rows.to_arrow()
        if self._writer is None:
            self._schema = table.schema
            # Dictionaries pay off for repeated strings only; on floats they double the write time.
            strings = [f.name for f in self._schema if pa.types.is_string(f.type)]
            strings += [f.name for f in self._schema if pa.types.is_large_string(f.type)]
            self._writer = pq.ParquetWriter(self.path, self._schema, use_dictionary=strings)
        table = table.select(self._schema.names)
        if table.schema != self._schema:  # a later chunk may infer a null or narrower column
            table = table.cast(self._schema)
        self._writer.write_table(table, row_group_size=ROW_GROUP_SIZE)
        self.rows += rows.height

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def manifest(
    result: ReplayResult,
    rollouts: Rollouts,
    argv: list[str] | None = None,
    rows_mode: RowsMode = "all",
    highlight: list[str] | None = None,
) -> dict[str, Any]:
    """Tool version, command line, input files with sizes and hashes, configs and loading notes."""
    return {
        "tool": "replay_cli",
        "version": version("replay-cli"),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "command_line": argv if argv is not None else sys.argv,
        "inputs": [vars(f) for f in rollouts.files],
        "resolved_derived_from_reward": rollouts.resolved_derived,
        "notes": [*rollouts.notes, *result.notes],
        "rows": rows_mode,
        "highlight": highlight,
        **(
            {"whitening_weights": whitening_weights(rollouts.frame.collect_schema().names())}
            if any(c.advantage.estimator == "reinforce-pp-baseline" for c in result.configs)
            else {}
        ),
        "configs": [
            {"config_id": c.config_id, "label": c.label, **c.model_dump(mode="json")}
            for c in result.configs
        ],
        "tables": {
            name: f"{name}.parquet" for name in TABLES if name != "rollouts" or rows_mode != "none"
        },
    }


def write_tables(directory: Path, tables: dict[str, pl.DataFrame]) -> None:
    """`name.parquet` per table."""
    for name, frame in tables.items():
        frame.write_parquet(directory / f"{name}.parquet", row_group_size=ROW_GROUP_SIZE)


def write_directory(
    out: Path,
    tables: dict[str, pl.DataFrame],
    extra: Callable[[Path], object] | None = None,
    *,
    force: bool = False,
) -> Path:
    """Write tables (and whatever `extra` puts in the directory) as one atomic directory."""
    with staged_directory(out, force) as tmp:
        write_tables(tmp, tables)
        if extra is not None:
            extra(tmp)
        render_index(tmp)
    return Path(out)


def finish_report(
    tmp: Path,
    result: ReplayResult,
    rollouts: Rollouts,
    *,
    charts: Callable[[ReplayResult, Path, list[str] | None], list[Path]] | None = None,
    argv: list[str] | None = None,
    rows_mode: RowsMode = "all",
    highlight: list[str] | None = None,
) -> None:
    """Everything of a report but the per-row table: groups, steps, summary, findings, charts,
    manifest and index.html."""
    tables = {"steps": result.steps, "summary": result.summary}
    if result.groups is not None:
        tables["groups"] = result.groups
    if result.rows is not None:
        tables["rollouts"] = result.rows
    write_tables(tmp, tables)
    groups = result.groups if result.groups is not None else pl.scan_parquet(tmp / "groups.parquet")
    result.findings = findings(result.summary, groups)
    write_tables(tmp, {"findings": result.findings})
    if charts is not None:
        charts(result, tmp / "charts", highlight)
    text = json.dumps(manifest(result, rollouts, argv, rows_mode, highlight), indent=2) + "\n"
    (tmp / "manifest.json").write_text(text)
    render_index(tmp)


def write_report(
    out: Path,
    result: ReplayResult,
    rollouts: Rollouts,
    *,
    force: bool = False,
    charts: Callable[[ReplayResult, Path, list[str] | None], list[Path]] | None = None,
    argv: list[str] | None = None,
) -> Path:
    """The report of spec §6 from an in-memory result: four tables, optional charts/, manifest.json."""
    with staged_directory(out, force) as tmp:
        finish_report(tmp, result, rollouts, charts=charts, argv=argv)
    return Path(out)


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
    table = findings(pl.read_parquet(summary_path), pl.scan_parquet(groups_path))
    with atomic_path(path / "findings.parquet") as tmp:
        table.write_parquet(tmp)
