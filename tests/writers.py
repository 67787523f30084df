"""Write rollouts in the log formats replay_cli imports (NeMo-Gym JSONL, W&B table JSON, NeMo-RL
train_data dumps): the bundled samples and the format tests are made with these. Test-only."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from replay_cli import schema as S
from replay_cli.io.files import atomic_path

PROMPT_TOKENS = 4
RESPONSE_TOKENS = 6


AGENT_TIMEOUT = 1800
"""swebench_agent_timeout of the synthetic runs (swebench_openhands_training.yaml)."""


def _tokens(count: int, seed: int) -> dict:
    """The token fields NeMo-Gym adds to each generated output item for RL (ids, log-probs)."""
    return {
        "prompt_token_ids": [(seed * 31 + k) % 50000 for k in range(count // 4)],
        "generation_token_ids": [(seed * 17 + k) % 50000 for k in range(count)],
        "generation_log_probs": [-((seed + k) % 97) / 13.0 for k in range(count)],
    }


def _output(row: dict, pad: int) -> list[dict]:
    """`response.output` as swe_agents returns it: reasoning, function calls with JSON-string
    arguments (every third turn two calls in parallel before their outputs), call outputs, a
    final message, each generated item with its token ids and log-probs; about `pad` bytes of
    trajectory spread over the items (most of it numbers, as in real rows)."""
    calls = int(row[S.CALLS])
    per_item = pad // max(2 * calls + 2, 1)
    text = "x" * (per_item // 5)
    tokens = per_item // 20
    items: list[dict] = [
        {"type": "reasoning", "id": "rs_0", "summary": [{"text": text}], **_tokens(tokens, 0)}
    ]
    made = 0
    while made < calls:
        parallel = 2 if made % 3 == 2 and calls - made >= 2 else 1
        ids = [f"call_{made + k}" for k in range(parallel)]
        for k, call_id in enumerate(ids):
            command = json.dumps({"command": f"grep -rn foo src/ # {made + k}"})
            items.append(
                {
                    "type": "function_call",
                    "name": "execute_bash",
                    "arguments": command,
                    "call_id": call_id,
                    "id": f"fc_{made + k}",
                    "status": "completed",
                    **_tokens(tokens, made + k),
                }
            )
        for call_id in ids:
            items.append({"type": "function_call_output", "call_id": call_id, "output": text})
        made += parallel
    items.append(
        {
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "id": "msg_0",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
            **_tokens(tokens, calls + 1),
        }
    )
    return items


def _instance_config(row: dict, instance: str) -> dict:
    """The ~80-key instance config swe_agents echoes back, the YAML of the run among it."""
    config = {f"setting_{k:02d}": k for k in range(74)}
    config.update(
        {
            "mask_sample": row[S.MASK_SAMPLE],
            "problem_info": {
                "instance_id": instance,
                "repo": "django/django",
                "base_commit": "0" * 40,
                "problem_statement": "Fix the thing.",
            },
            "swebench_agent_timeout": AGENT_TIMEOUT,
            "agent_max_turns": 100,
            "container_formatter": "/images/{instance_id}.sif",
            "dataset_path": "swebench-verified.jsonl",
            "yaml": "agent:\n  max_turns: 100\n  timeout: 1800\n" * 20,
        }
    )
    return config


def _full_result(row: dict, pad: int = 0) -> dict:
    """A swe_agents verify response (NeMo-Gym 0.7 layout) for a canonical row; `pad` bytes of
    trajectory text make it as large as a real one (several MB per rollout)."""
    instance = f"task-{row[S.GROUP_ID]}"
    timed_out = bool(row.get("agent_timed_out"))
    failed = timed_out or row.get("agent_error_kind") is not None
    run_time = row[S.RUN_TIME]
    return {
        "responses_create_params": {
            "input": [{"role": "user", "content": "Solve the issue."}],
            "metadata": {"instance_id": instance},
            "model": "policy",
        },
        "response": {"id": "resp_0", "object": "response", "output": _output(row, pad)},
        "reward": row[S.REWARD],
        "resolved": row[S.RESOLVED],
        "patch_exists": bool(row[S.RESOLVED]),
        "model_patch": "diff --git a/x b/x" if row[S.RESOLVED] else None,
        "agent_error_kind": row.get("agent_error_kind"),
        # Flags are null, not false, when nothing went wrong.
        "agent_timed_out": True if timed_out else None,
        "eval_timed_out": None,
        "oom_killed": None,
        "eval_oom_killed": None,
        "agent_peak_rss_mb": 812.5,
        "eval_peak_rss_mb": None,
        "ray_queue_time": 0.4,
        S.RUN_TIME: run_time,
        "generation_start_timestamp": 1.7e9,
        "evaluation_start_timestamp": None if run_time is None else 1.7e9 + run_time,
        "per_turn_metrics": [{"turn": k, "model_call_time": 1.5} for k in range(3)],
        # On an agent failure the spin-up time is a difference of an unset timestamp.
        "generation_apptainer_spinup_time": -1.77e9 if failed else 4.2,
        "create_runtime_time": 1.1,
        "connect_to_runtime_time": 0.3,
        "initialize_runtime_time": 2.0,
        "total_command_exec_time": 12.0,
        "total_model_call_time": None,  # always null in 0.7
        "final_eval_apptainer_spinup_time": 3.9,
        "final_eval_time": 45.0,
        "instance_config": _instance_config(row, instance),
        "mask_sample": row[S.MASK_SAMPLE],  # 0.7: top level; the nested copy stays one release
        "subagent_trajectories": [],
    }


def write_gym_jsonl(frame: pl.DataFrame, path: Path, pad: int = 0) -> None:
    """`<name>.jsonl` of NeMo-Gym's rollout collector: one verify response per line plus
    `_ng_task_index`, `_ng_rollout_index` and `agent_ref`."""
    with atomic_path(path) as tmp, tmp.open("w") as fh:
        for row in frame.iter_rows(named=True):
            record = {
                "_ng_task_index": row[S.GROUP_ID],
                "_ng_rollout_index": row[S.ROLLOUT_INDEX],
                "agent_ref": {"type": "responses_api_agents", "name": "swe_agents"},
                **_full_result(row, pad),
            }
            fh.write(json.dumps(record) + "\n")


def write_collector_sidecars(frame: pl.DataFrame, directory: Path, name: str) -> list[Path]:
    """The files the collector writes beside `<name>.jsonl`: `<name>_materialized_inputs.jsonl`
    (one input per rollout, no result) and `<name>_failures.jsonl` (`_ng_failure_*`)."""
    inputs, failures = (
        directory / f"{name}_materialized_inputs.jsonl",
        directory / f"{name}_failures.jsonl",
    )
    with atomic_path(inputs) as tmp, tmp.open("w") as fh:
        for row in frame.iter_rows(named=True):
            record = {
                "_ng_task_index": row[S.GROUP_ID],
                "_ng_rollout_index": row[S.ROLLOUT_INDEX],
                "agent_ref": {"type": "responses_api_agents", "name": "swe_agents"},
                "responses_create_params": {"input": [{"role": "user", "content": "Solve."}]},
            }
            fh.write(json.dumps(record) + "\n")
    with atomic_path(failures) as tmp, tmp.open("w") as fh:
        fh.write(
            json.dumps(
                {
                    "_ng_task_index": 0,
                    "_ng_rollout_index": 3,
                    "_ng_failure_type": "TimeoutError",
                    "_ng_failure_traceback": "Traceback ...",
                }
            )
            + "\n"
        )
    return [inputs, failures]


def write_wandb_table(frame: pl.DataFrame, path: Path) -> None:
    """A W&B Table JSON of `train/swe_agents/full_result`: one JSON-string cell per rollout, with
    no `_ng_task_index` (NeMo-RL's table cells never carry one: rows group by instance id)."""
    data = [[json.dumps(_full_result(r))] for r in frame.iter_rows(named=True)]
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps({"columns": ["Full result"], "data": data}))


