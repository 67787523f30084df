"""The terminal's and the page's decision say true sentences on summaries built to break them:
the forecast line reads the pick's own row and names the one baseline, the decision states the bar it used and
the pick's warnings, too little data is one verdict in one wording, and every line says after
how many steps."""

import polars as pl

from replay_cli.advice.rule import Rule
from replay_cli.advice.verdict import judge
from replay_cli.cli.terminal import print_decision, print_forecast
from replay_cli.report.html import _decision, _forecast
from replay_cli.report.model import Report
from replay_cli.result import ReplayResult

from advice_rows import OFF, summary

NO_CLIP_OFF = {
    **OFF,
    "clip_low": None,
    "clip_high": None,
    # Shaping off without the clip: another twin, another course on long problems.
    "forecast/resolve_start@long": 0.528,
    "forecast/resolve_off@long": 0.599,
    "forecast/resolve@long": 0.599,
}
PICK = {
    "forecast/solve_minutes_vs_off": -1.0,
    "forecast/resolve_start@long": 0.5,
    "forecast/resolve_off@long": 0.602,
    "forecast/resolve@long": 0.583,
    "forecast/resolve_vs_off@long": 0.969,
}
RUNNER = {"forecast/solve_minutes_vs_off": -0.5}


def report_of(frame: pl.DataFrame, rule: Rule | None = None) -> Report:
    verdict = judge(frame, rule=rule)
    result = ReplayResult(
        rows=None,
        groups=None,
        steps=pl.DataFrame(),
        summary=frame,
        configs=[],
        forecast=pl.DataFrame({"step": [0]}),
    )
    return Report(result, verdict, {})


def test_the_forecast_line_reads_the_picks_row_not_row_0(capsys, tmp_path):
    report = report_of(summary(NO_CLIP_OFF, PICK, RUNNER))
    assert report.verdict.decision.recommended["label"] == "config 1"
    print_forecast(report)
    out = capsys.readouterr().out
    assert (
        "  shaping off (the one baseline every config is measured against) takes long problems "
        "from 50.0% to 60.2% resolved.\n"
    ) in out
    assert "59.9%" not in out
    intro = _forecast(report, tmp_path).split("</p>")[0]  # the table below shows every row
    assert "Shaping off (the one baseline every config is measured against)" in intro
    assert "from 50.0% to 60.2% resolved" in intro
    assert "59.9%" not in intro


def test_a_shaping_off_pick_is_named_as_the_run_itself(capsys):
    report = report_of(summary(OFF, {"forecast/solve_minutes_vs_off": 0.3}))
    assert report.verdict.decision.keep_off
    print_forecast(report)
    assert (
        "  shaping off (the one baseline every config is measured against) takes long problems "
        "from 20.0% to 30.0% resolved." in (capsys.readouterr().out)
    )


def test_the_decision_states_the_bar_from_the_rule(capsys):
    rule = Rule(min_resolve_vs_off=0.9, min_resolve_vs_off_long=0.85)
    print_decision(report_of(summary(OFF, PICK, RUNNER), rule))
    out = capsys.readouterr().out
    assert (
        "  bar: low end of the resolve rate's interval after 50 steps ≥ 90% of shaping off's "
        "overall and 85% on long problems\n"
    ) in out
    print_decision(report_of(summary(OFF, PICK, RUNNER)))
    assert (
        "  bar: low end of the resolve rate's interval after 50 steps ≥ 95% of shaping off's, "
        "overall and on long problems\n"
    ) in capsys.readouterr().out


def test_a_warning_on_the_pick_is_said_in_the_decision(capsys, tmp_path):
    # Failures end 2 min sooner: beyond 5% of shaping off's 30 min, the fail_faster warning.
    gives_up = {**PICK, "forecast/fail_minutes_vs_off": -2.0}
    report = report_of(summary(OFF, gives_up, RUNNER))
    assert report.verdict.decision.recommended["label"] == "config 1"
    print_decision(report)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Recommended: config 1"
    assert lines[1].startswith("  why: ")
    assert lines[2].startswith(
        "  warning: teaches failures to give up sooner: after 50 steps a failure ends "
        "2 min sooner than under shaping off"
    )
    assert "Warning:</b> teaches failures to give up sooner" in _decision(report)
    # A pick without one gets no warning line.
    print_decision(report_of(summary(OFF, PICK, RUNNER)))
    assert "warning:" not in capsys.readouterr().out


def test_the_runner_up_says_after_how_many_steps(capsys):
    print_decision(report_of(summary(OFF, PICK, RUNNER)))
    assert (
        "Runner-up: config 2 (successes end 0.5 min sooner than under shaping off after 50 steps)"
    ) in capsys.readouterr().out


def test_too_little_data_is_one_verdict_in_one_wording_even_when_every_config_is_avoided(
    capsys, tmp_path
):
    # Four problems, and the one config fails a criterion that needs no forecast: the verdict is
    # still "not enough data to decide", never "No config passes" beside "too few to decide".
    exploding = {
        "forecast/problems_sampled": 4.0,
        "adv/explosion_trained_frac": 0.07,
        "adv/abs_max": 11.3,
        "clip_low": None,
        "clip_high": None,
    }
    report = report_of(summary(exploding))
    assert report.verdict.decision.unrated == (
        "not enough data to decide: the forecast rests on 4 problems, and the rule needs at "
        'least 50 (docs/report.md, "Small data")'
    )
    print_decision(report)
    print_forecast(report)
    out = capsys.readouterr().out
    assert out.startswith("No recommendation: not enough data to decide: the forecast rests on 4")
    assert "No config passes" not in out
    assert "too few" not in out
    assert out.count("not enough data to decide") == 1
    assert "Avoid: 1 config(s)" in out
    page = _decision(report)
    assert "No recommendation: not enough data to decide" in page
    assert "No config passes" not in page
    assert "keep |advantage| &gt; 3" in page  # the avoided config and why, still listed


BACKTEST = {
    "forecast/fit": "from 48 logged steps: the forecast assumes the cautious reading",
    "forecast/backtest": "the forecast of shaping off does not reproduce steps 33–48 of your run",
    "forecast/backtest_pass": 0.0,
}


def test_a_failed_backtest_is_said_under_the_forecast_and_in_the_confidence(capsys, tmp_path):
    """The reading and the backtest on the terminal and the page; where the backtest failed, the
    confidence says the pick rests on the cautious reading; where it passed, it says nothing."""
    failed = report_of(summary({**OFF, **BACKTEST}, {**PICK, **BACKTEST}, RUNNER))
    print_forecast(failed)
    out = capsys.readouterr().out
    assert f"  Reading: {BACKTEST['forecast/fit']}.\n" in out
    assert f"  Backtest: {BACKTEST['forecast/backtest']}.\n" in out
    intro = _forecast(failed, tmp_path)
    assert f"<b>Backtest</b>: {BACKTEST['forecast/backtest']}." in intro
    assert failed.confidence.endswith(
        "The forecast of shaping off does not reproduce the later steps of your run (its "
        "backtest, under Forecast): the pick rests on the cautious reading (longer runs cause "
        "all of their extra success), not on a prediction of this run."
    )
    passed = {**BACKTEST, "forecast/backtest_pass": 1.0}
    fine = report_of(summary({**OFF, **passed}, {**PICK, **passed}, RUNNER))
    assert "does not reproduce" not in fine.confidence
    assert "cautious" not in fine.confidence
