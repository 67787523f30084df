"""Tests for replay_cli.report.write: atomic writes, refusal of existing directories, manifest contents."""

import json

import polars as pl
import pytest

from replay_cli import api
from replay_cli.errors import OutputExistsError
from replay_cli.io.parquet import ParquetRowSink

from factories import config, rollouts


def test_report_appears_complete(synth_path, tmp_path):
    out = tmp_path / "r"
    api.replay_to_report([synth_path], [config()], out)
    assert sorted(p.name for p in out.iterdir()) == [
        "findings.parquet",
        "forecast.parquet",
        "groups.parquet",
        "index.html",
        "manifest.json",
        "recommendation.parquet",
        "resamples.parquet",
        "rollouts.parquet",
        "steps.parquet",
        "summary.parquet",
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".r.")]


def test_failure_leaves_no_partial_report(synth_path, tmp_path, monkeypatch):
    out = tmp_path / "r"

    def broken_charts(result, directory, highlight, tick):
        raise RuntimeError("boom")

    monkeypatch.setattr("replay_cli.report.plots.render_all", broken_charts)
    with pytest.raises(RuntimeError, match="boom"):
        api.replay_to_report([synth_path], [config()], out, charts=True)
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


def test_manifest_records_inputs_configs_and_the_rule(synth_path, tmp_path, monkeypatch):
    from replay_cli.advice.rule import Rule
    from replay_cli.config import MeasureSettings

    out = tmp_path / "r"
    cfg = config({"apply_to": "correct"})
    monkeypatch.setattr("sys.argv", ["replay-cli", "replay"])
    rule = Rule(min_resolve_vs_off=0.8)
    measure = MeasureSettings(resamples=50)
    api.replay_to_report([synth_path], [cfg], out, rule=rule, measure=measure)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command_line"] == ["replay-cli", "replay"]
    assert manifest["rule"]["min_resolve_vs_off"] == 0.8
    assert manifest["measure"]["resamples"] == 50
    assert manifest["inputs"][0]["size"] == synth_path.stat().st_size
    assert manifest["configs"][0]["config_id"] == cfg.config_id


def test_the_manifest_lists_only_the_tables_written(tmp_path):
    """A forecast of an input without training rows (validation only) has nothing to draw
    from: no forecast table is written, and the manifest must not list one."""
    from replay_cli.config import ForecastSettings

    path = tmp_path / "validation.parquet"
    rollouts(reward=[1.0, 0.0], split=["validation", "validation"]).write_parquet(path)
    out = tmp_path / "r"
    forecast = ForecastSettings(steps=3, seeds=1, problems=10)
    api.replay_to_report([path], [config()], out, forecast=forecast)
    manifest = json.loads((out / "manifest.json").read_text())
    written = sorted(p.name for p in out.glob("*.parquet"))
    assert sorted(manifest["tables"].values()) == written
    assert "forecast.parquet" not in written
    assert manifest["forecast"]["steps"] == 3  # what was asked is still recorded


def test_config_id_is_stable():
    # Published in reports and manifests: the id of a config may not change between versions,
    # nor with how its values were written (key order, 1/60 against its float).
    assert config({"apply_to": "correct"}).config_id == "8508ae5ca5"
    written = config({"lambda_time": 1 / 60, "apply_to": "correct", "floor": 0.0})
    reordered = config({"floor": 0, "apply_to": "correct", "lambda_time": 0.016666666666666666})
    assert written.config_id == reordered.config_id
    assert config({"apply_to": "correct"}).config_id != config({"apply_to": "all"}).config_id


def test_row_sink_casts_a_later_chunk_to_the_first_schema(tmp_path):
    path = tmp_path / "rows.parquet"
    sink = ParquetRowSink(path)
    sink(pl.DataFrame({"step": [1, 1], "x": [0.5, None], "label": ["a", "b"]}))
    # A later chunk whose column came out all-null (Null type) and narrower integers.
    later = pl.DataFrame({"step": pl.Series([2], dtype=pl.Int32), "x": [None], "label": ["c"]})
    sink(later)
    sink.close()
    back = pl.read_parquet(path)
    assert back.schema == pl.Schema({"step": pl.Int64, "x": pl.Float64, "label": pl.String})
    assert back.to_dict(as_series=False) == {
        "step": [1, 1, 2],
        "x": [0.5, None, None],
        "label": ["a", "b", "c"],
    }
    assert sink.rows == 3
