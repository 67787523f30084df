"""Tests for replay_cli.report.compare and the compare / plot commands."""

import re

import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli import api
from replay_cli.cli.app import app
from replay_cli.errors import InputFileError
from replay_cli.report.compare import (
    canonical_metric,
    join_internal,
    metric_deltas,
    read_internal_csv,
)

from factories import config

runner = CliRunner()


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("train/time_efficiency/minutes_mean", "time_efficiency/minutes/mean"),
        ("time_efficiency/deduction_max", "time_efficiency/deduction/max"),
        ("train/time_efficiency/deduction/mean", "time_efficiency/deduction/mean"),
        ("train:total_reward/mean", "total_reward/mean"),
        ("val:accuracy", "validation/accuracy"),
        ("time_efficiency/group_has_signal", "time_efficiency/group_has_signal"),
    ],
)
def test_canonical_names(name, canonical):
    assert canonical_metric(name) == canonical


def test_wandb_panel_export(tmp_path):
    path = tmp_path / "panel.csv"
    path.write_text(
        "Step,run-a - train/time_efficiency/minutes_mean,run-a - train/time_efficiency/minutes_mean__MIN,"
        "run-a - train/time_efficiency/minutes_mean__MAX\n1,12.5,12,13\n2,,,\n3,14,13,15\n"
    )
    frame = read_internal_csv(path)
    assert frame.select("run", "step", "metric", "value").rows() == [
        ("run-a", 1, "time_efficiency/minutes/mean", 12.5),
        ("run-a", 3, "time_efficiency/minutes/mean", 14.0),
    ]


def test_long_csv(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text(
        "step,metric,value\n1,train/total_reward/mean,0.5\n2,train/total_reward/mean,0.25\n"
    )
    assert read_internal_csv(path)["value"].to_list() == [0.5, 0.25]


@pytest.mark.parametrize(
    "text", ["a,b\n1,2\n", "Step,nothing\n1,2\n", "step,metric,value\nx,m,1\n"]
)
def test_bad_internal_csv(tmp_path, text):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputFileError):
        read_internal_csv(path)


def test_join_and_deltas(synth_path, tmp_path):
    rollouts = api.load([synth_path])
    base, other = config({"enabled": False}), config({"apply_to": "correct"})
    result = api.replay(rollouts, [base, other])
    deltas = metric_deltas(result.result.summary.with_columns(pl.lit("r").alias("report")))
    mine = deltas.filter(
        (pl.col("config_id") == other.config_id) & (pl.col("metric") == "total_reward/mean")
    )
    expected = (
        result.result.summary.filter(pl.col("config_id") == other.config_id)["total_reward/mean"][0]
        - result.result.summary.filter(pl.col("config_id") == base.config_id)["total_reward/mean"][
            0
        ]
    )
    assert mine["delta"][0] == pytest.approx(expected)
    steps = result.result.steps.filter(pl.col("config_id") == other.config_id).sort("step")
    internal = pl.DataFrame(
        {
            "run": ["x", "x"],
            "step": [1, 2],
            "metric": ["total_reward/mean"] * 2,
            "value": [0.0, 0.0],
        }
    )
    joined = join_internal(result.result.steps, internal, other.config_id)
    assert joined["replayed"].to_list() == pytest.approx(steps["total_reward/mean"][:2].to_list())
    assert joined["delta"].to_list() == joined["replayed"].to_list()


def test_compare_command(synth_path, tmp_path):
    report = tmp_path / "rep"
    api.replay_to_report([synth_path], [config({"semantics": "internal"})], report)
    csv = tmp_path / "internal.csv"
    csv.write_text(
        "Step,run - train/time_efficiency/minutes_mean,run - train/total_reward/mean\n1,10,0.2\n2,11,0.3\n"
    )
    out = tmp_path / "cmp"
    result = runner.invoke(app, ["compare", str(report), "--out", str(out), "--internal", str(csv)])
    assert result.exit_code == 0, result.output
    joined = pl.read_parquet(out / "internal_comparison.parquet")
    assert set(joined["metric"]) == {"time_efficiency/minutes/mean", "total_reward/mean"}
    assert (out / "charts" / "replayed_vs_internal.png").exists()
    assert (out / "comparison.parquet").exists()


def test_compare_unknown_reference(synth_path, tmp_path):
    report = tmp_path / "rep"
    api.replay_to_report([synth_path], [config()], report)
    result = runner.invoke(
        app, ["compare", str(report), "--out", str(tmp_path / "c"), "--reference", "zzz"]
    )
    assert result.exit_code == 2
    assert "No config matches --reference 'zzz'" in result.output


