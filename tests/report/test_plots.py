"""Tests for replay_cli.report.plots: every chart is a Figure with a title and labelled axes."""

from dataclasses import replace

import polars as pl
import pytest

from replay_cli import api
from replay_cli.report import plots

from factories import config


@pytest.fixture
def result(synth_path):
    configs = [config({"enabled": False})] + [
        config({"lambda_time": lam, "apply_to": a})
        for lam in (1 / 120, 1 / 60)
        for a in ("all", "correct")
    ]
    return api.replay(api.load([synth_path]), configs)


def _check(fig):
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        assert ax.get_title()
        assert ax.get_xlabel()
        assert ax.get_ylabel()


def test_report_figures(result):
    figures = plots.report_figures(result)
    assert set(figures) == {
        "frontier",
        "forecast",
        "signal_vs_lambda",
        "inversion_vs_lambda",
        "explosion_vs_lambda",
        "advantage_distribution",
        "minutes_and_deductions",
        "step_curves",
    }
    for fig in figures.values():
        _check(fig)


def test_signal_chart_has_one_line_per_apply_to_and_the_raw_reference(result):
    fig = plots.lambda_chart(result.result.summary, "signal_vs_lambda")
    assert len(fig.axes) == 1  # four shaped configs: one panel, no facets
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["apply_to=all", "apply_to=correct", "shaping off (same estimator)"]
    lines = fig.axes[0].get_lines()
    assert len(lines) == 4  # each series and its shaping-off rate
    assert list(lines[0].get_ydata()) == (
        result.result.summary.filter(pl.col("enabled") & (pl.col("apply_to") == "all"))
        .sort("lambda_time")["signal/group_rate"]
        .to_list()
    )


def test_lambda_charts_skipped_for_one_lambda(result):
    one_lambda = pl.col("lambda_time") == 1 / 60
    single = replace(
        result, result=replace(result.result, summary=result.result.summary.filter(one_lambda))
    )
    assert "signal_vs_lambda" not in plots.report_figures(single)


def test_replayed_vs_internal():
    joined = pl.DataFrame(
        {
            "step": [1, 2, 1, 2],
            "metric": ["a", "a", "b", "b"],
            "replayed": [1.0, 2.0, 3.0, 4.0],
            "internal": [1.0, 1.5, 3.0, 3.5],
        }
    )
    fig = plots.replayed_vs_internal(joined)
    _check(fig)
    assert [ax.get_title() for ax in fig.axes if ax.get_visible()] == ["a", "b"]


def test_charts_against_lambda_write_it_as_every_surface_does(result):
    """λ's ticks are 1/120, 1/60 (as the labels and tables write them), not λ × 60 or 0.01667."""
    fig = plots.lambda_chart(result.result.summary, "signal_vs_lambda")
    ax = fig.axes[0]
    assert "× 60" not in ax.get_xlabel()
    assert "λ" in ax.get_xlabel()
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert {"1/120", "1/60"} <= set(ticks)
    assert not any("0.0" in t for t in ticks)


def test_the_frontier_writes_solve_time_signed_as_the_tables(result):
    """The frontier's y is a solve Δ (negative = sooner), drawn sooner-up: its ticks are the
    table's signed minutes, never '+0.08 sooner'."""
    from replay_cli.report.roles import FRONTIER_Y

    fig = plots.report_figures(result)["frontier"]
    ax = fig.axes[0]
    assert ax.get_ylabel() == FRONTIER_Y
    assert "negative = sooner" in FRONTIER_Y
    ticks = [ax.yaxis.get_major_formatter()(y, 0) for y in (0.5, 1.0)]
    assert ticks == ["−0.5", "−1"]


def test_the_forecast_legend_names_shaping_off_once(synth_path):
    """Shaping off disabled and at λ 0 leave the rewards as they are: the forecast draws them as
    the one dashed 'shaping off' line, never as configs of their own under another name."""
    from replay_cli.report.plots_forecast import forecast_chart

    configs = [
        config({"enabled": False}),
        config({"lambda_time": 0.0}),
        config({"lambda_time": 1 / 60, "apply_to": "correct"}),
    ]
    report = api.replay(api.load([synth_path]), configs)
    fig = forecast_chart(
        report.result.forecast, report.result.summary, report.verdict.recommendation
    )
    names = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert names == ["shaping off", "λ=1/60 correct"]
    assert report.result.summary["label"][0] == "shaping off"
