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


def _full_result(row: dict) -> dict:
    """A swe_agents verify response for a canonical row (function_call items carry the call count)."""
    output = [{"type": "reasoning", "summary": []}]
    output += [
        {"type": "function_call", "name": "bash", "arguments": "{}"} for _ in range(row[S.CALLS])
    ]
    output.append({"type": "message", "content": []})
    return {
        "reward": row[S.REWARD],
        "resolved": row[S.RESOLVED],
        S.RUN_TIME: row[S.RUN_TIME],
        "response": {"output": output},
        # As in NeMo-Gym 0.7: the instance id only inside instance_config.problem_info.
        "instance_config": {
            "mask_sample": row[S.MASK_SAMPLE],
            "problem_info": {"instance_id": f"task-{row[S.GROUP_ID]}"},
        },
        "agent_timed_out": row.get("agent_timed_out"),
        "agent_error_kind": row.get("agent_error_kind"),
    }


def write_gym_jsonl(frame: pl.DataFrame, path: Path) -> None:
    """One NeMo-Gym rollout row per line: the verify response plus _ng_task_index/_ng_rollout_index."""
    with atomic_path(path) as tmp, tmp.open("w") as fh:
        for row in frame.iter_rows(named=True):
            record = {
                "_ng_task_index": row[S.GROUP_ID],
                "_ng_rollout_index": row[S.ROLLOUT_INDEX],
                "agent_ref": {"name": "swe_agents"},
                **_full_result(row),
            }
            fh.write(json.dumps(record) + "\n")


def write_wandb_table(frame: pl.DataFrame, path: Path) -> None:
    """A W&B Table JSON of `train/swe_agents/full_result`: one JSON-string cell per rollout, with
    no `_ng_task_index` (NeMo-RL's table cells never carry one: rows group by instance id)."""
    data = [[json.dumps(_full_result(r))] for r in frame.iter_rows(named=True)]
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps({"columns": ["full_result"], "data": data}))


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
