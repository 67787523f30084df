"""`replay-cli import FORMAT SRC... --out OUT.parquet`: logs of other formats -> canonical Parquet."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from replay_cli import schema as S
from replay_cli.errors import ConfigError, InputFileError
from replay_cli.io import gym, wandb
from replay_cli.io.jsonl import ImportStats, convert

FORMATS = ("nemo-gym", "wandb-table")


def import_logs(
    fmt: str,
    sources: Sequence[str | Path],
    out: Path,
    *,
    step: int | None = None,
    group_size: int | None = None,
    skip_bad: bool = False,
) -> ImportStats:
    """Convert NeMo-Gym rollout JSONL or W&B full_result tables into one canonical Parquet file."""
    paths = [Path(p) for p in sources]
    for path in paths:
        if not path.is_file():
            raise InputFileError(f"Input file {path} does not exist.")
        if path.stat().st_size == 0:
            raise InputFileError(f"Input file {path} is empty (0 bytes).")
    if group_size is not None and group_size < 1:
        raise ConfigError(f"--group-size must be at least 1, got {group_size}")
    if fmt == "nemo-gym":
        grouper = gym.Grouper(group_size)

        def to_row(record: Any, path: Path) -> dict[str, Any]:
            row = gym.rollout_row(record, grouper.next())
            if step is not None:
                row[S.STEP] = step
            return row

        return convert(
            paths, out, gym.schema(step is not None), gym.gym_records, to_row, skip_bad=skip_bad
        )
    if fmt == "wandb-table":
        steps = {}
        for path in paths:
            found = step if step is not None else wandb.step_from_name(path)
            if found is None:
                raise InputFileError(
                    f"Cannot tell the training step of {path} from its name.\n\nPass --step N."
                )
            steps[path] = found
        groupers = {path: gym.Grouper(group_size) for path in paths}

        def to_table_row(record: Any, path: Path) -> dict[str, Any]:
            row = gym.rollout_row(record, groupers[path].next())
            row[S.STEP] = steps[path]
            return row

        return convert(
            paths, out, gym.schema(True), wandb.table_records, to_table_row, skip_bad=skip_bad
        )
    raise ConfigError(f"Unknown import format {fmt!r}; choose one of {', '.join(FORMATS)}.")
