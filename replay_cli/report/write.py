"""Write a report: `write`, the one serialiser of a `Report` (Parquet tables, charts, the manifest
and index.html, spec §6), and `write_directory` for the tables of compare, explain and verify."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import polars as pl

from replay_cli import catalogue as C
from replay_cli.io.files import atomic_path, staged_directory
from replay_cli.io.parquet import ROW_GROUP_SIZE
from replay_cli.progress import Progress, phase
from replay_cli.report.html import render_page
from replay_cli.report.model import TABLES, Report
from replay_cli.report.pages import render_tables_page

DESCRIBED = ("summary", "steps", "pilots")
"""Tables whose metric columns carry their catalogue description and unit as field metadata."""


def write_tables(directory: Path, tables: dict[str, pl.DataFrame]) -> None:
    """`name.parquet` per table; a metric column of the summary and step tables says what it
    is and in which unit (fractions and seconds: the machine units) in its field metadata."""
    for name, frame in tables.items():
        path = directory / f"{name}.parquet"
        if name not in DESCRIBED:
            with atomic_path(path) as tmp:
                frame.write_parquet(tmp, row_group_size=ROW_GROUP_SIZE)
            continue
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = frame.to_arrow()
        fields = [
            f.with_metadata(m) if (m := C.field_metadata(f.name)) else f for f in table.schema
        ]
        with atomic_path(path) as tmp:
            pq.write_table(table.cast(pa.schema(fields)), tmp, row_group_size=ROW_GROUP_SIZE)


def write_directory(
    out: Path,
    tables: dict[str, pl.DataFrame],
    extra: Callable[[Path], object] | None = None,
    *,
    force: bool = False,
) -> Path:
    """Write the tables of `compare`, `explain` or `verify` (and whatever `extra` puts in the
    directory, e.g. charts) as one atomic directory with a small page of its own."""
    with staged_directory(out, force) as tmp:
        write_tables(tmp, tables)
        if extra is not None:
            extra(tmp)
        render_tables_page(tmp, tables)
    return Path(out)


def write(
    report: Report,
    directory: Path,
    *,
    charts: bool = False,
    highlight: list[str] | None = None,
    progress: Progress | None = None,
) -> Path:
    """The one serialiser of a report: its tables (each file replaced atomically, so a report
    can be rewritten in place), the manifest, the charts when asked (`highlight`: the configs
    drawn step by step, default the report's) and index.html. Returns `directory`; the per-row
    table is written only when the report holds its rows (a replay streams them)."""
    result, v = report.result, report.verdict
    tables = {name: getattr(result, name) for name in TABLES}
    tables |= {"rollouts": result.rows, "findings": v.findings, "recommendation": v.recommendation}
    phase(progress, "tables")
    write_tables(directory, {k: v for k, v in tables.items() if v is not None})
    if charts:
        from replay_cli.report.plots import render_all

        tick = phase(progress, "charts")
        render_all(report, directory / "charts", highlight, tick)
    phase(progress, "index.html")
    with atomic_path(directory / "manifest.json") as tmp:
        tmp.write_text(json.dumps(report.manifest, indent=2) + "\n")
    render_page(report, directory)
    return directory
