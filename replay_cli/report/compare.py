"""Compare reports: metric deltas against a reference config, and replayed curves against an
internal run's exported metrics (W&B panel CSV or a long step,metric,value CSV)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.errors import ConfigError, InputFileError
from replay_cli.report import layouts as L
from replay_cli.report.model import Report

_WANDB_COLUMN = re.compile(r"^(?P<run>.+?) - (?P<metric>.+)$")


def canonical_metric(name: str) -> str:
    """One name for a metric however it was logged: no `train/` prefix, the PR's slash names."""
    name = name.strip()
    for prefix in ("train/", "train:"):
        name = name.removeprefix(prefix)
    if name.startswith("val:"):
        name = "validation/" + name.removeprefix("val:")
    return C.INTERNAL_NAMES.get(name, name)


def _canonical(column: pl.Expr, names: pl.Series) -> pl.Expr:
    """canonical_metric over a column, computed once per distinct name."""
    return column.replace_strict(
        {n: canonical_metric(n) for n in names.to_list()}, return_dtype=pl.String
    )


def load_summaries(dirs: Sequence[str | Path]) -> pl.DataFrame:
    """The summary rows of several reports, with the report directory as a column."""
    frames = [
        Report.read(d).result.summary.with_columns(pl.lit(str(d)).alias("report")) for d in dirs
    ]
    return pl.concat(frames, how="diagonal_relaxed")


def _pick(summary: pl.DataFrame, key: str | None, what: str) -> dict:
    if key is None:
        return summary.row(0, named=True)
    hits = summary.filter(pl.col(S.CONFIG_ID).str.starts_with(key) | (pl.col("label") == key))
    if hits.height == 0:
        raise ConfigError(
            f"No config matches {what} {key!r}.\n\nChoose one of:\n{config_choices(summary)}"
        )
    return hits.row(0, named=True)


def config_choices(summary: pl.DataFrame) -> str:
    """The configs a user can name, one per line: `  <config_id>  <label>`."""
    return "\n".join(
        f"  {cid}  {label}" for cid, label in summary.select(S.CONFIG_ID, "label").iter_rows()
    )


def metric_deltas(summary: pl.DataFrame, reference: str | None = None) -> pl.DataFrame:
    """Long table: each config's headline metrics, the reference config's, and the difference."""
    ref = _pick(summary, reference, "--reference")
    columns: dict[str, list[str]] = {}
    for column in summary.columns:
        columns.setdefault(canonical_metric(column), []).append(column)

    def value_of(row: dict, metric: str) -> float | None:
        # Internal and PR names of one metric are different columns; a config fills one of them.
        return next((row[c] for c in columns[metric] if row[c] is not None), None)

    rows = []
    for row in summary.iter_rows(named=True):
        for metric in L.DELTA:
            if metric not in columns:
                continue
            value, base = value_of(row, metric), value_of(ref, metric)
            delta = None if value is None or base is None else value - base
            rows.append((row["report"], row[S.CONFIG_ID], row["label"], metric, value, base, delta))
    schema = dict.fromkeys(("report", S.CONFIG_ID, "label", "metric"), pl.String)
    schema |= dict.fromkeys(("value", "reference", "delta"), pl.Float64)
    return pl.DataFrame(rows, schema=schema, orient="row")


def read_internal(path: str | Path, run: str | None = None) -> pl.DataFrame:
    """An internal run's metrics as long rows (run, step, metric, value) with canonical names,
    from a W&B run directory (`wandb/run-*/`, its transaction log read with W&B's records), a
    TensorBoard log (TensorBoard's own reader; `run` picks one of several) or a CSV."""
    from replay_cli.io.tensorboard import is_tensorboard, read_scalars
    from replay_cli.io.wandb_run import is_wandb, read_run

    path = Path(path)
    if is_wandb(path):  # before TensorBoard: a synced run may hold event files too
        long = read_run(path, run).scalars()
    elif is_tensorboard(path):
        long = read_scalars(path, run)
    elif path.is_dir():
        raise InputFileError(f"{path} is a directory without W&B runs or TensorBoard event files.")
    else:
        return read_internal_csv(path)
    return long.with_columns(_canonical(pl.col("metric"), long["metric"].unique()))


