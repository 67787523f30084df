"""A report as TensorBoard runs, one per config named after its label, to set the replayed curves
beside a real run's: tags and HParams as docs/guide.md, "TensorBoard", lists them. Written with
tensorboardX, the optional extra `replay-cli[tensorboard]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.errors import missing_extra
from replay_cli.io.files import staged_directory
from replay_cli.progress import Tick
from replay_cli.report import layouts as L
from replay_cli.report.facets import varying
from replay_cli.report.model import Report
from replay_cli.report.run_tags import (
    headline,
    headline_name,
    param_values,
    run_names,
    step_scalars,
)


def hparam_tag(column: str) -> str:
    """A summary column's HParams metric tag: `hparams/step_resolve_vs_off_long`."""
    return "hparams/" + column.replace("/", "_").replace("@", "_")


HPARAM_METRICS = {
    headline_name(column): hparam_tag(headline_name(column)) for column in L.TRACKER_HEADLINE
}
"""`headline`'s names (human units, `_pct` for %) -> the HParams dashboard's metric tag."""


def summary_writer() -> Any:
    """tensorboardX's SummaryWriter, or a ConfigError (exit 2) naming the extra to install."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        raise missing_extra("Writing TensorBoard runs", "tensorboard") from None
    return SummaryWriter


def write_runs(
    report: Report, out: str | Path, *, force: bool = False, tick: Tick | None = None
) -> list[Path]:
    """Write one TensorBoard run per config of a report into the directory `out`,
    atomically (an existing one is refused unless `force`); returns the run directories.
    `tick(done, total)` after each run."""
    summary_writer()
    out = Path(out)
    roles = dict(report.verdict.recommendation.select(S.CONFIG_ID, C.ROLE).rows())
    with staged_directory(out, force) as tmp:
        names = _write(report.result.steps, report.result.summary, roles, tmp, tick)
    return [out / name for name in names]


def hparam_values(summary: pl.DataFrame, roles: dict[str, str]) -> list[dict[str, Any]]:
    """Each run's HParams: the parameters the sweep varies (a one-config report: its label, so
    the HParams view still names the run) and its role."""
    params = varying(summary, exclude=()) or ["label"]
    return [
        {**v, C.ROLE: roles[cid]}
        for v, cid in zip(param_values(summary, params), summary[S.CONFIG_ID], strict=True)
    ]


def _write(
    steps: pl.DataFrame,
    summary: pl.DataFrame,
    roles: dict[str, str],
    out: Path,
    tick: Tick | None = None,
) -> list[str]:
    writer_class = summary_writer()
    from tensorboardX.summary import hparams

    values = hparam_values(summary, roles)
    metrics = {
        tag: 0.0
        for column, tag in zip(L.TRACKER_HEADLINE, HPARAM_METRICS.values(), strict=True)
        if column in summary.columns
    }
    experiment, _, _ = hparams(values[0], metrics)
    root = writer_class(str(out))
    root.file_writer.add_summary(experiment)
    root.close()
    names = run_names(summary)
    rows = zip(summary.iter_rows(named=True), values, names, strict=True)
    for done, (row, hparam, name) in enumerate(rows, start=1):
        writer = writer_class(str(out / name))
        for step, scalars in step_scalars(steps, row[S.CONFIG_ID]):
            for tag, value in scalars.items():
                writer.add_scalar(tag, value, step)
        for part in hparams(hparam, metrics)[1:]:  # the session's start and end
            writer.file_writer.add_summary(part)
        for column, value in headline(row).items():
            writer.add_scalar(HPARAM_METRICS[column], value, 0)
        writer.close()
        if tick is not None:
            tick(done, summary.height)
    return names


def open_commands(out: str | Path) -> list[str]:
    """The one-line commands that open the runs in TensorBoard and upload them to W&B."""
    return [f"tensorboard --logdir {out}", f"wandb sync --sync-tensorboard {out}"]
