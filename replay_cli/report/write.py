"""Write a report directory atomically: Parquet tables, findings, charts, a manifest and
index.html (spec §6)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.config import unique_labels
from replay_cli.io.files import staged_directory
from replay_cli.io.parquet import ROW_GROUP_SIZE
from replay_cli.maths.peers import whitening_weights
from replay_cli.progress import Progress, phase
from replay_cli.report.html import render_index
from replay_cli.report.options import ReportOptions
from replay_cli.result import ReplayResult
from replay_cli.rollouts.validation import Rollouts


def manifest(
    result: ReplayResult, rollouts: Rollouts, options: ReportOptions | None = None
) -> dict[str, Any]:
    """Tool version, command line, input files with sizes and hashes, configs, loading notes, and
    the report's options (rows, highlight, the decision measure's settings, the rule)."""
    options = options or ReportOptions()
    labels = unique_labels(result.configs)
    return {
        "tool": "replay_cli",
        "version": version("replay-cli"),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "command_line": sys.argv,
        "inputs": [vars(f) for f in rollouts.files],
        "resolved_derived_from_reward": rollouts.resolved_derived,
        "notes": [*rollouts.notes, *result.notes],
        "computed_by": result.computed_by,
        "rows": options.rows,
        "highlight": list(options.highlight) or None,
        "measure": options.measure.model_dump(mode="json"),
        "forecast": None if options.forecast is None else options.forecast.model_dump(mode="json"),
        "rule": options.rule.model_dump(mode="json"),
        **({"tensorboard": str(options.tensorboard)} if options.tensorboard else {}),
        **({"wandb": str(options.wandb)} if options.wandb else {}),
        **(
            {"whitening_weights": whitening_weights(rollouts.frame.collect_schema().names())}
            if any(c.advantage.estimator == "reinforce-pp-baseline" for c in result.configs)
            else {}
        ),
        "configs": [
            {"config_id": c.config_id, "label": labels[c.config_id], **c.model_dump(mode="json")}
            for c in result.configs
        ],
        "tables": {
            name: f"{name}.parquet"
            for name in S.REPORT_TABLES
            if (name != "rollouts" or options.rows != "none")
            # An input without training rows has nothing to forecast: no table is written; the
            # resamples are the forecast's (the verdict's confidence reads them).
            and (name != "forecast" or result.forecast is not None)
            and (name != "resamples" or result.resamples is not None)
        },
    }


DESCRIBED = ("summary", "steps")
"""Tables whose metric columns carry their catalogue description and unit as field metadata."""


def write_tables(directory: Path, tables: dict[str, pl.DataFrame]) -> None:
    """`name.parquet` per table; a metric column of the summary and step tables says what it
    is and in which unit (fractions and seconds: the machine units) in its field metadata."""
    for name, frame in tables.items():
        path = directory / f"{name}.parquet"
        if name not in DESCRIBED:
            frame.write_parquet(path, row_group_size=ROW_GROUP_SIZE)
            continue
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = frame.to_arrow()
        fields = []
        for field in table.schema:
            meta = C.field_metadata(field.name)
            fields.append(field.with_metadata(meta) if meta else field)
        pq.write_table(table.cast(pa.schema(fields)), path, row_group_size=ROW_GROUP_SIZE)


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
    options: ReportOptions | None = None,
    progress: Progress | None = None,
) -> None:
    """Everything of a judged replay's report but what the replay streamed (rows, groups): steps,
    summary, the bootstrap table, the verdict's tables, charts, manifest and index.html."""
    options = options or ReportOptions()
    if result.verdict is None:
        raise ValueError("finish_report writes a judged result (api.judged)")
    tables = {"steps": result.steps, "summary": result.summary}
    if result.groups is not None:
        tables["groups"] = result.groups
    if result.rows is not None:
        tables["rollouts"] = result.rows
    if result.resamples is not None:
        tables["resamples"] = result.resamples
    if result.forecast is not None:
        tables["forecast"] = result.forecast
    tables["findings"] = result.verdict.findings
    tables["recommendation"] = result.verdict.recommendation
    phase(progress, "tables")
    write_tables(tmp, tables)
    if options.charts:
        from replay_cli.report.plots import render_all

        tick = phase(progress, "charts")
        render_all(result, tmp / "charts", list(options.highlight) or None, tick)
    phase(progress, "index.html")
    text = json.dumps(manifest(result, rollouts, options), indent=2) + "\n"
    (tmp / "manifest.json").write_text(text)
    render_index(tmp, result.top_groups)
