"""`replay-cli import FORMAT SRC... --out OUT.parquet`: logs of other formats -> canonical Parquet.

`IMPORTERS` is the one table of formats: the CLI's help and the error for an unknown format read
it. The CLI reads it at `--help` time, so this module loads the readers (pyarrow, polars) only
when a conversion runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replay_cli.errors import ConfigError, InputFileError

if TYPE_CHECKING:
    from replay_cli.io.jsonl import ImportStats


@dataclass(frozen=True)
class Importer:
    """One input format: what its files are (for the help), and the conversion
    `(paths, out, step, group_size, skip_bad) -> ImportStats`."""

    what: str
    convert: Callable[[list[Path], Path, int | None, int | None, bool], ImportStats]


def _nemo_gym(
    paths: list[Path], out: Path, step: int | None, group_size: int | None, skip_bad: bool
) -> ImportStats:
    from replay_cli import schema as S
    from replay_cli.io import gym
    from replay_cli.io.jsonl import convert

    grouper = gym.Grouper(group_size)

    def to_row(record: Any, path: Path) -> dict[str, Any]:
        row = gym.rollout_row(record, grouper)
        if step is not None:
            row[S.STEP] = step
        return row

    return convert(
        paths, out, gym.schema(step is not None), gym.gym_records, to_row, skip_bad=skip_bad
    )


def _wandb_table(
    paths: list[Path], out: Path, step: int | None, group_size: int | None, skip_bad: bool
) -> ImportStats:
    from replay_cli import schema as S
    from replay_cli.io import gym, wandb
    from replay_cli.io.jsonl import convert

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
        row = gym.rollout_row(record, groupers[path])
        row[S.STEP] = steps[path]
        return row

    return convert(
        paths, out, gym.schema(True), wandb.table_records, to_table_row, skip_bad=skip_bad
    )


IMPORTERS: dict[str, Importer] = {
    "nemo-gym": Importer("rollout JSONL", _nemo_gym),
    "wandb-table": Importer("full_result table JSON", _wandb_table),
}
"""Every import format by its CLI name: a new format is a reader in io/ and one entry here."""


def formats_help() -> str:
    """The FORMAT argument's help, from the table."""
    return " | ".join(f"{name} ({imp.what})" for name, imp in IMPORTERS.items()) + "."


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
    if fmt not in IMPORTERS:
        raise ConfigError(f"Unknown import format {fmt!r}; choose one of {', '.join(IMPORTERS)}.")
    return IMPORTERS[fmt].convert(paths, out, step, group_size, skip_bad)
