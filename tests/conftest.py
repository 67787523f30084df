"""Shared fixtures, and a derandomized hypothesis profile for repeatable mutation runs
(scripts/mutate.py sets HYPOTHESIS_PROFILE=derandomized)."""

import os

import pytest
from hypothesis import settings

from replay_cli.rollouts.synth import synth_rollouts

settings.register_profile("derandomized", derandomize=True, database=None)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])


@pytest.fixture
def synth_path(tmp_path):
    """A small synthetic rollout Parquet file with validation rows."""
    path = tmp_path / "rollouts.parquet"
    synth_rollouts(
        steps=3, groups_per_step=6, group_size=4, seed=3, validation_groups=2
    ).write_parquet(path)
    return path
