"""Rollout tables in the formats people hold them in: CSV (a W&B export, a spreadsheet), JSON
lines, Arrow (IPC file or stream), a Hugging Face `datasets` directory written by `save_to_disk`
(its Arrow files read with pyarrow, no `datasets` needed) or a Hub dataset name (that one needs
`datasets`, the optional extra `replay-cli[hf]`, and the network). `--map SRC=DST` renames
columns; the replay's loader checks the result like any Parquet input."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pyarrow as pa

from replay_cli.errors import ConfigError, InputFileError, SchemaError, missing_extra

SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet"}
SUFFIXES |= dict.fromkeys((".jsonl", ".ndjson", ".json"), "jsonl")
SUFFIXES |= dict.fromkeys((".arrow", ".feather", ".ipc"), "arrow")
"""File suffix -> how it is read."""


def read_source(source: str | Path, split: str | None = None) -> pl.DataFrame:
    """One table: a file by its suffix, a `save_to_disk` directory, or a Hub dataset name."""
    path = Path(source)
    if path.is_dir():
        return _saved_dataset(path, split)
    if path.is_file():
        kind = SUFFIXES.get(path.suffix.lower())
        if kind is None:
            known = ", ".join(sorted(SUFFIXES))
            raise InputFileError(
                f"{path}: cannot tell its format from its suffix (known: {known})."
            )
        return _read_file(path, kind)
    if "/" in str(source) and not str(source).startswith((".", "/")) and not path.suffix:
        return _hub_dataset(str(source), split)
    raise InputFileError(f"Input file {path} does not exist.")


def _read_file(path: Path, kind: str) -> pl.DataFrame:
    try:
        if kind in ("csv", "tsv"):
            frame = pl.read_csv(
                path, separator="\t" if kind == "tsv" else ",", try_parse_dates=False
            )
            # A column without a single value is typed text by the reader; it has no type.
            empty = [c for c in frame.columns if frame[c].null_count() == frame.height]
            return frame.with_columns(pl.col(empty).cast(pl.Null)) if frame.height else frame
        if kind == "jsonl":
            return pl.read_ndjson(path)
        if kind == "parquet":
            return pl.read_parquet(path)
        return pl.from_arrow(_arrow_table(path))  # type: ignore[return-value]
    except (OSError, pl.exceptions.PolarsError, pa.ArrowInvalid) as exc:
        raise InputFileError(f"Cannot read {path} as {kind}: {exc}") from None


def _arrow_table(path: Path) -> pa.Table:
    """An Arrow IPC file, or an IPC stream (what `datasets` writes)."""
    with pa.memory_map(str(path)) as source:
        try:
            return pa.ipc.open_file(source).read_all()
        except pa.ArrowInvalid:
            source.seek(0)
            return pa.ipc.open_stream(source).read_all()


def _saved_dataset(path: Path, split: str | None) -> pl.DataFrame:
    """A `Dataset.save_to_disk` directory (state.json lists its Arrow files in order), or a
    `DatasetDict`'s (dataset_dict.json lists the splits, each a directory)."""
    dict_file = path / "dataset_dict.json"
    if dict_file.is_file():
        splits = json.loads(dict_file.read_text())["splits"]
        if split is None and len(splits) == 1:
            split = splits[0]
        if split not in splits:
            raise ConfigError(
                f"{path} holds the splits {', '.join(splits)}; pick one with --split NAME."
            )
        return _saved_dataset(path / split, None)
    state = path / "state.json"
    if not state.is_file():
        raise InputFileError(
            f"{path} is a directory but not a Hugging Face dataset saved with save_to_disk "
            "(no state.json or dataset_dict.json)."
        )
    files = [path / f["filename"] for f in json.loads(state.read_text())["_data_files"]]
    tables = [_arrow_table(f) for f in files]
    return pl.from_arrow(pa.concat_tables(tables))  # type: ignore[return-value]


def _hub_dataset(name: str, split: str | None) -> pl.DataFrame:
    try:
        import datasets
    except ImportError:
        raise missing_extra(
            f"{name!r} is not a file or directory here; reading it from the Hugging Face Hub",
            "hf",
            ", and the network",
        ) from None
    try:
        loaded = datasets.load_dataset(name, split=split or "train")
    except (OSError, ValueError) as exc:  # not found, offline, no such split
        raise InputFileError(f"Cannot load the Hub dataset {name!r}: {exc}") from None
    return pl.from_arrow(loaded.data.table)  # type: ignore[return-value]


def read_tables(
    sources: Sequence[str | Path], mapping: dict[str, str], split: str | None = None
) -> pl.DataFrame:
    """Every source read, `mapping` applied to each, stacked (columns matched by name)."""
    frames = []
    for source in sources:
        frame = read_source(source, split)
        missing = [src for src in mapping if src not in frame.columns]
        if missing:
            raise SchemaError(
                f"--map names column(s) {missing} that {source} does not have.\n\n"
                f"Its columns: {', '.join(frame.columns)}"
            )
        frames.append(frame.rename(mapping))
    if not frames:
        raise InputFileError("No input given.")
    return pl.concat(frames, how="diagonal_relaxed")


_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)"
_UNITS = rf"^(?:{_NUMBER}\s*h)?\s*(?:{_NUMBER}\s*m(?:in)?)?\s*(?:{_NUMBER}\s*s)?$"
_CLOCK = rf"^(?:(\d+):)?(\d+):{_NUMBER}$"


def duration_seconds(col: str) -> pl.Expr:
    """A text column of durations as people write them, in seconds (float); anything else null.
    '12m' -> 720, '1h02m' -> 3720, '00:12:00' and '12:00' (minutes:seconds) -> 720, '720s' and
    '720' -> 720."""
    text = pl.col(col).cast(pl.String).str.strip_chars().str.to_lowercase()

    def part(pattern: str, group: int) -> pl.Expr:
        return text.str.extract(pattern, group).cast(pl.Float64).fill_null(0.0)

    units = part(_UNITS, 1) * 3600 + part(_UNITS, 2) * 60 + part(_UNITS, 3)
    clock = part(_CLOCK, 1) * 3600 + part(_CLOCK, 2) * 60 + part(_CLOCK, 3)
    plain = text.cast(pl.Float64, strict=False)
    return (
        pl.when(plain.is_not_null())
        .then(plain)
        .when(text.str.contains(_CLOCK))
        .then(clock)
        .when(text.str.contains(_UNITS) & (text.str.len_chars() > 0))
        .then(units)
        .otherwise(None)
        .alias(col)
    )
