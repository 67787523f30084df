"""W&B `train/<agent>/full_result` tables (`{"columns": [...], "data": [[...]]}` JSON): each
`full_result` cell is a NeMo-Gym verify response, turned into a row by io/gym.py."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from replay_cli.errors import InputFileError, RowError

_STEP_IN_NAME = (
    re.compile(r"_(\d+)_[0-9a-f]+\.table\.json$"),
    re.compile(r"step[_-]?(\d+)", re.IGNORECASE),
)


def step_from_name(path: Path) -> int | None:
    """The step of a W&B media file (`<key>_<step>_<hash>.table.json`) or a `step12` name."""
    for pattern in _STEP_IN_NAME:
        match = pattern.search(path.name)
        if match:
            return int(match.group(1))
    return None


def table_records(path: Path) -> Iterator[tuple[str, Any]]:
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
                cell = json.loads(cell)
            except json.JSONDecodeError as exc:
                yield where, RowError(f"full_result is not valid JSON ({exc})")
                continue
        yield where, cell
