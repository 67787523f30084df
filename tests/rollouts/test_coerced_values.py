"""Values the trainer coerces (issue 54 item 1): a run time that does not parse is read as 0
minutes, as the trainer's float() fallback does, and said out loud: counted and named on every
surface (inspect, the findings of the terminal, page and findings.parquet), refused by --strict."""

import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli import api
from replay_cli.advice.findings import INPUT_COERCED
from replay_cli.cli.app import app
from replay_cli.errors import SchemaError
from replay_cli.report.model import Report
from replay_cli.rollouts.validation import load_rollouts, rollouts_from_frame

MEDIUM = Path(__file__).resolve().parents[2] / "data_samples" / "rollouts_medium.parquet"
runner = CliRunner()


@pytest.fixture(scope="module")
def twelve_m(tmp_path_factory) -> Path:
    """The medium sample with run times as strings and "12m" in each group's first rollout (the
    issue's reproduction): 672 of 4704 values do not parse."""
    df = pl.read_parquet(MEDIUM)
    rt = pl.col("openhands_run_time")
    df = df.with_columns(
        pl.when(pl.col("rollout_index") == 0)
        .then(pl.lit("12m"))
        .otherwise(rt.cast(pl.String))
        .alias("openhands_run_time")
    )
    path = tmp_path_factory.mktemp("coerced") / "strings.parquet"
    df.write_parquet(path)
    return path


def test_unparsed_run_times_are_counted_with_rows_and_values(twelve_m):
    rollouts = load_rollouts([twelve_m])
    [c] = rollouts.coerced
    assert (c.column, c.count, c.rows, c.examples) == ("openhands_run_time", 672, 4704, ("12m",))
    assert c.where[:2] == (f"{twelve_m} row 0", f"{twelve_m} row 8")
    assert c.refused_by_strict
    first = rollouts.frame.filter(pl.col("rollout_index") == 0).collect()
    assert first["openhands_run_time"].null_count() == first.height  # 0 minutes, as the trainer


def test_blanks_around_a_number_parse_as_float_does(tmp_path):
    path = tmp_path / "in.parquet"
    pl.DataFrame(
        {
            "group_id": [1, 1, 1],
            "reward": [1.0, None, 0.0],
            "openhands_run_time": [" 120 ", "2h", None],
        }
    ).write_parquet(path)
    rollouts = load_rollouts([path])
    assert rollouts.frame.collect()["openhands_run_time"].to_list() == [120.0, None, None]
    by = {c.column: c for c in rollouts.coerced}
    assert (by["openhands_run_time"].count, by["openhands_run_time"].examples) == (1, ("2h",))
    assert (by["reward"].count, by["reward"].refused_by_strict) == (1, False)  # null → 0
    assert by["reward"].where == (f"{path} row 1",)


def test_strict_refuses_values_that_do_not_parse_naming_file_column_rows_and_values(twelve_m):
    with pytest.raises(SchemaError) as err:
        load_rollouts([twelve_m], strict=True)
    text = str(err.value)
    assert "column 'openhands_run_time' does not parse as a number in 672 row(s)" in text
    assert "values '12m'" in text
    assert f"{twelve_m} row 0; {twelve_m} row 8" in text
    result = runner.invoke(app, ["inspect", str(twelve_m), "--strict"])
    assert result.exit_code == 2
    assert "672 row(s)" in result.output


def test_inspect_does_not_call_it_valid(twelve_m):
    result = runner.invoke(app, ["inspect", str(twelve_m)], env={"COLUMNS": "300"})
    assert result.exit_code == 0
    assert "OK: the input is valid" not in result.output
    assert "NOT VALID FOR SHAPING" in result.output
    assert "672 of 4704 values of 'openhands_run_time' (14.3%)" in result.output
    assert re.search(r"run time unparsed +│ 672 ", result.output)
    assert re.search(r"run time missing +│ 16 ", result.output)  # the input's own nulls only


def test_a_clean_input_is_still_valid(synth_path):
    result = runner.invoke(app, ["inspect", str(synth_path)])
    assert "OK: the input is valid." in result.output
    assert "hazard" not in result.output


def test_every_surface_names_them_and_rejudging_keeps_them(twelve_m, tmp_path):
    out = tmp_path / "r"
    result = runner.invoke(
        app, ["replay", str(twelve_m), "--out", str(out), "--no-charts"], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    assert "[hazard] Input: 672 of 4704 values of 'openhands_run_time'" in result.output
    found = pl.read_parquet(out / "findings.parquet").row(0, named=True)
    assert (found["kind"], found["severity"], found["config_id"]) == (INPUT_COERCED, "hazard", None)
    assert found["value"] == pytest.approx(672 / 4704)
    assert "'12m'" in found["text"]
    assert "0 minutes" in found["text"]
    assert "672 of 4704 values of" in (out / "index.html").read_text()
    rows = pl.read_parquet(out / "rollouts.parquet").filter(pl.col("rollout_index") == 0)
    assert rows["minutes"].max() == 0.0
    assert rows["deduction"].max() == 0.0
    again = Report.read(out).judged_again()
    assert again.verdict.findings.row(0, named=True)["kind"] == INPUT_COERCED


def test_in_memory_replay_says_so(tmp_path):
    frame = pl.DataFrame(
        {"group_id": [1, 1], "reward": [1.0, 0.0], "openhands_run_time": ["60", "1m"]}
    )
    result = api.replay(rollouts_from_frame(frame))
    kinds = result.verdict.findings.filter(pl.col("kind") == INPUT_COERCED)
    assert kinds["text"].to_list()[0].startswith("Input: 1 of 2 values of 'openhands_run_time'")


def test_import_table_counts_values_that_will_not_parse(twelve_m, tmp_path):
    csv = tmp_path / "t.csv"
    pl.read_parquet(twelve_m).write_csv(csv)
    out = tmp_path / "t.parquet"
    result = runner.invoke(app, ["import", "table", str(csv), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Note: 672 of 4704 values of 'openhands_run_time' (14.3%) do not parse" in result.output
    assert "--durations reads" in result.output


def test_import_table_durations_reads_them_into_seconds(tmp_path):
    csv = tmp_path / "t.csv"
    written = ["12m", "1h02m", "00:12:00", "720s", "12:00", " 90 ", "soon", ""]
    pl.DataFrame(
        {"group_id": [1] * 8, "reward": [1.0] * 8, "openhands_run_time": written}
    ).write_csv(csv)
    out = tmp_path / "t.parquet"
    result = runner.invoke(app, ["import", "table", str(csv), "--out", str(out), "--durations"])
    assert result.exit_code == 0, result.output
    seconds = pl.read_parquet(out)["openhands_run_time"].to_list()
    assert seconds == [720.0, 3720.0, 720.0, 720.0, 720.0, 90.0, None, None]
    assert "2 of 8 values of 'openhands_run_time' (25.0%) are not durations" in result.output
    assert "'soon'" in result.output
    assert "--durations reads" not in result.output  # it was asked for


def test_durations_is_in_the_help_and_the_guide():
    help_text = runner.invoke(app, ["import", "--help"], env={"COLUMNS": "200"}).output
    assert "--durations" in help_text
    assert "'1h02m'" in help_text
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    assert "import table ... --durations" in guide
