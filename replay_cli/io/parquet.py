"""Find, open and lazily scan rollout Parquet files; write Parquet atomically."""

from __future__ import annotations

import glob
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import polars as pl

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
        hint = (
            "it may be truncated"
            if head == PARQUET_MAGIC
            else "convert it with `replay-cli import`"
        )
        raise InputFileError(f"Input file {path} is not a complete Parquet file ({hint}).")


def scan_file(path: Path, mapping: dict[str, str]) -> pl.LazyFrame:
    """Scan one file, apply `--map` renames then the built-in aliases, and tag rows with their origin."""
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
    # The reader numbers the rows itself, so filters on step still prune row groups.
    lf = pl.scan_parquet(path, row_index_name=S.SOURCE_ROW)
    return lf.rename(renames).with_columns(pl.lit(str(path)).alias(S.SOURCE_FILE))


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary sibling path that replaces `path` when the block succeeds (readers never see
    a half-written file); on error it is removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a written file gets the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