def write_train_data(rows: pl.DataFrame, directory: Path) -> list[Path]:
    """`train_data_step{N}.jsonl` per step from replayed rows (reward_shaped, advantage, masked):
    every value a length-1 list, advantages per token, prompt tokens identical within a group."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for (step,), part in rows.sort(S.STEP, S.GROUP_ID, S.ROLLOUT_INDEX).group_by(
        S.STEP, maintain_order=True
    ):
        path = directory / f"train_data_step{step}.jsonl"
        with atomic_path(path) as tmp, tmp.open("w") as fh:
            for idx, row in enumerate(part.iter_rows(named=True)):
                prompt = [1000 + int(row[S.GROUP_ID]) % 30000, 11, 12, 13][:PROMPT_TOKENS]
                response = [20 + (idx + t) % 50 for t in range(RESPONSE_TOKENS)]
                record = {
                    "content": [""],
                    "rewards": [row[S.REWARD_SHAPED]],
                    "input_lengths": [PROMPT_TOKENS + RESPONSE_TOKENS],
                    "token_ids": [prompt + response],
                    "token_loss_mask": [[0] * PROMPT_TOKENS + [1] * RESPONSE_TOKENS],
                    "sample_loss_mask": [0 if row[S.MASKED] else 1],
                    "advantages": [[0.0] * PROMPT_TOKENS + [row[S.ADVANTAGE]] * RESPONSE_TOKENS],
                    "idx": [idx],
                }
                fh.write(json.dumps(record) + "\n")
        paths.append(path)
    return paths
