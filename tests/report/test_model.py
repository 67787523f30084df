"""Tests for replay_cli.report.model: one Report per replay, read back equal to what was
written, and the views every surface shares."""

from dataclasses import replace

import pytest

from replay_cli import api
from replay_cli import catalogue as C
from replay_cli.advice.rule import Rule
from replay_cli.errors import InputFileError
from replay_cli.report.model import Report
from replay_cli.report.options import ReportOptions
from replay_cli.report.write import write

from factories import config, write_small_synth

CONFIGS = [config({"enabled": False}), config({}), config({"apply_to": "correct"})]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = write_small_synth(tmp_path_factory.mktemp("model") / "rollouts.parquet", seed=3)
    rollouts = api.load([path])
    return Report.of(api.replay(rollouts, CONFIGS), ReportOptions(), rollouts)


def test_a_written_report_reads_back_equal(report, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    again = Report.read(write(report, out))
    assert again == report
    assert again.decision == report.decision
    changed = Report(replace(report.result, summary=report.summary.head(1)), report.manifest)
    assert changed != report
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


def test_a_report_must_be_judged(report):
    with pytest.raises(ValueError, match="judged"):
        Report.of(replace(report.result, verdict=None))


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
    d = report.decision
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
    assert "80%" in report.rule_text
    assert "85%" in report.rule_text
    page = (out / "index.html").read_text()
    assert f"rule's {C.pct(0.8)}" in page
    assert "95%" not in report.rule_text
    assert Report.read(out).rule == rule
