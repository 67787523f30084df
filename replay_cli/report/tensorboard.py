"""A report as TensorBoard runs, to set the replayed curves beside a real run's.

One run per config, in a sub-directory named after its (unique) label: the per-step trainer
metrics under the trainer's own tags (`train/<name>` and `validation/<name>`, the names NeMo-RL's
logger writes to TensorBoard, at the training step), the replay's diagnostics under `replay/`,
and an HParams record (the parameters that vary across the report, the recommendation's role, and
the headline numbers) so
TensorBoard's HParams dashboard gives the sortable table and the parallel-coordinates view of a
sweep. Written with tensorboardX, the optional extra `replay-cli[tensorboard]`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.words import param_text
from replay_cli.errors import ConfigError
from replay_cli.io.files import staged_directory
from replay_cli.progress import Tick
from replay_cli.report.facets import varying
from replay_cli.result import ReplayResult

EXTRA = "replay-cli[tensorboard]"
REPLAY_TAGS = (
    C.SIGNAL,
    C.TIME_ONLY_GROUPS,
    C.INVERSIONS,
    C.EXPLOSION_UNCLIPPED,
    C.RESOLVE_PUSH,
    C.FAIL_PUSH,
    C.SOLVE_PUSH,
)
"""Per-step columns of `steps.parquet` written as the replay's own curves, `replay/<name>`, in
the units a person reads (the catalogue's: shares in %)."""
HPARAM_COLUMNS = (
    C.RESOLVE_VS_OFF,
    C.RESOLVE_VS_OFF_LOW,
    C.RESOLVE_VS_OFF_LONG,
    C.RESOLVE_VS_OFF_LOW_LONG,
    C.SOLVE_VS_OFF,
    C.FAIL_VS_OFF,
    C.TIME_ONLY_SHARE,
    C.INTRODUCED,
    C.EXPLOSION_TRAINED,
    C.TOTAL_REWARD,
)
"""The summary columns the HParams dashboard shows per run (one scalar at step 0): the decision
measure's, then what disqualifies; in the catalogue's human units."""


def hparam_tag(column: str) -> str:
    """A summary column's HParams metric tag: `hparams/step_resolve_vs_off_long`."""
    return "hparams/" + column.replace("/", "_").replace("@", "_")


HPARAM_METRICS = {column: hparam_tag(column) for column in HPARAM_COLUMNS}
"""Summary column -> the HParams dashboard's metric tag."""
NOT_TRAINER = {S.CONFIG_ID, S.STEP, "rows", "groups", *REPLAY_TAGS}


def summary_writer() -> Any:
    """tensorboardX's SummaryWriter, or a ConfigError (exit 2) naming the extra to install."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        raise ConfigError(
            f"Writing TensorBoard runs needs the optional extra {EXTRA}: "
            f"pip install '{EXTRA}' (in a checkout: uv sync --extra tensorboard)."
        ) from None
    return SummaryWriter


def run_name(label: str) -> str:
    """A label as a directory name every file system takes: λ spelt out, '/' and other specials
    as '_', no leading dot."""
    name = label.replace("λ", "lambda").replace("/", "÷")
    name = re.sub(r"[^A-Za-z0-9._=,+\-\[\]÷]+", "_", name).replace("÷", "over")
    return name.strip("._") or "config"


def trainer_tag(metric: str) -> str:
    """The tag NeMo-RL's logger gives a step metric: `train/<name>`, validation metrics as they are."""
    return metric if metric.startswith("validation/") else f"train/{metric}"


def hparam_values(summary: pl.DataFrame, params: list[str]) -> list[dict[str, Any]]:
    """Per config, the HParams value of each parameter, one type per parameter: numbers and
    booleans where every config has one, else the text the labels use (`none`, `1/60`)."""
    columns = {}
    for p in params:
        values = summary[p].to_list()
        typed = all(isinstance(v, bool | int | float) for v in values) or all(
            isinstance(v, str) for v in values
        )
        # λ as people write it (1/60), as on every other surface; the float is in the overrides.
        written = p == "lambda_time" or not typed
        columns[p] = [param_text(p, v) for v in values] if written else values
    return [{p: columns[p][i] for p in params} for i in range(summary.height)]


def write_runs(
    result: ReplayResult, out: str | Path, *, force: bool = False, tick: Tick | None = None
) -> list[Path]:
    """Write one TensorBoard run per config of a judged result into the directory `out`,
    atomically (an existing one is refused unless `force`); returns the run directories.
    `tick(done, total)` after each run."""
    summary_writer()
    out = Path(out)
    if result.recommendation is None:
        raise ValueError("write_runs writes a judged result (its roles are the verdict's)")
    roles = dict(result.recommendation.select(S.CONFIG_ID, "role").rows())
    with staged_directory(out, force) as tmp:
        names = _write(result.steps, result.summary, roles, tmp, tick)
    return [out / name for name in names]


def _write(
    steps: pl.DataFrame,
    summary: pl.DataFrame,
    roles: dict[str, str],
    out: Path,
    tick: Tick | None = None,
) -> list[str]:
    writer_class = summary_writer()
    from tensorboardX.summary import hparams

    params = varying(summary, exclude=()) or ["label"]
    values = [
        {**v, "role": roles[cid]}
        for v, cid in zip(hparam_values(summary, params), summary[S.CONFIG_ID], strict=True)
    ]
    metrics = {tag: 0.0 for column, tag in HPARAM_METRICS.items() if column in summary.columns}
    experiment, _, _ = hparams(values[0], metrics)
    root = writer_class(str(out))
    root.file_writer.add_summary(experiment)
    root.close()
    runs = []
    for row, hparam in zip(summary.iter_rows(named=True), values, strict=True):
        path = out / run_name(row["label"])
        writer = writer_class(str(path))
        mine = steps.filter(pl.col(S.CONFIG_ID) == row[S.CONFIG_ID]).sort(S.STEP)
        numeric = [c for c, t in mine.schema.items() if c not in NOT_TRAINER and t.is_numeric()]
        for step_row in mine.iter_rows(named=True):
            step = int(step_row[S.STEP])
            for column in numeric:
                if step_row[column] is not None:
                    writer.add_scalar(trainer_tag(column), step_row[column], step)
            for column in REPLAY_TAGS:
                value = C.metric(column).human(step_row.get(column))
                if value is not None:
                    writer.add_scalar(f"replay/{column}", value, step)
        _, start, end = hparams(hparam, metrics)
        writer.file_writer.add_summary(start)
        writer.file_writer.add_summary(end)
        for column, tag in HPARAM_METRICS.items():
            value = C.metric(column).human(row.get(column))
            if value is not None:
                writer.add_scalar(tag, value, 0)
        writer.close()
        runs.append(path.name)
        if tick is not None:
            tick(len(runs), summary.height)
    return runs


def open_commands(out: str | Path) -> list[str]:
    """The one-line commands that open the runs in TensorBoard and upload them to W&B."""
    return [
        f"tensorboard --logdir {out}",
        f"wandb sync --sync-tensorboard {out}",
    ]
