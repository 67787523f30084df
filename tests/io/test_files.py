"""Tests for replay_cli.io.files: staged report directories get the modes `mkdir` would give
them (a teammate, or a TensorBoard server running as another user, can read them)."""

import os
import stat

import pytest
from typer.testing import CliRunner

from replay_cli.cli.app import app
from replay_cli.io.files import staged_directory


@pytest.fixture
def umask():
    """Set the process umask for one test and restore it after."""
    before = os.umask(0o022)
    os.umask(before)
    yield os.umask
    os.umask(before)


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_a_staged_directory_gets_the_mode_mkdir_would_give_it(tmp_path, umask, mask):
    umask(mask)
    (tmp_path / "by_mkdir").mkdir()
    with staged_directory(tmp_path / "report") as tmp:
        (tmp / "table.txt").write_text("x")
    assert mode(tmp_path / "report") == 0o777 & ~mask
    assert mode(tmp_path / "report") == mode(tmp_path / "by_mkdir")


def test_report_tensorboard_and_wandb_directories_are_readable_by_others(tmp_path, umask):
    pytest.importorskip("tensorboardX", reason="needs the extra replay-cli[tensorboard]")
    pytest.importorskip("wandb", reason="needs the extra replay-cli[wandb]")
    umask(0o022)
    out = tmp_path / "report"
    result = CliRunner().invoke(
        app,
        [
            "replay",
            "data_samples/rollouts_small.parquet",
            "--out",
            str(out),
            "--no-charts",
            "--tensorboard",
            str(tmp_path / "tb"),
            "--wandb",
            str(tmp_path / "wandb"),
        ],
    )
    assert result.exit_code == 0, result.output
    for name in ("report", "tb", "wandb"):
        assert mode(tmp_path / name) == 0o755, name
