"""NeMo-Gym rollouts (`swe_agents` verify responses) -> canonical rows (a W&B `full_result` cell
holds the same record: io/wandb.py reads the tables).

Field semantics follow NeMo-RL PR #4029 (`rollout_minutes`, `rollout_calls`) and NeMo-Gym
`responses_api_agents/swe_agents/app.py`: `calls` counts `response.output` items that are dicts with
`type == "function_call"`; `openhands_run_time` is converted with Python's `float()` (numeric
strings parse, anything else is null, i.e. 0 minutes in the replay)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from replay_cli import schema as S
from replay_cli.errors import GroupKeyError, NotRolloutsError, RowError
from replay_cli.io import slim
from replay_cli.io.jsonl import iter_json_lines

# SWE metric fields kept as columns (type -> pyarrow type).
SWE_FIELDS: dict[str, pa.DataType] = {
    "agent_timed_out": pa.bool_(),
    "agent_error_kind": pa.string(),
    "eval_timed_out": pa.bool_(),
    "oom_killed": pa.bool_(),
    "eval_oom_killed": pa.bool_(),
    "patch_exists": pa.bool_(),
    "total_model_call_time": pa.float64(),
    "instance_id": pa.string(),
}


def schema(with_step: bool) -> pa.Schema:
    """The canonical columns an import writes, then the kept SWE fields."""
    fields = [
        pa.field(S.GROUP_ID, pa.int64()),
        pa.field(S.ROLLOUT_INDEX, pa.int64()),
        pa.field(S.REWARD, pa.float64()),
        pa.field(S.RESOLVED, pa.bool_()),
        pa.field(S.RUN_TIME, pa.float64()),
        pa.field(S.CALLS, pa.int64()),
        pa.field(S.MASK_SAMPLE, pa.bool_()),
        pa.field("agent_ref", pa.string()),
        *(pa.field(name, dtype) for name, dtype in SWE_FIELDS.items()),
        pa.field(S.MASK_SOURCE, pa.string()),
    ]
    return pa.schema(([pa.field(S.STEP, pa.int64())] if with_step else []) + fields)


def to_float(value: Any) -> float | None:
    """Python `float()` semantics, None where it would raise (PR #4029's missing-time rule)."""
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def count_calls(result: dict[str, Any]) -> int:
    """`response.output` items that are dicts with type `function_call`; anything malformed is 0."""
    response = result.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    if not isinstance(output, list):
        return 0
    return sum(
        1 for item in output if isinstance(item, dict) and item.get("type") == "function_call"
    )


def _typed(name: str, value: Any) -> Any:
    kind = SWE_FIELDS[name]
    if value is None:
        return None
    if kind == pa.bool_():
        return bool(value)
    if kind == pa.float64():
        return to_float(value)
    return value if isinstance(value, str) else json.dumps(value)


def rollout_row(result: Any, grouper: Grouper) -> dict[str, Any]:
    """One canonical row from a verify response, grouped by `grouper` (`_ng_task_index`, the
    instance id, or blocks of --group-size rows)."""
    if not isinstance(result, dict):
        raise RowError(f"expected a JSON object, got {type(result).__name__}")
    if isinstance(result.get("full_result"), dict):
        result = {
            **result["full_result"],
            **{k: v for k, v in result.items() if k != "full_result"},
        }
    if "reward" not in result and "response" not in result:
        raise NotRolloutsError(_what_it_is(result))
    reward = result.get("reward")
    if reward is not None and to_float(reward) is None:
        raise RowError(f"reward {reward!r} is not a number")
    config = result.get("instance_config") or {}
    if not isinstance(config, dict):
        raise RowError("instance_config is not an object")
    group_id, rollout_index = grouper.assign(result, config)
    agent = result.get("agent_ref")
    resolved = result.get("resolved")
    return {
        S.GROUP_ID: group_id,
        S.ROLLOUT_INDEX: rollout_index,
        S.REWARD: to_float(reward),
        S.RESOLVED: None if resolved is None else bool(resolved),
        S.RUN_TIME: to_float(result.get(S.RUN_TIME)),
        S.CALLS: count_calls(result),
        **_mask(result, config),
        "agent_ref": None
        if agent is None
        else agent
        if isinstance(agent, str)
        else json.dumps(agent, sort_keys=True),
        **{name: _typed(name, result.get(name)) for name in SWE_FIELDS},
        "instance_id": _typed("instance_id", _instance_id(result, config)),
    }


MASK_SOURCES = {
    "mask_sample": "the top-level `mask_sample` field",
    "instance_config.mask_sample": "`instance_config.mask_sample`",
    "absent": "no field (taken as not masked)",
}
"""Where a NeMo-Gym row's mask_sample came from (`_mask`'s sources), in words."""


def mask_note(counts: dict[str, int]) -> str:
    """Where the rows' mask_sample came from, each source named with its count of rows:
    `mask_sample read from the top-level `mask_sample` field in 16 rows`."""
    parts = [
        f"{MASK_SOURCES.get(source, repr(source))} in {n:,} row{'s' if n != 1 else ''}"
        for source, n in sorted(counts.items())
    ]
    return "mask_sample read from " + "; ".join(parts)


def _mask(result: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """mask_sample from the top level (NeMo-Gym 0.7), else instance_config (earlier releases)."""
    if result.get("mask_sample") is not None:
        return {S.MASK_SAMPLE: bool(result["mask_sample"]), S.MASK_SOURCE: "mask_sample"}
    if config.get("mask_sample") is not None:
        return {
            S.MASK_SAMPLE: bool(config["mask_sample"]),
            S.MASK_SOURCE: "instance_config.mask_sample",
        }
    return {S.MASK_SAMPLE: False, S.MASK_SOURCE: "absent"}


def _instance_id(result: dict[str, Any], config: dict[str, Any]) -> Any:
    """The SWE instance id: top level, else instance_config.problem_info, else the request's
    metadata (real NeMo-Gym rows carry it nested only)."""
    if result.get("instance_id") is not None:
        return result["instance_id"]
    info = config.get("problem_info")
    if isinstance(info, dict) and info.get("instance_id") is not None:
        return info["instance_id"]
    request = result.get("responses_create_params")
    metadata = request.get("metadata") if isinstance(request, dict) else None
    return metadata.get("instance_id") if isinstance(metadata, dict) else None


def _what_it_is(record: dict[str, Any]) -> str:
    """What a JSON row without reward and response looks like, and what to pass instead."""
    if any(key.startswith("_ng_failure") for key in record):
        return (
            "this is the collector's failures file (rows with _ng_failure_* fields and no "
            "reward); pass the rollouts file beside it"
        )
    if "_ng_task_index" in record or "responses_create_params" in record:
        return (
            "this is the collector's materialized-inputs file (task and rollout indices, no "
            "result); pass the rollouts file beside it"
        )
    return "a rollout has `reward` and `response`; this row has neither"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Grouper:
    """Group ids for the rows of one file (one step): `--group-size N` blocks of consecutive
    rows when given; else `_ng_task_index` (NeMo-Gym's collector) when the first row has one;
    else the instance id (rollouts of one prompt share it: NeMo-RL's W&B tables carry no task
    index), groups numbered in order of first appearance."""

    def __init__(self, group_size: int | None) -> None:
        self.size, self.seen = group_size, 0
        self.by_task: bool | None = None
        self.instances: dict[str, list[int]] = {}

    def assign(self, result: dict[str, Any], config: dict[str, Any]) -> tuple[int, int | None]:
        """(group_id, rollout_index) of the next row."""
        index = self.seen
        self.seen += 1
        if self.size is not None:
            return index // self.size, index % self.size
        if self.by_task is None:
            self.by_task = result.get("_ng_task_index") is not None
        if self.by_task:
            task = _int(result.get("_ng_task_index"))
            if task is None:
                raise RowError(
                    "missing integer _ng_task_index (pass --group-size N to group consecutive rows)"
                )
            return task, _int(result.get("_ng_rollout_index"))
        instance = _instance_id(result, config)
        if instance is None:
            if index == 0:
                raise GroupKeyError(
                    "no _ng_task_index and no instance id to group rollouts by; pass "
                    "--group-size N to group blocks of N consecutive rows"
                )
            raise RowError("no instance id to group this rollout by (the rows before had one)")
        slot = self.instances.setdefault(str(instance), [len(self.instances), 0])
        slot[1] += 1
        return slot[0], slot[1] - 1


def gym_records(
    path: Path,
    decode: Callable[[bytes], Any] = slim.decode,
    progress: Callable[[int], None] | None = None,
) -> Iterator[tuple[str, Any]]:
    """(file:line, record) for a NeMo-Gym rollout JSONL file, one line at a time; `decode` is
    the slim decoder (only the fields a row needs) unless told otherwise."""
    for number, value in iter_json_lines(path, decode, progress):
        yield f"{path}:{number}", value
