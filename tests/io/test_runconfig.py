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


# ---- one parser, strict where the tool reads (issue 38) -----------------------------------------


def _replay(tmp_path, yaml_text, *args):
    path = tmp_path / "run.yaml"
    path.write_text(yaml_text)
    sample = tmp_path / "s.parquet"
    pl.DataFrame(
        {"group_id": [1, 1], "reward": [1.0, 0.0], "openhands_run_time": [60.0, 120.0]}
    ).write_parquet(sample)
    out = tmp_path / "r"
    result = CliRunner().invoke(
        app, ["replay", str(sample), "--out", str(out), "--config", str(path), *args]
    )
    return result, out


def test_a_misspelled_time_efficiency_key_is_refused_before_any_work(tmp_path):
    result, out = _replay(tmp_path, "grpo:\n  time_efficiency:\n    aply_to: correct\n")
    assert result.exit_code == 2, result.output
    assert "grpo.time_efficiency.aply_to" in result.output
    assert "apply_to" in result.output.split("Known under grpo.time_efficiency:")[1]
    assert "Traceback" not in result.output
    assert not out.exists()


def test_a_near_miss_of_an_advantage_key_is_refused_and_the_rest_ignored(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text("grpo:\n  normalize_reward: false\n")
    with pytest.raises(ConfigError, match=r"grpo\.normalize_reward\b.*normalize_rewards"):
        read_run_config(path)
    path = tmp_path / "b.yaml"  # a trainer's other settings, however named, are not the tool's
    path.write_text("policy:\n  model_name: m\n  max_total_sequence_length: 8\nloss_fn: {}\n")
    assert read_run_config(path) == {}


@pytest.mark.parametrize(
    ("text", "want"), [("1/60", 1 / 60), ("0.0166", 0.0166), ("'1/120'", 1 / 120)]
)
def test_fractions_are_read_in_the_config_file_as_on_the_command_line(tmp_path, text, want):
    path = tmp_path / "run.yaml"
    path.write_text(f"grpo:\n  time_efficiency:\n    lambda_time: {text}\n")
    assert read_run_config(path)["lambda_time"] == want
    result, out = _replay(tmp_path, f"grpo:\n  time_efficiency:\n    lambda_time: {text}\n")
    assert result.exit_code == 0, result.output
    assert pl.read_parquet(out / "summary.parquet")["lambda_time"][0] == want


def test_a_bad_choice_in_the_config_file_gets_the_same_message_as_the_flag(tmp_path):
    result, out = _replay(tmp_path, "grpo:\n  time_efficiency:\n    apply_to: corect\n")
    assert result.exit_code == 2, result.output
    assert "expects one of all, correct, got 'corect'. Did you mean correct?" in result.output
    assert not out.exists()


def test_interpolation_inside_a_string_and_a_loop(tmp_path):
    from replay_cli.io.run_config import read_tree, resolve

    path = tmp_path / "run.yaml"
    path.write_text("a: ${b}\nb: ${a}\nname: run-${c.d}-x\nc: {d: 7}\n")
    tree = read_tree(path)
    assert resolve(tree, tree["name"], "name") == "run-7-x"
    with pytest.raises(ConfigError, match=r"Interpolation loop at a: \$\{[ab]\}"):
        resolve(tree, tree["a"], "a")
    path.write_text("a: x-${b}\nb: y-${a}\n")  # a loop through strings that only contain refs
    tree = read_tree(path)
    with pytest.raises(ConfigError, match="Interpolation loop at a"):
        resolve(tree, tree["a"], "a")


@pytest.mark.parametrize(("files", "ok"), [(21, True), (22, False)])
def test_a_defaults_chain_of_twenty_parents_is_read_and_one_more_refused(tmp_path, files, ok):
    from replay_cli.io.run_config import read_tree

    for k in range(files):
        parent = f"defaults: f{k + 1}\n" if k + 1 < files else ""
        (tmp_path / f"f{k}.yaml").write_text(f"{parent}v{k}: {k}\n")
    if ok:
        assert read_tree(tmp_path / "f0.yaml") == {f"v{k}": k for k in range(files)}
    else:
        with pytest.raises(ConfigError, match="`defaults:` chain is deeper than 20 files"):
            read_tree(tmp_path / "f0.yaml")


def test_invalid_yaml_names_the_file(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("grpo: [unclosed\n")
    with pytest.raises(ConfigError, match=f"Run config {path} is not valid YAML"):
        read_run_config(path)
