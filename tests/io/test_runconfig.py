"""Tests for reading NeMo-RL run configs (parameters.read_run_config, io/run_config.py): interpolation, defaults, precedence."""

import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli.cli.app import app
from replay_cli.errors import ConfigError
from replay_cli.parameters import read_run_config

RUN = """
grpo:
  normalize_rewards: true
  use_leave_one_out_baseline: false
  adv_estimator:
    name: grpo
    normalize_rewards: ${grpo.normalize_rewards}
    use_leave_one_out_baseline: ${grpo.use_leave_one_out_baseline}
  advantage_clip_low: -3
  advantage_clip_high: 3
  time_efficiency:
    enabled: true
    lambda_time: 0.0166
    apply_to: correct
    floor: 0.05
env:
  should_mask_flagged_samples: false
policy:
  model_name: some/model
"""


def test_reads_the_trainer_keys(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(RUN)
    values = read_run_config(path)
    assert values == {
        "enabled": True,
        "lambda_time": 0.0166,
        "apply_to": "correct",
        "floor": 0.05,
        "mask_flagged": False,
        "estimator": "grpo",
        "normalize": True,
        "baseline": "mean",
        "clip_low": -3,
        "clip_high": 3,
    }


def test_adv_estimator_wins_over_the_fallback(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(
        "grpo:\n  normalize_rewards: true\n  adv_estimator:\n    normalize_rewards: false\n"
    )
    assert read_run_config(path)["normalize"] is False


def test_fallback_is_used_without_adv_estimator(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("grpo:\n  normalize_rewards: false\n")
    assert read_run_config(path)["normalize"] is False


def test_defaults_chain(tmp_path):
    (tmp_path / "base.yaml").write_text(
        "grpo:\n  time_efficiency:\n    lambda_time: 0.5\n    apply_to: all\n"
    )
    (tmp_path / "run.yaml").write_text(
        "defaults: base\ngrpo:\n  time_efficiency:\n    apply_to: correct\n"
    )
    assert read_run_config(tmp_path / "run.yaml") == {
        "lambda_time": 0.5,
        "apply_to": "correct",
    }


def test_unresolvable_interpolation(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("grpo:\n  advantage_clip_low: ${nope.value}\n")
    with pytest.raises(ConfigError, match=r"refers to \$\{nope.value\}"):
        read_run_config(path)


def test_precedence_flags_over_overrides_over_file(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(RUN)
    sample = tmp_path / "s.parquet"
    pl.DataFrame(
        {"group_id": [1, 1], "reward": [1.0, 0.0], "openhands_run_time": [60.0, 60.0]}
    ).write_parquet(sample)
    out = tmp_path / "r"
    result = CliRunner().invoke(
        app,
        [
            "replay",
            str(sample),
            "--out",
            str(out),
            "--config",
            str(path),
            "++grpo.time_efficiency.floor=0.1",
            "++grpo.time_efficiency.apply_to=all",
            "--apply-to",
            "correct",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = pl.read_parquet(out / "summary.parquet").row(0, named=True)
    assert summary["apply_to"] == "correct"  # flag beats override
    assert summary["floor"] == 0.1  # override beats file
    assert summary["lambda_time"] == 0.0166  # file beats default
    assert summary["baseline"] == "mean"
