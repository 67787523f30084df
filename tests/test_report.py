"""Tests for replay_cli.report: atomic writes, refusal of existing directories, manifest contents."""

import json

import pytest

from replay_cli import api
from replay_cli.errors import OutputExistsError

from factories import config


def test_report_appears_complete(synth_path, tmp_path):
    out = tmp_path / "r"
    api.replay_to_report([synth_path], [config()], out)
    assert sorted(p.name for p in out.iterdir()) == [
        "groups.parquet",
        "manifest.json",
        "rollouts.parquet",
        "steps.parquet",
        "summary.parquet",
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".r.")]


def test_failure_leaves_no_partial_report(synth_path, tmp_path):
    out = tmp_path / "r"

    def broken_charts(result, directory):
        raise RuntimeError("boom")

    rollouts = api.load([synth_path])
    result = api.replay(rollouts)
    from replay_cli.report import write_report

    with pytest.raises(RuntimeError):
        write_report(out, result, rollouts, charts=broken_charts)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [synth_path]


def test_force_replaces_and_keeps_nothing_old(synth_path, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    with pytest.raises(OutputExistsError):
        api.replay_to_report([synth_path], [config()], out)
    api.replay_to_report([synth_path], [config()], out, force=True)
    assert not (out / "stale.txt").exists()


def test_manifest_records_inputs_and_configs(synth_path, tmp_path):
    out = tmp_path / "r"
    cfg = config({"apply_to": "correct"})
    api.replay_to_report([synth_path], [cfg], out, argv=["replay-cli", "replay"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command_line"] == ["replay-cli", "replay"]
    assert manifest["inputs"][0]["size"] == synth_path.stat().st_size
    assert manifest["configs"][0]["config_id"] == cfg.config_id


def test_config_id_is_stable():
    assert config({"apply_to": "correct"}).config_id == config({"apply_to": "correct"}).config_id
    assert config({"apply_to": "correct"}).config_id != config({"apply_to": "all"}).config_id
