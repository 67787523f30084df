"""Shared fixtures, and hypothesis profiles: `ci` keeps no example database (CI runs from a
fresh checkout, and a database would make a run depend on the ones before it; .ci/run and any
CI that sets CI=true load it), `derandomized` draws the same examples in every run for
repeatable mutation runs (scripts/mutate.py sets HYPOTHESIS_PROFILE=derandomized)."""

import os

import pytest
from hypothesis import settings

from factories import write_small_synth

settings.register_profile("ci", database=None, deadline=None, print_blob=True)
settings.register_profile("derandomized", derandomize=True, database=None)
profile = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else None)
if profile:
    settings.load_profile(profile)


@pytest.fixture(scope="session", autouse=True)
def own_tool_dirs(tmp_path_factory):
    """W&B's settings, cache and staging directories in this run's own temporary directory
    (by default they sit under the home directory, shared by every suite running on the
    machine): two copies of the suite side by side share no file through them."""
    root = tmp_path_factory.mktemp("tool-dirs")
    names = ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR")
    with pytest.MonkeyPatch.context() as mp:
        for name in names:
            path = root / name.lower()
            path.mkdir()
            mp.setenv(name, str(path))
        yield root


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """`replay-cli demo` run once for the session as the README shows it (its default output
    directory, in a fresh working directory, 160 columns), over an earlier report it replaces
    (a manifest and a file of its own): (working directory, CLI result)."""
    from typer.testing import CliRunner

    from replay_cli.cli.app import app

    cwd = tmp_path_factory.mktemp("demo")
    earlier = cwd / "replay-demo"
    earlier.mkdir()
    (earlier / "manifest.json").write_text("{}")
    (earlier / "earlier.txt").write_text("from an earlier report")
    here = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, ["demo"], env={"COLUMNS": "160"})
    finally:
        os.chdir(here)
    return cwd, result


@pytest.fixture
def synth_path(tmp_path):
    """A small synthetic rollout Parquet file with validation rows."""
    return write_small_synth(tmp_path / "rollouts.parquet", seed=3, groups_per_step=6)
