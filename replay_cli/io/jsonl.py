"""Stream JSON-lines files into Parquet in batches, reporting bad lines by file and line number."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from replay_cli.errors import FileLevelError, InputFileError, RowError

BATCH_ROWS = 50_000
MAX_BAD_SHOWN = 5


@dataclass
class ImportStats:
    """What an import read, wrote and skipped."""

    rows: int = 0
    bad_lines: int = 0
    first_bad: list[str] = field(default_factory=list)
    mask_sources: dict[str, int] = field(default_factory=dict)
    """Rows by where their mask_sample came from (NeMo-Gym: top level, or instance_config)."""
    notes: list[str] = field(default_factory=list)
    """What a replay of the written file should know, e.g. a column that looks like `calls`."""

    def bad(self, where: str, why: str) -> None:
        self.bad_lines += 1
        if len(self.first_bad) < MAX_BAD_SHOWN:
            self.first_bad.append(f"{where}: {why}")


def full_decode(line: bytes | memoryview) -> Any:
    """A whole line decoded by `json.loads`: the reference the slim decoder is held to."""
    return json.loads(bytes(line))


def iter_json_lines(
    path: Path,
    decode: Callable[[bytes | memoryview], Any] = full_decode,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, Any | Exception]]:
    """(line number, decoded value or the parse error) for every non-blank line, streaming one
    line at a time; `progress` is told the bytes read so far."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise InputFileError(f"Cannot read {path}: {exc.strerror}.") from None
    done = 0
    with fh:
        for number, line in enumerate(_lines(fh), start=1):
            done += len(line)
            if progress is not None:
                progress(done)
            if not bytes(line[:64]).strip() and not bytes(line).strip():
                continue
            try:
                yield number, decode(line)
            except (ValueError, msgspec.DecodeError) as exc:  # JSONDecodeError is a ValueError
                yield number, exc


READ_BYTES = 16 << 20
"""Files are read in blocks of this size: memory stays at a block plus the longest line."""


def _lines(fh: Any, size: int = READ_BYTES) -> Iterator[bytes | memoryview]:
    """The lines of a binary file, read in large blocks and handed out as views into them (no
    copy), except a line that spans two blocks (Python's line iterator copies long lines several
    times: real rollout rows are megabytes long)."""
    rest = b""
    while block := fh.read(size):
        view = memoryview(block)
        start = 0
        if rest:
            end = block.find(b"\n")
            if end < 0:
                rest += block
                continue
            yield rest + block[: end + 1]
            rest, start = b"", end + 1
        while (end := block.find(b"\n", start)) >= 0:
            yield view[start : end + 1]
            start = end + 1
        rest = block[start:]
    if rest:
        yield rest


class BatchWriter:
    """Collects row dicts and writes them to one Parquet file in batches (schema fixed by `schema`)."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.path, self.schema = path, schema
        self.buffer: list[dict[str, Any]] = []
        self.writer = pq.ParquetWriter(path, schema)

    def add(self, row: dict[str, Any]) -> None:
        self.buffer.append(row)
        if len(self.buffer) >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.writer.write_table(pa.Table.from_pylist(self.buffer, schema=self.schema))
            self.buffer = []

    def close(self) -> None:
        self.flush()
        self.writer.close()


def convert(
    sources: Sequence[Path],
    out: Path,
    schema: pa.Schema,
    records: Callable[[Path], Iterator[tuple[str, Any]]],
    to_row: Callable[[Any, Path], dict[str, Any]],
    *,
    skip_bad: bool,
) -> ImportStats:
    """Turn every record of every source into a row; a bad record stops the import unless skip_bad.

    `records(path)` yields (where, record) with `where` like "file:line"; a parse error arrives as
    the record itself (an Exception)."""
    from replay_cli.io.files import atomic_path

    stats = ImportStats()
    with atomic_path(out) as tmp:
        writer = BatchWriter(tmp, schema)
        try:
            for path in sources:
                for where, record in records(path):
                    try:
                        if isinstance(record, RowError):
                            raise record
                        if isinstance(record, Exception):
                            raise RowError(f"not valid JSON ({record})")
                        row = to_row(record, path)
                    except FileLevelError as exc:
                        raise InputFileError(f"{where}: {exc}") from None
                    except RowError as exc:
                        if not skip_bad:
                            raise InputFileError(
                                f"{where}: {exc}\n\nFix the line, or pass --skip-bad-lines to skip and count such lines."
                            ) from None
                        stats.bad(where, str(exc))
                        continue
                    writer.add(row)
                    stats.rows += 1
                    source = row.get("mask_sample_source")
                    if source is not None:
                        stats.mask_sources[source] = stats.mask_sources.get(source, 0) + 1
        finally:
            writer.close()
        if stats.rows == 0:
            raise InputFileError(
                f"No rollout rows found in {', '.join(map(str, sources))}"
                + (f" ({stats.bad_lines} bad lines skipped)." if stats.bad_lines else ".")
            )
    return stats
