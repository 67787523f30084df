"""Decode only what a rollout row needs from a NeMo-Gym verify response.

A real SWE rollout carries the whole agent trajectory (`response.output` with token ids and
log-probs, several MB) and an ~80-key `instance_config`; the canonical table needs a dozen fields.
msgspec decodes each record in one pass into the structs below, which name only those fields:
everything else is skipped without building a Python object. The result is a small dict of the same
shape as `json.loads` gives for those keys, so `gym.rollout_row` stays the one place that turns a
record into a row, with every check it makes. A record that does not fit the structs (not an object,
a list where an object belongs) is decoded again with `json.loads`, so its row or its error message
is the plain decoder's; tests hold the two equal on random records."""

from __future__ import annotations

import json
from typing import Any

import msgspec

UNSET: Any = msgspec.UNSET


class _Item(msgspec.Struct):
    type: Any = None


class _Response(msgspec.Struct):
    output: list[_Item] | None = None


class _ProblemInfo(msgspec.Struct):
    instance_id: Any = None


class _InstanceConfig(msgspec.Struct):
    mask_sample: Any = UNSET
    problem_info: _ProblemInfo | None = None


class _Metadata(msgspec.Struct):
    instance_id: Any = None


class _Request(msgspec.Struct):
    metadata: _Metadata | None = None


class _Record(msgspec.Struct):
    """The keys `gym.rollout_row` reads; UNSET where the record has no such key."""

    reward: Any = UNSET
    resolved: Any = UNSET
    openhands_run_time: Any = UNSET
    response: _Response | None = UNSET
    instance_config: _InstanceConfig | None = UNSET
    responses_create_params: _Request | None = UNSET
    full_result: _Record | None = UNSET
    mask_sample: Any = UNSET
    instance_id: Any = UNSET
    agent_ref: Any = UNSET
    agent_timed_out: Any = UNSET
    agent_error_kind: Any = UNSET
    eval_timed_out: Any = UNSET
    oom_killed: Any = UNSET
    eval_oom_killed: Any = UNSET
    patch_exists: Any = UNSET
    total_model_call_time: Any = UNSET
    task_index: Any = msgspec.field(default=UNSET, name="_ng_task_index")
    rollout_index: Any = msgspec.field(default=UNSET, name="_ng_rollout_index")


_DECODER = msgspec.json.Decoder(_Record)
_NESTED = ("response", "instance_config", "responses_create_params", "full_result")
_RENAMED = {"task_index": "_ng_task_index", "rollout_index": "_ng_rollout_index"}
_SCALARS = tuple(name for name in _Record.__struct_fields__ if name not in _NESTED)


def decode(line: bytes | memoryview) -> Any:
    """The record of one JSON line, slimmed to what a rollout row reads; raises
    msgspec.DecodeError for invalid JSON."""
    try:
        record = _DECODER.decode(line)
    except msgspec.ValidationError:
        return json.loads(bytes(line))
    if record.reward is UNSET and record.response is UNSET and record.full_result is UNSET:
        return json.loads(bytes(line))  # no rollout: described from all its keys
    return _slim(record)


def _slim(record: _Record) -> dict[str, Any]:
    out: dict[str, Any] = {
        _RENAMED.get(name, name): value
        for name in _SCALARS
        if (value := getattr(record, name)) is not UNSET
    }
    for name, slim in zip(_NESTED, (_response, _config, _request, _slim), strict=True):
        if (value := getattr(record, name)) is not UNSET:
            out[name] = None if value is None else slim(value)
    return out


def _response(response: _Response) -> dict[str, Any]:
    if response.output is None:
        return {}
    return {"output": [{"type": item.type} for item in response.output]}


def _config(config: _InstanceConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if config.mask_sample is not UNSET:
        out["mask_sample"] = config.mask_sample
    if config.problem_info is not None:
        out["problem_info"] = {"instance_id": config.problem_info.instance_id}
    return out


def _request(request: _Request) -> dict[str, Any]:
    if request.metadata is None:
        return {}
    return {"metadata": {"instance_id": request.metadata.instance_id}}
