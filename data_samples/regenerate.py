"""Regenerate every file in data_samples/ with the project's own code (deterministic).

uv run python data_samples/regenerate.py
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import polars as pl

from replay_cli import api
from replay_cli.config import ReplayConfig
from replay_cli.rollouts.synth import synth_rollouts

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the fake log writers live with the tests

from writers import write_gym_jsonl, write_train_data, write_wandb_table


def main() -> None:
    rollouts = synth_rollouts(steps=2, groups_per_step=2, group_size=4, validation_groups=1, seed=1)
    rollouts.write_parquet(HERE / "rollouts_small.parquet")
    # Large enough for rates and charts: the walkthrough notebook's sweep runs on it.
    synth_rollouts(
        steps=12, groups_per_step=48, group_size=8, validation_groups=8, seed=7
    ).write_parquet(HERE / "rollouts_medium.parquet")
    train = rollouts.filter(pl.col("split") == "train")
    write_gym_jsonl(train, HERE / "rollouts_small.nemo_gym.jsonl")
    step1 = train.filter(pl.col("step") == 1)
    write_wandb_table(step1, HERE / "train_swe_agents_full_result_0_5f2a9c0d.table.json")
    # A NeMo-RL run's dumps: the trainer's rewards and advantages under the default settings.
    replayed = api.replay(api.load([HERE / "rollouts_small.parquet"]), ReplayConfig()).result.rows
    shutil.rmtree(HERE / "train_data", ignore_errors=True)
    write_train_data(replayed.filter(pl.col("split") == "train"), HERE / "train_data")


if __name__ == "__main__":
    main()
