"""`replay-cli import FORMAT SRC... --out OUT.parquet`: logs of other formats -> canonical Parquet.

`IMPORTERS` is the one table of formats: the CLI's help and the error for an unknown format read it.
The CLI reads it at `--help` time, so this module loads the readers (pyarrow, polars) only when a
conversion runs."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replay_cli.errors import ConfigError, InputFileError

if TYPE_CHECKING:
    from replay_cli.io.jsonl import ImportStats


@dataclass(frozen=True)
class Options:
    """How one import runs: the step and grouping, bad lines, the decoder, and a progress
    callback `(bytes read, bytes in all)`."""

    step: int | None = None
    group_size: int | None = None
    skip_bad: bool = False
    decode: Callable[[bytes], Any] | None = None  # None: the slim decoder (io/slim.py)
    progress: Callable[[int, int], None] | None = None
    mapping: dict[str, str] | None = None  # table: --map SRC=DST
    split: str | None = None  # table: a saved DatasetDict's or a Hub dataset's split
    durations: bool = False  # table: run times written as '12m', '00:12:00' read into seconds


@dataclass(frozen=True)
class Importer:
    """One input format: what its files are (for the help), and the conversion
    `(paths, out, options) -> ImportStats`."""

    what: str
    convert: Callable[[list[Path], Path, Options], ImportStats]


def _bytes_read(paths: list[Path], options: Options) -> Callable[[Path], Any]:
    """Per file, a callback that reports the bytes read across all files to `options.progress`."""
    sizes = {p: p.stat().st_size for p in paths}
    total = sum(sizes.values())
    before = dict(zip(sizes, itertools.accumulate(sizes.values(), initial=0), strict=False))

    def for_file(path: Path) -> Callable[[int], None] | None:
        if options.progress is None:
            return None
        report = options.progress
        return lambda done: report(before[path] + done, total)

    return for_file


def _nemo_gym(paths: list[Path], out: Path, options: Options) -> ImportStats:
    from replay_cli import schema as S
    from replay_cli.io import gym
    from replay_cli.io.jsonl import convert

    grouper = gym.Grouper(options.group_size)
    decode = options.decode or slim_decoder()
    progress = _bytes_read(paths, options)
    step = options.step

    def to_row(record: Any, path: Path) -> dict[str, Any]:
        row = gym.rollout_row(record, grouper)
        if step is not None:
            row[S.STEP] = step
        return row

    def records(path: Path) -> Any:
        return gym.gym_records(path, decode, progress(path))

    return convert(
        paths, out, gym.schema(step is not None), records, to_row, skip_bad=options.skip_bad
    )


def slim_decoder() -> Callable[[bytes], Any]:
    from replay_cli.io.slim import decode

    return decode


def _wandb_table(paths: list[Path], out: Path, options: Options) -> ImportStats:
    from replay_cli import schema as S
    from replay_cli.io import gym, wandb
    from replay_cli.io.jsonl import convert

    steps = {}
    step = options.step
    for path in paths:
        if path.is_dir():  # a W&B run directory: its full_result tables at their logged steps
            steps |= {file: at for at, file in _run_tables(path, step)}
            continue
        found = step if step is not None else wandb.step_from_name(path)
        if found is None:
            raise InputFileError(
                f"Cannot tell the training step of {path} from its name.\n\nPass --step N."
            )
        steps[path] = found
    paths = list(steps)
    groupers = {path: gym.Grouper(options.group_size) for path in paths}
    decode = options.decode or slim_decoder()

    def to_table_row(record: Any, path: Path) -> dict[str, Any]:
        row = gym.rollout_row(record, groupers[path])
        row[S.STEP] = steps[path]
        return row

    return convert(
        paths,
        out,
        gym.schema(True),
        lambda path: wandb.table_records(path, decode),
        to_table_row,
        skip_bad=options.skip_bad,
    )


def _run_tables(path: Path, step: int | None) -> list[tuple[int, Path]]:
    """(step, file) of every full_result table a W&B run directory logged."""
    from replay_cli.io.wandb_run import read_run

    if step is not None:
        raise ConfigError(
            f"--step is for table files; the W&B run {path} gives each table its own step."
        )
    tables = read_run(path).tables("full_result")
    if not tables:
        raise InputFileError(f"The W&B run {path} logged no full_result table.")
    missing = [str(file) for _, file in tables if not file.is_file()]
    if missing:
        raise InputFileError(
            f"The W&B run {path} logged tables whose files are not on disk: {', '.join(missing)}."
        )
    return tables


def _table(paths: list[Path], out: Path, options: Options) -> ImportStats:
    import polars as pl

    from replay_cli.io.files import atomic_path
    from replay_cli.io.jsonl import ImportStats
    from replay_cli.io.tables import duration_seconds, read_tables
    from replay_cli.schema import RUN_TIME

    if options.step is not None:
        raise ConfigError("--step is for nemo-gym and wandb-table; map a table's step column.")
    frame = read_tables(paths, options.mapping or {}, options.split)
    notes = []
    if options.durations and frame.schema.get(RUN_TIME) == pl.String:
        before = frame[RUN_TIME]
        frame = frame.with_columns(duration_seconds(RUN_TIME))
        lost = before.filter(before.is_not_null() & frame[RUN_TIME].is_null())
        if len(lost):
            shown = ", ".join(repr(v) for v in lost.unique(maintain_order=True).head(3))
            notes.append(
                f"{len(lost)} of {frame.height} values of '{RUN_TIME}' "
                f"({len(lost) / frame.height:.1%}) are not durations (e.g. {shown}); written "
                "as null, which a replay reads as 0 minutes, as the trainer would read the text"
            )
    size = options.group_size
    if size is not None:  # the loader's rule (rollouts/validation.py): N consecutive rows
        if "group_id" in frame.columns:
            raise ConfigError("--group-size groups rows without a group_id; this table has one.")
        row = pl.int_range(pl.len(), dtype=pl.Int64)
        frame = frame.with_columns(
            (row // size).alias("group_id"), (row % size).alias("rollout_index")
        )
    with atomic_path(out) as tmp:
        frame.write_parquet(tmp)
    return ImportStats(rows=frame.height, notes=notes)


IMPORTERS: dict[str, Importer] = {
    "nemo-gym": Importer("rollout JSONL", _nemo_gym),
    "wandb-table": Importer("full_result table JSON, or a W&B run directory", _wandb_table),
    "table": Importer(
        "CSV, JSONL, Arrow, a Hugging Face dataset saved with save_to_disk, or a Hub name; "
        "--map SRC=DST renames columns",
        _table,
    ),
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
    decode: Callable[[bytes], Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    mapping: dict[str, str] | None = None,
    split: str | None = None,
    durations: bool = False,
) -> ImportStats:
    """Convert NeMo-Gym rollout JSONL, W&B full_result tables or rollout tables (`table`: CSV,
    JSONL, Arrow, Hugging Face datasets; `mapping` renames columns; `durations` reads run times
    written as durations, io/tables.duration_seconds, into seconds) into one Parquet file. The log
    formats stream line by line, decoding only the fields a row needs (`decode=json.loads` gives the
    same rows from full decoding, the reference the tests and the benchmark hold it to)."""
    paths = [Path(p) for p in sources]
    for path in paths:
        if fmt == "table" or (fmt == "wandb-table" and path.is_dir()):  # checked when read
            continue  # a W&B run directory: its tables are checked when read
        if not path.is_file():
            raise InputFileError(f"Input file {path} does not exist.")
        if path.stat().st_size == 0:
            raise InputFileError(f"Input file {path} is empty (0 bytes).")
    if group_size is not None and group_size < 1:
        raise ConfigError(f"--group-size must be at least 1, got {group_size}")
    if fmt not in IMPORTERS:
        raise ConfigError(f"Unknown import format {fmt!r}; choose one of {', '.join(IMPORTERS)}.")
    options = Options(step, group_size, skip_bad, decode, progress, mapping, split, durations)
    return IMPORTERS[fmt].convert(paths, out, options)
