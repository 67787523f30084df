"""A W&B run as it lies on disk (`wandb/run-*/` or `wandb/offline-run-*/`, synced or not): its name,
group, tags, config, per-step history and summary, read from the run's transaction log
(`run-<id>.wandb`) with W&B's own record definitions (the optional extra `replay-cli[wandb]`).

The log is LevelDB's log format behind a 7-byte W&B header: 32 KiB blocks of records, each with a
7-byte header (CRC-32C, length, type: full, first, middle or last piece of one record); a block with
fewer than 7 bytes left is padded with zeros. Each record is a `wandb_internal_pb2.Record`. The
checksums are not verified: a torn last record (a run killed mid-write) ends the read."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from replay_cli.errors import InputFileError, missing_extra

MAGIC = b":W&B"
FILE_HEADER = 7
BLOCK = 32 * 1024
RECORD_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
SCALARS = {"run": pl.String, "step": pl.Int64, "metric": pl.String, "value": pl.Float64}


@dataclass
class WandbRun:
    """What one W&B run logged: history rows (`_step` and the logged keys, JSON values decoded),
    the last summary and config, the run's name, id, group, job type and tags."""

    path: Path
    run_id: str = ""
    name: str = ""
    group: str = ""
    job_type: str = ""
    tags: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def files(self) -> Path:
        """The run's files directory (media such as tables live under it)."""
        return self.path.parent / "files"

    def scalars(self) -> pl.DataFrame:
        """The numeric history values as long rows (run, step, metric, value)."""
        rows = [
            {"run": self.name, "step": int(row["_step"]), "metric": key, "value": float(value)}
            for row in self.history
            if "_step" in row
            for key, value in row.items()
            if not key.startswith("_") and isinstance(value, int | float)
            if not isinstance(value, bool)
        ]
        return pl.DataFrame(rows, schema=SCALARS)

    def tables(self, key_part: str = "") -> list[tuple[int, Path]]:
        """(step, file) of every table the history logged under a key containing `key_part`."""
        return [
            (int(row.get("_step", 0)), self.files / value["path"])
            for row in self.history
            for key, value in row.items()
            if key_part in key and _is_table(value)
        ]


def _is_table(value: Any) -> bool:
    """A history value that points at a logged table file (`{"_type": "table-file", ...}`)."""
    return (
        isinstance(value, dict)
        and "path" in value
        and str(value.get("_type", "")).startswith("table")
    )


def is_wandb(path: Path) -> bool:
    """A `.wandb` transaction log, a run directory holding one, or a directory of such runs."""
    if path.is_file():
        return path.suffix == ".wandb"
    return path.is_dir() and bool(logs_under(path))


def logs_under(path: Path) -> list[Path]:
    """The `.wandb` logs of the runs at `path`: its own, or those of its run directories (two
    levels: `wandb/` holding `run-*/`, or a folder holding `wandb/`)."""
    found = [*path.glob("*.wandb"), *path.glob("*/*.wandb"), *path.glob("*/*/*.wandb")]
    return sorted({f for f in found if not f.parent.is_symlink()})  # not wandb/latest-run


def pieces(data: bytes, where: Path) -> Iterator[bytes]:
    """The records of a transaction log's bytes, pieces joined, in order."""
    if data[:4] != MAGIC:
        raise InputFileError(f"{where} is not a W&B transaction log (no ':W&B' header).")
    pos, parts = FILE_HEADER, []
    while pos + RECORD_HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < RECORD_HEADER:  # the block's zero padding
            pos += left
            continue
        _crc, length, kind = struct.unpack_from("<IHB", data, pos)
        start, end = pos + RECORD_HEADER, pos + RECORD_HEADER + length
        if kind not in (FULL, FIRST, MIDDLE, LAST) or end > len(data):
            break  # preallocated zeros or a torn last record: the log ends here
        pos = end
        if kind == FULL:
            yield data[start:end]
        elif kind == FIRST:
            parts = [data[start:end]]
        else:
            parts.append(data[start:end])
            if kind == LAST:
                yield b"".join(parts)
                parts = []


def _records() -> Any:
    try:
        from wandb.proto import wandb_internal_pb2
    except ImportError:
        raise missing_extra("Reading W&B runs", "wandb") from None
    return wandb_internal_pb2


def _items(items: Any) -> dict[str, Any]:
    """Key -> decoded JSON value of config, summary or history items; a nested key (a logged
    table's `path`, `_type`, ... under its key) is rebuilt as a dict under its first part."""
    out: dict[str, Any] = {}
    for item in items:
        value = json.loads(item.value_json) if item.value_json else None
        if item.key:
            out[item.key] = value
            continue
        *parents, last = item.nested_key
        where = out
        for part in parents:
            where = where.setdefault(part, {})
        where[last] = value
    return out


def read_log(path: Path) -> WandbRun:
    """One run from its `.wandb` log."""
    pb = _records()
    run = WandbRun(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputFileError(f"Cannot read {path}: {exc.strerror}.") from None
    for raw in pieces(data, path):
        record = pb.Record()
        record.ParseFromString(raw)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            r = record.run
            run.run_id, run.name = r.run_id, r.display_name or r.run_id
            run.group, run.job_type, run.tags = r.run_group, r.job_type, list(r.tags)
            run.config |= _config(r.config.update)
        elif kind == "config":
            run.config |= _config(record.config.update)
        elif kind == "history":
            run.history.append(_items(record.history.item))
        elif kind == "summary":
            run.summary |= _items(record.summary.update)
    return run


def _config(items: Any) -> dict[str, Any]:
    """Config entries as the run set them (W&B wraps each as {"value": ...}; its own `_wandb`
    bookkeeping is left out)."""
    return {
        key: item["value"] if isinstance(item, dict) and "value" in item else item
        for key, item in _items(items).items()
        if not key.startswith("_wandb")
    }


def runs_of(path: Path) -> dict[str, Path]:
    """Run directory name -> its `.wandb` log."""
    if path.is_file():
        return {path.parent.name: path}
    return {log.parent.name: log for log in logs_under(path)}


def run_list(runs: dict[str, Path]) -> str:
    """Runs as a person knows them, one per line: the run's name, then its id (`offline-run-…`
    directories say neither what the run is nor which)."""
    if not runs:
        return "  none"
    lines = [
        f"  {read_log(log).name or directory}  (id {directory.rsplit('-', 1)[-1]})"
        for directory, log in runs.items()
    ]
    return "\n".join(sorted(lines))


def read_run(path: str | Path, run: str | None = None) -> WandbRun:
    """The one run at `path` (a `.wandb` log, a run directory, or a directory of runs, where
    `run` picks one by directory name, run id or display name; the error lists them)."""
    path = Path(path)
    runs = runs_of(path)
    if run is not None:
        chosen = {n: p for n, p in runs.items() if run in (n, n.rsplit("-", 1)[-1])}
        if not chosen:  # by display name: read them all
            chosen = {n: p for n, p in runs.items() if read_log(p).name == run}
        runs = chosen
    if len(runs) != 1:
        listed = run_list(runs_of(path))
        raise InputFileError(
            f"{path} holds {len(runs_of(path))} W&B runs:\n{listed}\n\n"
            "Pick one with --internal-run NAME (its name, id or directory)."
            if run is None
            else f"{path} has no W&B run {run!r}; its runs:\n{listed}"
        )
    return read_log(next(iter(runs.values())))
