"""Shared fixtures."""

import pytest

from replay_cli.rollouts.synth import synth_rollouts


@pytest.fixture
def synth_path(tmp_path):
    """A small synthetic rollout Parquet file with validation rows."""
    path = tmp_path / "rollouts.parquet"
    synth_rollouts(
        steps=3, groups_per_step=6, group_size=4, seed=3, validation_groups=2
    ).write_parquet(path)
    return path
