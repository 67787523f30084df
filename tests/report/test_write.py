"""Tests for replay_cli.report.write: atomic writes, refusal of existing directories."""

import polars as pl
import pytest

from replay_cli import api
from replay_cli.errors import OutputExistsError
from replay_cli.io.parquet import ParquetRowSink

from factories import config


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


def test_config_id_is_stable():
    # Published in reports and manifests: the id of a config may not change between runs or
    # machines, nor with how its values were written (key order, 1/60 against its float). It
    # hashes every parameter: a report of an earlier version is rerun, not matched by id.
    assert config({"apply_to": "correct"}).config_id == "cc6f76c5d1"
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
