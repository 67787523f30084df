"""W&B `train/<agent>/full_result` tables (`{"columns": [...], "data": [[...]]}` JSON): each
`full_result` cell is a NeMo-Gym verify response, turned into a row by io/gym.py."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from replay_cli.errors import InputFileError, RowError
from replay_cli.io import slim

_MEDIA_NAME = re.compile(r"_(\d+)_[0-9a-f]+\.table\.json$")
_STEP_NAME = re.compile(r"step[_-]?(\d+)", re.IGNORECASE)


def step_from_name(path: Path) -> int | None:
    """The training step of a table file: a W&B media name (`<key>_<n>_<hash>.table.json`) is
    step n + 1, a `step12` name is step 12.

    W&B names a media file after the run's step counter *before* the log call, that is the step
    of the run's previous call (0 before the first). NeMo-RL logs a step's train metrics, the
    full_result table among them, in one call per step, so the table logged at step k is named
    k − 1. tests/test_import.py establishes the naming with a real offline wandb run; a run that
    logged something else at step k before the table needs `--step`."""
    match = _MEDIA_NAME.search(path.name)
    if match:
        return int(match.group(1)) + 1
    match = _STEP_NAME.search(path.name)
    return int(match.group(1)) if match else None


def table_records(
    path: Path, decode: Callable[[bytes], Any] = slim.decode
) -> Iterator[tuple[str, Any]]:
    """(file:row N, full_result) for a W&B Table JSON (`{"columns": [...], "data": [[...]]}`)."""
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputFileError(f"Cannot read {path}: {exc.strerror}.") from None
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{path} is not valid JSON ({exc}).") from None
    if (
        not isinstance(table, dict)
        or not isinstance(table.get("columns"), list)
        or not isinstance(table.get("data"), list)
    ):
        raise InputFileError(
            f'{path} is not a W&B table: expected {{"columns": [...], "data": [[...]]}}.'
        )
    columns = table["columns"]
    if "full_result" in columns:
        index = columns.index("full_result")
    elif len(columns) == 1:
        index = 0
    else:
        raise InputFileError(f"{path}: no 'full_result' column among {columns}.")
    for number, row in enumerate(table["data"]):
        where = f"{path}: row {number}"
        if not isinstance(row, list) or len(row) != len(columns):
            yield where, RowError(f"expected {len(columns)} cells")
            continue
        cell = row[index]
        if isinstance(cell, str):
            try:
                cell = decode(cell.encode())
            except (ValueError, msgspec.DecodeError) as exc:
                yield where, RowError(f"full_result is not valid JSON ({exc})")
                continue
        yield where, cell
