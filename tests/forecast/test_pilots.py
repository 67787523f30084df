"""Shaped runs as evidence (replay_cli/forecast/pilots.py; issue 53 item 4): a pilot run's log,
trained under a shaped config in a tests/worlds world, is backtested under the config it
declares, beside the user's shaping-off log."""

from functools import cache
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import replay_cli as rc
from replay_cli import catalogue as C
from replay_cli import parameters as P
from replay_cli.advice.verdict import pilot_lines
from replay_cli.cli import terminal
from replay_cli.cli.app import app
from replay_cli.config import ForecastSettings, Pilot
from replay_cli.report.model import Report
from replay_cli.report.options import ReportOptions
from replay_cli.report.write import write

from worlds import world as W

WORLD = W.WORLDS["effort_pays"]
SETTINGS = ForecastSettings(steps=10, seeds=2, problems=150, check_budgets=False)
SHAPED = W.Shaping(lambda_time=1 / 30, apply_to="correct")
HARSH = W.Shaping(lambda_time=1 / 15, apply_to="all")


@cache
def _logs(tmp: str) -> dict[str, tuple[str, W.Shaping]]:
    """Pilot logs (path, the config each declares): right, wrong, unnamed, short."""
    out = Path(tmp)
    logs = {
        # trained and declared at λ=1/30 correct, 12 steps
        "right": (W.generate_log(WORLD, 12, 48, 101, cfg=SHAPED), SHAPED),
        # trained at λ=1/15 all, declared shaping off, 24 steps
        "wrong": (W.generate_log(WORLD, 24, 48, 101, cfg=HARSH), W.OFF),
        "unnamed": (W.generate_log(WORLD, 12, 48, 101, cfg=SHAPED).drop("instance_id"), SHAPED),
        "short": (W.generate_log(WORLD, 4, 48, 101, cfg=SHAPED), SHAPED),
    }
    paths = {}
    for name, (frame, declared) in logs.items():
        frame.write_parquet(out / f"{name}.parquet")
        paths[name] = (str(out / f"{name}.parquet"), declared)
    return paths


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, W.Shaping]]:
    return _logs(str(tmp_path_factory.mktemp("pilots")))


@pytest.fixture(scope="module")
def report(logs: dict[str, tuple[str, W.Shaping]]) -> Report:
    pilots = tuple(Pilot(path=p, config=cfg.tool_config()) for p, cfg in logs.values())
    main = W.world_log(WORLD, "run12", 100)
    options = ReportOptions(forecast=SETTINGS, pilots=pilots)
    return rc.replay(rc.rollouts_from_frame(main), [W.OFF.tool_config()], options)


def _row(report: Report, name: str) -> dict:
    pilots = report.result.pilots
    assert pilots is not None
    return pilots.filter(pl.col(C.FORECAST_PILOT) == f"{name}.parquet").to_dicts()[0]


def test_a_pilot_under_its_own_config_reproduces_its_later_steps(report, capsys):
    row = _row(report, "right")
    label = SHAPED.tool_config().label
    assert row[C.FORECAST_PILOT_CONFIG] == label == "λ=1/30 correct clip[-3,3]"
    assert row[C.FORECAST_BACKTEST_PASS] == 1.0
    assert row[C.FORECAST_START_STEPS] == 4.0
    logged = row[C.logged_value(C.FORECAST_BACKTEST_RESOLVE)]
    low = row[C.bound(C.FORECAST_BACKTEST_RESOLVE, "low")]
    high = row[C.bound(C.FORECAST_BACKTEST_RESOLVE, "high")]
    assert low <= logged <= high
    assert row[C.FORECAST_BACKTEST].startswith(
        f"the forecast of {label} reproduces steps 9–12 of that run: resolve "
    )
    terminal.print_forecast(report)
    printed = capsys.readouterr().out
    assert f"  Pilot right.parquet ({label}): the forecast of {label} reproduces" in printed
    # beside the baseline's backtest, after it
    assert printed.index("Backtest: the forecast of shaping off") < printed.index("Pilot right")


