"""NeMo-RL training dumps (`train_data_step{N}.jsonl`, Logger.log_batched_dict_as_jsonl): one line
per training row, every value a length-1 list (the newer TrainDataDump format is accepted too).

Per row this keeps the logged reward (post shaping), the logged advantage of the row's first
loss-bearing token (a sequence-level advantage is broadcast over tokens), whether all its
loss-bearing tokens share that value (message-level overrides break it), the sample mask, and a
stable key of the prompt tokens (those before the first loss-bearing token), which is how the
trainer itself groups rows."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from replay_cli.errors import InputFileError
from replay_cli.io.jsonl import iter_json_lines

_STEP = re.compile(r"train_data_step(\d+)")
JOIN_KEYS = ("sample_id", "_ng_task_index", "task_index")


def _unwrap(value: Any) -> Any:
    """Values are logged as length-1 lists: [x] -> x."""
    while (
        isinstance(value, list)
        and len(value) == 1
        and isinstance(value[0], list | int | float | str | bool | None)
    ):
        if isinstance(value[0], list):
            return value[0]
        value = value[0]
    return value


def _prompt_key(tokens: list[int], loss_mask: list[int]) -> str:
    first = next((i for i, m in enumerate(loss_mask) if m), len(tokens))
    data = ",".join(str(t) for t in tokens[:first]).encode()
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def dump_files(given: Sequence[str | Path]) -> list[Path]:
    """The dump files of `--train-data`: files as given, a directory as its
    `train_data_step*.jsonl` files in step order (an error when it has none)."""
    out: list[Path] = []
    for raw in given:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                path.glob("train_data_step*.jsonl"),
                key=lambda p: (int(m.group(1)) if (m := _STEP.search(p.name)) else -1, p.name),
            )
            if not found:
                raise InputFileError(f"{path} holds no train_data_step*.jsonl dumps.")
            out.extend(found)
        else:
            out.append(path)
    return list(dict.fromkeys(out))


def read_train_data(paths: Sequence[str | Path]) -> pl.DataFrame:
    """Rows of every dump: step, row, reward, logged_advantage, uniform, sample_mask, prompt_key
    and any join key present (sample_id, _ng_task_index, task_index)."""
    rows: list[dict[str, Any]] = []
    per_step: dict[int, int] = {}
    for raw_path in paths:
        path = Path(raw_path)
        if not path.is_file():
            raise InputFileError(f"Training dump {path} does not exist.")
        match = _STEP.search(path.name)
        for number, record in iter_json_lines(path):
            where = f"{path}:{number}"
            if isinstance(record, Exception) or not isinstance(record, dict):
                raise InputFileError(f"{where}: not a JSON object.")
            step = int(match.group(1)) if match else None
            if "step" in record:  # the row's own step before the file name's
                step = _unwrap(record["step"])
            if step is None:
                raise InputFileError(
                    f"{where}: no step in the row or in the file name (train_data_stepN.jsonl)."
                )
            try:
                reward = float(_unwrap(record["rewards"]))
                advantages = [float(a) for a in _unwrap(record["advantages"])]
                tokens = [int(t) for t in _unwrap(record.get("token_ids", []))]
                loss = [
                    int(m) for m in _unwrap(record.get("token_loss_mask", [1] * len(advantages)))
                ]
            except (KeyError, TypeError, ValueError) as exc:
                raise InputFileError(
                    f"{where}: missing or malformed rewards/advantages/token fields ({exc})."
                ) from None
            bearing = [a for a, m in zip(advantages, loss, strict=False) if m] or advantages[:1]
            if not bearing:
                raise InputFileError(f"{where}: the row has no advantages.")
            step = int(step)
            per_step[step] = per_step.get(step, 0) + 1
            row = {
                "step": step,
                "row": per_step[step] - 1,
                "reward": reward,
                "logged_advantage": bearing[0],
                "uniform": all(a == bearing[0] for a in bearing),
                "sample_mask": bool(_unwrap(record.get("sample_loss_mask", 1))),
                "prompt_key": _prompt_key(tokens, loss),
            }
            row |= {key: _unwrap(record[key]) for key in JOIN_KEYS if key in record}
            rows.append(row)
    if not rows:
        raise InputFileError("The training dumps hold no rows.")
    return pl.DataFrame(rows, infer_schema_length=None)
