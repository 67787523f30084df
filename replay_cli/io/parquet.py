"""Find, open and lazily scan rollout Parquet files; stream result rows into one Parquet file."""

from __future__ import annotations

import glob
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from replay_cli import schema as S
from replay_cli.errors import InputFileError, SchemaError

PARQUET_MAGIC = b"PAR1"


def discover(sources: Sequence[str | Path]) -> list[Path]:
    """Expand paths, globs and directories into a sorted, de-duplicated list of Parquet files."""
    if not sources:
        raise InputFileError(
            "No input given.\n\nPass one or more Parquet files, globs or directories."
        )
    found: list[Path] = []
    for src in sources:
        text = str(src)
        path = Path(text)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*.parquet") if p.is_file())
            if not files:
                raise InputFileError(f"Directory {text} holds no *.parquet files.")
            found.extend(files)
        elif path.exists():
            found.append(path)
        elif glob.has_magic(text):
            files = sorted(Path(p) for p in glob.glob(text, recursive=True) if Path(p).is_file())
            if not files:
                raise InputFileError(f"No file matches {text}.")
            found.extend(files)
        else:
            raise InputFileError(f"Input file {text} does not exist.")
    unique = list(dict.fromkeys(p.resolve() for p in found))
    for path in unique:
        _check_parquet(path)
    return unique


def _check_parquet(path: Path) -> None:
    size = path.stat().st_size
    if size == 0:
        raise InputFileError(f"Input file {path} is empty (0 bytes).")
    with path.open("rb") as fh:
        head = fh.read(4)
        fh.seek(max(size - 4, 0))
        tail = fh.read(4)
    if head != PARQUET_MAGIC or tail != PARQUET_MAGIC:
        table = path.suffix.lower() in (".csv", ".tsv", ".arrow", ".feather", ".ipc")
        hint = (
            "it may be truncated"
            if head == PARQUET_MAGIC
            else "a NeMo-RL training dump: pass it to `verify --train-data`"
            if path.name.startswith("train_data_step")
            else f"convert it with `replay-cli import table {path} --out "
            f"{path.with_suffix('.parquet').name}`; --map SRC=DST renames columns"
            if table
            else "convert it with `replay-cli import nemo-gym` (NeMo-Gym rollouts), "
            "`import wandb-table` (W&B full_result tables) or `import table` (CSV, JSONL, "
            "Arrow, Hugging Face datasets)"
        )
        raise InputFileError(f"Input file {path} is not a complete Parquet file ({hint}).")


def scan_file(path: Path, mapping: dict[str, str]) -> tuple[pl.LazyFrame, list[str]]:
    """Scan one file, apply `--map` renames then the built-in aliases, and tag rows with their
    origin; columns that a replay writes itself are dropped (and returned, for a loading note)."""
    lf = pl.scan_parquet(path)
    try:
        columns = list(lf.collect_schema().names())
    except pl.exceptions.PolarsError as exc:
        raise InputFileError(f"Cannot read {path}: {exc}") from None
    missing_src = [src for src in mapping if src not in columns]
    if missing_src:
        raise SchemaError(
            f"--map names column(s) {missing_src} that {path} does not have.\n\n"
            f"Its columns are: {', '.join(columns)}"
        )
    renames = dict(mapping)
    for alias, canonical in S.ALIASES.items():
        taken = canonical in columns or canonical in renames.values()
        if alias in columns and alias not in renames and not taken:
            renames[alias] = canonical
    written = [c for c in columns if c in S.written_by_replay() and c not in renames]
    if written:  # e.g. a report's rollouts.parquet: its inputs are replayed again
        lf = pl.scan_parquet(path).drop(written).with_row_index(S.SOURCE_ROW)
    else:  # the reader numbers the rows itself, so filters on step still prune row groups
        lf = pl.scan_parquet(path, row_index_name=S.SOURCE_ROW)
    return lf.rename(renames).with_columns(pl.lit(str(path)).alias(S.SOURCE_FILE)), written


def parse_mapping(pairs: Iterable[str]) -> dict[str, str]:
    """Parse `--map src=dst` pairs."""
    out: dict[str, str] = {}
    for pair in pairs:
        src, sep, dst = pair.partition("=")
        if not sep or not src or not dst:
            raise SchemaError(
                f"--map expects SRC=DST, got {pair!r}.\n\nExample: --map task_id=group_id"
            )
        out[src.strip()] = dst.strip()
    return out


ROW_GROUP_SIZE = 128_000
RowsMode = Literal["all", "sample", "none"]
SAMPLE_ONE_IN = 20


class ParquetRowSink:
    """Streams per-row results into one Parquet file, chunk by chunk (`--rows all|sample|none`).

    `sample` keeps whole groups, about one in SAMPLE_ONE_IN, picked by a hash of (step, group_id) so
    the same groups are kept for every config."""

    def __init__(
        self, path: Path, mode: RowsMode = "all", statistics: Sequence[str] | None = None
    ) -> None:
        """`statistics`: the columns whose row-group min/max are written (None: every column);
        readers skip row groups by these, and each costs write time."""
        self.path, self.mode = path, mode
        self.statistics = None if statistics is None else list(statistics)
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
            # Dictionaries pay off for repeated strings only; on floats they double the write
            # time. Floats are byte-stream split: a quarter faster to write, and smaller.
            strings = [f.name for f in self._schema if pa.types.is_string(f.type)]
            strings += [f.name for f in self._schema if pa.types.is_large_string(f.type)]
            floats = [f.name for f in self._schema if pa.types.is_floating(f.type)]
            self._writer = pq.ParquetWriter(
                self.path,
                self._schema,
                use_dictionary=strings,
                use_byte_stream_split=floats or False,
                write_statistics=True if self.statistics is None else self.statistics,
            )
        table = table.select(self._schema.names)
        if table.schema != self._schema:  # a later chunk may infer a null or narrower column
            table = table.cast(self._schema)
        self._writer.write_table(table, row_group_size=ROW_GROUP_SIZE)
        self.rows += rows.height

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