def read_internal_csv(path: str | Path) -> pl.DataFrame:
    """An internal run's metrics as long rows (run, step, metric, value) with canonical names."""
    path = Path(path)
    try:
        raw = pl.read_csv(path, infer_schema=False)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputFileError(f"Cannot read internal metrics {path}: {exc}") from None
    lower = {c.lower(): c for c in raw.columns}

    def rows(run: pl.Expr, metric: pl.Expr, value: pl.Expr) -> pl.DataFrame:
        step = pl.col(lower["step"])
        return raw.select(
            run.alias("run"), step.alias("step"), metric.alias("metric"), value.alias("value")
        )

    if {"step", "metric", "value"} <= lower.keys():
        run = pl.col(lower["run"]) if "run" in lower else pl.lit(path.stem)
        long = rows(run, pl.col(lower["metric"]), pl.col(lower["value"]))
    elif "step" in lower:
        series = []
        for column in raw.columns:
            match = _WANDB_COLUMN.match(column)
            if column == lower["step"] or column.endswith(("__MIN", "__MAX")) or not match:
                continue
            series.append(rows(pl.lit(match["run"]), pl.lit(match["metric"]), pl.col(column)))
        if not series:
            raise InputFileError(f"{path}: no '<run> - <metric>' columns found (W&B panel export).")
        long = pl.concat(series)
    else:
        raise InputFileError(
            f"{path}: expected a W&B panel export (a 'Step' column) or columns step,metric,value."
        )
    try:
        out = long.with_columns(
            pl.col("step").cast(pl.Float64).cast(pl.Int64),
            pl.col("value").replace("", None).cast(pl.Float64),
            _canonical(pl.col("metric"), long["metric"].unique()),
        )
    except pl.exceptions.PolarsError as exc:
        raise InputFileError(f"{path}: step and value must be numbers ({exc}).") from None
    return out.drop_nulls("value")


def join_internal(steps: pl.DataFrame, internal: pl.DataFrame, config_id: str) -> pl.DataFrame:
    """Replayed per-step values beside the internal run's, on canonical metric names and step."""
    mine = steps.filter(pl.col(S.CONFIG_ID) == config_id)
    metric_columns = [
        c for c in mine.columns if c not in (S.CONFIG_ID, S.STEP) and mine[c].dtype.is_numeric()
    ]
    replayed = mine.unpivot(
        index=S.STEP, on=metric_columns, variable_name="metric", value_name="replayed"
    )
    replayed = replayed.with_columns(
        _canonical(pl.col("metric"), replayed["metric"].unique()),
        pl.col("replayed").cast(pl.Float64),
    ).drop_nulls("replayed")
    theirs = internal.group_by("step", "metric").agg(pl.col("value").mean().alias("internal"))
    joined = replayed.join(
        theirs, left_on=[S.STEP, "metric"], right_on=["step", "metric"], how="inner"
    )
    return (
        joined.rename({S.STEP: "step"})
        .with_columns((pl.col("replayed") - pl.col("internal")).alias("delta"))
        .sort("metric", "step")
    )


def choose_config(summary: pl.DataFrame, key: str | None) -> str:
    """The config to set beside an internal run: the one given, the only one, or the only internal one."""
    if key is not None:
        return _pick(summary, key, "--config-id")[S.CONFIG_ID]
    if summary.height == 1:
        return summary[S.CONFIG_ID][0]
    internal = summary.filter(pl.col("semantics") == "internal")
    if internal.height == 1:
        return internal[S.CONFIG_ID][0]
    raise ConfigError(
        f"{summary.height} configs could be set beside the internal run.\n\nPick one with "
        f"--config-id ID (its id, a prefix of it, or its label):\n{config_choices(summary)}"
    )


def delta_table(deltas: pl.DataFrame) -> pl.DataFrame:
    """The compared metrics' changes from the reference, one row per (report, config)."""
    return deltas.pivot(
        on="metric", index=["report", "label"], values="delta", aggregate_function="first"
    )


def internal_summary(joined: pl.DataFrame) -> pl.DataFrame:
    """Per metric: steps compared, both means and the largest |replayed - internal|."""
    return joined.group_by("metric", maintain_order=True).agg(
        pl.len().alias("steps"),
        pl.col("replayed").mean().alias("replayed mean"),
        pl.col("internal").mean().alias("internal mean"),
        pl.col("delta").abs().max().alias("max |delta|"),
    )