def test_plot_command_rerenders(synth_path, tmp_path):
    """`plot` redraws the charts from the report's tables: the same PNG bytes as the replay drew
    for every chart read from those tables, and the page still embeds each of them."""
    report = tmp_path / "rep"
    cfgs = [config(), config({"lambda_time": 1 / 30})]
    api.replay_to_report([synth_path], cfgs, report, charts=True)
    charts = report / "charts"
    drawn = {p.name: p.read_bytes() for p in charts.glob("*.png")}
    for p in charts.glob("*.png"):
        p.unlink()
    result = runner.invoke(app, ["plot", str(report)])
    assert result.exit_code == 0, result.output
    again = {p.name: p.read_bytes() for p in charts.glob("*.png")}
    from_tables = ["signal_vs_lambda.png", "inversion_vs_lambda.png", "advantage_distribution.png"]
    for name in from_tables:
        assert again[name] == drawn[name], name
    assert set(again) <= set(drawn)
    page = (report / "index.html").read_text()
    # Every chart but the frontier, which the page draws once, as its SVG.
    assert page.count("data:image/png;base64,") == len(again) - ("frontier.png" in again)
    assert 'id="frontier-svg"' in page


def test_plot_rejects_a_non_report(tmp_path):
    result = runner.invoke(app, ["plot", str(tmp_path)])
    assert result.exit_code == 2
    assert "is not a replay report" in result.output


def test_compare_prints_the_sweeps_units_and_fits_the_terminal(synth_path, tmp_path, monkeypatch):
    """Changes of shares in percentage points and of times in minutes (not raw fractions), one
    header per metric (no 'Δ solve Δ'), and at 100 columns whole cells, never '+0.…'."""
    report = tmp_path / "rep"
    configs = [config({"enabled": False}), config({"lambda_time": 1 / 30})]
    api.replay_to_report([synth_path], configs, report)
    for columns in ("100", "200"):
        monkeypatch.setenv("COLUMNS", columns)
        out = tmp_path / f"cmp{columns}"
        result = runner.invoke(app, ["compare", str(report), "--out", str(out)])
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        table = [line for line in lines if line[:1] in "┏┃┡│└"]
        assert table
        assert all(len(line) <= int(columns) for line in table)
        assert "pts" in result.output  # the resolve rate's change, in points
        assert "Δ solve Δ" not in result.output
        assert not any(re.search(r"[+−-]\d*\.?…", line) for line in lines), result.output
        assert "resolve at T" in result.output  # the rate itself, not its ratio to off's
        assert re.search(r"[+−]\d+(\.\d+)? min", result.output)  # solve Δ@T's change
        assert "0.0" not in re.sub(r"[+−]\d+(\.\d+)? (pts|min)|\d\.\d+e", "", result.output)


def test_compare_without_a_config_lists_them(synth_path, tmp_path):
    """`--internal` with several configs and none given: the error lists every config id and
    label to pass to --config-id."""
    report = tmp_path / "rep"
    configs = [config(), config({"lambda_time": 1 / 30})]
    api.replay_to_report([synth_path], configs, report)
    csv = tmp_path / "internal.csv"
    csv.write_text("step,metric,value\n1,train/total_reward/mean,0.5\n")
    result = runner.invoke(
        app, ["compare", str(report), "--out", str(tmp_path / "c"), "--internal", str(csv)]
    )
    assert result.exit_code == 2
    assert "Pick one with --config-id" in result.output
    summary = pl.read_parquet(report / "summary.parquet")
    for cid, label in summary.select("config_id", "label").rows():
        assert f"{cid}  {label}" in result.output


def test_compare_says_the_resolve_rates_own_move_in_points(synth_path, tmp_path, monkeypatch):
    """The resolve column is the resolve rate after T steps and its change is that rate's move
    in points (not the ratio to shaping off's minus one); the page shows the same cells in the
    catalogue's labels and units, no raw metric names or fractions."""
    from replay_cli import catalogue as C

    report = tmp_path / "rep"
    configs = [config({"enabled": False}), config({"lambda_time": 1 / 30})]
    api.replay_to_report([synth_path], configs, report)
    summary = pl.read_parquet(report / "summary.parquet")
    rates = dict(zip(summary["config_id"], summary[C.F_RESOLVE], strict=True))
    moved = rates[configs[1].config_id] - rates[configs[0].config_id]
    ratio = summary.filter(pl.col("config_id") == configs[1].config_id)[C.F_RESOLVE_VS_OFF][0]
    assert abs(moved) > 1e-6
    assert abs(moved - (ratio - 1)) > 1e-6
    expected = C.show_change("share", moved)
    monkeypatch.setenv("COLUMNS", "200")
    out = tmp_path / "cmp"
    result = runner.invoke(app, ["compare", str(report), "--out", str(out)])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "λ=1/30" in line)
    assert expected in row, (expected, row)
    assert C.show_change("ratio", ratio - 1) not in row
    assert C.metric(C.F_RESOLVE).brief in result.output
    page = (out / "index.html").read_text()
    assert f">{expected}</td>" in page
    assert ">resolve at T</th>" in page
    assert "forecast/" not in page.split("<details>")[0]
    assert "<td>forecast/" not in page
    assert ">0.0" not in page
