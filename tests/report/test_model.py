"""Tests for replay_cli.report.model: one Report per replay, judged once, read back equal to
what was written (a directory of an earlier version refused), its manifest, and the views every
surface shares."""

import json
from dataclasses import replace

import polars as pl
import pytest

from replay_cli import api
from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.rule import Rule
from replay_cli.errors import InputFileError
from replay_cli.report.model import Report
from replay_cli.report.options import ReportOptions
from replay_cli.report.write import write

from factories import config, rollouts, write_small_synth

CONFIGS = [config({"enabled": False}), config({}), config({"apply_to": "correct"})]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = write_small_synth(tmp_path_factory.mktemp("model") / "rollouts.parquet", seed=3)
    rollouts = api.load([path])
    return api.replay(rollouts, CONFIGS)


def test_a_written_report_reads_back_equal(report, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    again = Report.read(write(report, out))
    assert again == report
    assert again.verdict.decision == report.verdict.decision
    fewer = replace(report.result, summary=report.result.summary.head(1))
    assert Report(fewer, report.verdict, report.manifest) != report
    rejudged = report.judged_again(Rule(min_resolve_vs_off=0.5))
    assert rejudged != report  # the verdict is part of a report's equality


def test_rewriting_in_place_keeps_the_report(report, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    write(report, out)
    before = {p.name: p.read_bytes() for p in out.glob("*.parquet")}
    write(Report.read(out), out)
    assert Report.read(out) == report
    assert {p.name for p in out.glob("*.parquet")} == set(before)


def test_a_report_is_judged_once_when_made(report):
    """`Report.of` judges the replay under the options' rule; the result holds no verdict."""
    assert not hasattr(report.result, "verdict")
    strict = Report.of(report.result, ReportOptions(rule=Rule(min_resolve_vs_off=0.99)))
    assert strict.verdict.rule.min_resolve_vs_off == 0.99
    again = report.judged_again(Rule(min_resolve_vs_off=0.99)).verdict
    assert strict.verdict.recommendation.equals(again.recommendation)


@pytest.mark.parametrize("stored", ["none", "without shaping off"])
def test_read_refuses_a_report_of_an_earlier_version(report, tmp_path, stored):
    """A directory without the verdict this version stores is refused, with what to do."""
    out = tmp_path / "old"
    out.mkdir()
    write(report, out)
    if stored == "none":
        (out / "recommendation.parquet").unlink()
    else:
        table = pl.read_parquet(out / "recommendation.parquet")
        table.drop(S.SHAPING_OFF).write_parquet(out / "recommendation.parquet")
    with pytest.raises(InputFileError, match=rf"{out} was written by an earlier version.*rerun"):
        Report.read(out)


def test_read_refuses_a_directory_that_is_not_a_report(tmp_path):
    with pytest.raises(InputFileError, match=r"is not a replay report: missing groups\.parquet"):
        Report.read(tmp_path)


def test_the_shared_views(report):
    assert list(report.numbers.values()) == [1, 2, 3]
    assert report.frontier is not None
    assert report.frontier.height == 3
    off = CONFIGS[0].config_id
    assert report.highlighted()[0] == off
    assert report.highlighted([CONFIGS[2].config_id[:6]]) == [CONFIGS[2].config_id]
    d = report.verdict.decision
    if d.keep_off or d.recommended is None:
        assert report.trade is d.best_trade or report.trade is None
    else:
        assert report.trade is None


def test_the_rules_thresholds_reach_the_texts(synth_path, tmp_path):
    """The page states the thresholds of the rule the report was judged by, not the default's."""
    rule = Rule(min_resolve_vs_off=0.8, min_resolve_vs_off_long=0.85)
    out = tmp_path / "r"
    report = api.replay_to_report([synth_path], CONFIGS, out, rule=rule)
    assert report.rule_line == 0.8
    assert "80%" in report.verdict.rule.summary_text()
    assert "85%" in report.verdict.rule.summary_text()
    page = (out / "index.html").read_text()
    assert f"rule's {C.pct(0.8)}" in page
    assert "95%" not in report.verdict.rule.summary_text()
    assert Report.read(out).verdict.rule == rule


def test_manifest_records_inputs_configs_and_the_rule(synth_path, tmp_path, monkeypatch):
    from replay_cli.advice.rule import Rule
    from replay_cli.config import EffortSettings

    out = tmp_path / "r"
    cfg = config({"apply_to": "correct"})
    monkeypatch.setattr("sys.argv", ["replay-cli", "replay"])
    rule = Rule(min_resolve_vs_off=0.8)
    measure = EffortSettings(resamples=50)
    api.replay_to_report([synth_path], [cfg], out, rule=rule, effort=measure)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command_line"] == ["replay-cli", "replay"]
    assert manifest["rule"]["min_resolve_vs_off"] == 0.8
    assert manifest["effort"]["resamples"] == 50
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
