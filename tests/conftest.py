"""Shared fixtures, and a derandomized hypothesis profile for repeatable mutation runs
(scripts/mutate.py sets HYPOTHESIS_PROFILE=derandomized)."""

import os

import pytest
from hypothesis import settings

from factories import write_small_synth

settings.register_profile("derandomized", derandomize=True, database=None)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])


@pytest.fixture
def synth_path(tmp_path):
    """A small synthetic rollout Parquet file with validation rows."""
    return write_small_synth(tmp_path / "rollouts.parquet", seed=3, groups_per_step=6)
