"""Tests for replay_cli.advice.launch: overrides and YAML that launch exactly the recommended
config (read back by the trainer-side parsers), shaping off launched as `enabled=false`, and a
peer estimator never launched under its own name."""

import pytest

from replay_cli import api
from replay_cli.advice.launch import launch_overrides, launch_yaml
from replay_cli.advice.recommendation import recommend
from replay_cli.parameters import parse_overrides, read_run_config, to_config

from advice_rows import GOOD, summary
from factories import config


def test_lambda_zero_as_shaping_off_launches_enabled_false_not_lambda_zero():
    rows = summary({"lambda_time": 0.0, "forecast/solve_minutes_vs_off": 0.0})
    (row,) = recommend(rows).to_dicts()
    assert row["shaping_off"]
    assert row["overrides"].startswith("++grpo.time_efficiency.enabled=false")
    assert "lambda_time" not in row["overrides"]


CASES = [
    ({"lambda_time": 1 / 60, "apply_to": "correct"}, {"clip_low": -3.0, "clip_high": 3.0}),
    ({"lambda_time": 0.0125, "floor": 0.05, "lambda_call_bonus": 0.1, "call_bonus_ref": 40.0}, {}),
    ({"enabled": False}, {"clip_high": 2.5}),
    ({"mask_flagged": False}, {"baseline": "mean", "normalize": False}),
]


@pytest.mark.parametrize(("shaping", "advantage"), CASES)
def test_launch_overrides_and_yaml_rebuild_the_same_config(tmp_path, shaping, advantage):
    cfg = config(shaping, advantage)
    row = api.replay(api.load(["data_samples/rollouts_small.parquet"]), [cfg]).result.summary
    row = row.row(0, named=True)
    off = not cfg.shaping.enabled
    values, ignored = parse_overrides(launch_overrides(row, off).split())
    assert ignored == []
    assert to_config(values).config_id == cfg.config_id
    path = tmp_path / "run.yaml"
    path.write_text(launch_yaml(row, off))
    assert to_config(read_run_config(path)).config_id == cfg.config_id


@pytest.mark.parametrize("estimator", ["verl-grpo", "trl-grpo", "dr-grpo"])
def test_a_peer_estimator_is_never_launched_as_a_nemo_rl_estimator_name(estimator):
    # NeMo-RL has no estimator by a peer's name: the replay emulates the peer, the launch line
    # is NeMo-RL's, and `++grpo.adv_estimator.name=verl-grpo` would fail at the trainer.
    row = {**GOOD, "estimator": estimator, "config_id": "c0", "label": "peer"}
    overrides = launch_overrides(row)
    assert "adv_estimator.name" not in overrides
    assert "++grpo.time_efficiency.lambda_time=" in overrides
    assert "name:" not in launch_yaml(row)


def test_a_launch_line_carries_no_setting_the_config_does_not_use():
    # A bonus of 0 with a reference call count: the reference does nothing, so it is not launched.
    unused = summary({"call_bonus_ref": 40.0, "lambda_call_bonus": 0.0})
    (row,) = recommend(unused).to_dicts()
    assert "call_bonus_ref" not in row["overrides"]
    assert "call_bonus_ref" not in row["yaml"]
    used = summary({"call_bonus_ref": 40.0, "lambda_call_bonus": 0.1})
    (row,) = recommend(used).to_dicts()
    assert "++grpo.time_efficiency.call_bonus_ref=40.0" in row["overrides"]
    assert "lambda_call_bonus=0.1" in row["overrides"]