def test_a_pilot_declared_under_the_wrong_config_fails_and_the_confidence_says_so(report):
    """Trained at λ=1/15 all, declared shaping off: its run resolves far less than the forecast
    of shaping off says."""
    row = _row(report, "wrong")
    assert row[C.FORECAST_PILOT_CONFIG] == "shaping off"
    assert row[C.FORECAST_BACKTEST_PASS] == 0.0
    logged = row[C.logged_value(C.FORECAST_BACKTEST_RESOLVE)]
    assert logged < row[C.bound(C.FORECAST_BACKTEST_RESOLVE, "low")]
    assert "does not reproduce steps 17–24 of that run" in row[C.FORECAST_BACKTEST]
    assert report.confidence.endswith(
        "The forecast does not reproduce the pilot run wrong.parquet (shaping off) under its "
        "own config: what it says shaping does to success is not confirmed by a shaped run."
    )


def test_a_pilot_that_cannot_be_checked_says_why(report):
    assert _row(report, "unnamed")[C.FORECAST_BACKTEST] == (
        "cannot be checked: the log names no problem (no instance_id)"
    )
    assert _row(report, "short")[C.FORECAST_BACKTEST] == (
        "cannot be checked: the log spans 4 distinct steps and the backtest needs 6"
    )
    assert _row(report, "short")[C.FORECAST_BACKTEST_PASS] is None
    lines = pilot_lines(report.result.pilots)
    assert lines[2] == (
        "Pilot unnamed.parquet (λ=1/30 correct clip[-3,3]): cannot be checked: the log names "
        "no problem (no instance_id)"
    )


def test_pilots_change_no_number_of_the_users_forecast(report):
    main = W.world_log(WORLD, "run12", 100)
    options = ReportOptions(forecast=SETTINGS)
    alone = rc.replay(rc.rollouts_from_frame(main), [W.OFF.tool_config()], options)
    assert alone.result.pilots is None
    assert alone.result.summary.equals(report.result.summary)


def test_the_pilots_table_is_written_and_read_back(report, tmp_path):
    write(report, tmp_path)
    assert (tmp_path / "pilots.parquet").exists()
    assert report.manifest["tables"]["pilots"] == "pilots.parquet"
    back = Report.read(tmp_path)
    assert back.result.pilots is not None
    assert back.result.pilots.equals(report.result.pilots)
    assert back.confidence == report.confidence


def test_a_pilot_reads_its_config_from_overrides_and_a_run_yaml(tmp_path):
    run = tmp_path / "run.yaml"
    run.write_text("grpo:\n  time_efficiency:\n    lambda_time: 0.0333\n    apply_to: correct\n")
    path, flat = P.read_pilot(f"p.parquet::{run} ++grpo.advantage_clip_low=-3")
    assert path == "p.parquet"
    assert flat["lambda_time"] == 0.0333
    assert flat["apply_to"] == "correct"
    assert flat["clip_low"] == -3


@pytest.mark.parametrize(
    ("pilot", "said"),
    [
        (
            "missing.parquet::++grpo.time_efficiency.lambda_time=1/30",
            "missing.parquet does not exist",
        ),
        ("LOG::++grpo.time_efficiency.lamda_time=1/30", "Unknown override key"),
        ("LOG", "name the log and the config the run was trained with"),
    ],
)
def test_a_bad_pilot_is_a_usage_error_naming_it(logs, tmp_path, pilot, said):
    pilot = pilot.replace("LOG", logs["right"][0]).replace("missing", str(tmp_path / "missing"))
    main = tmp_path / "main.parquet"
    W.world_log(WORLD, "run12", 100).filter(pl.col("step") < 2).write_parquet(main)
    args = ["replay", str(main), "--out", str(tmp_path / "r"), "--no-charts", "--pilot", pilot]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "--pilot" in result.output
    assert said in result.output


def test_a_pilot_without_the_forecast_is_a_usage_error(logs, tmp_path):
    """--no-forecast would leave the pilot unchecked: said, not ignored."""
    main = tmp_path / "main.parquet"
    W.world_log(WORLD, "run12", 100).filter(pl.col("step") < 2).write_parquet(main)
    pilot = f"{logs['right'][0]}::++grpo.time_efficiency.lambda_time=1/30"
    args = ["replay", str(main), "--out", str(tmp_path / "r"), "--no-forecast", "--pilot", pilot]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "a pilot is checked by the forecast; drop --no-forecast" in result.output
    assert not (tmp_path / "r").exists()
