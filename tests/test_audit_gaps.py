"""The gaps of the independent mutation audit (issue 54 item 5), each with the input that tells
the code from its mutant, in the quick loop (`-m "not slow"`): each test fails on the mutant
named in its docstring (checked by planting it by hand)."""

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli import api
from replay_cli import catalogue as C
from replay_cli.cli.app import app
from replay_cli.cli.terminal import fit_columns
from replay_cli.defaults import lambda_text
from replay_cli.report import layouts as L
from replay_cli.report.model import Report
from replay_cli.report.pages import render_tables_page

from factories import config, write_small_synth

runner = CliRunner()


@pytest.fixture(scope="module")
def two_configs(tmp_path_factory):
    """A written two-config report with every row (rollouts.parquet)."""
    root = tmp_path_factory.mktemp("gaps")
    path = write_small_synth(root / "rollouts.parquet", seed=5)
    out = root / "report"
    api.replay_to_report(
        [path], [config({"enabled": False}), config({})], out, rows="all", forecast=None
    )
    return out


def test_forecast_layout_names_the_half_and_twice_checks():
    """layouts.py: at_check's arguments swapped name no summary column, and the page's forecast
    table loses its (half) and (twice) columns without a word."""
    assert [c for c in L.FORECAST if c not in C.CATALOGUE] == []
    labels = [C.metric(c).label for c in L.FORECAST]
    assert labels[3].endswith("(low) (half)")
    assert labels[4].endswith("(low) (twice)")


def test_read_rows_gives_each_config_its_own_advantages(two_configs):
    """model.py _distributions: `== cid` -> `!=` gives each config every other config's rows."""
    report = Report.read(two_configs, rows=True)
    rows = pl.read_parquet(two_configs / "rollouts.parquet")
    trainable = rows.filter(pl.col("advantage").is_not_null() & ~pl.col("masked"))
    for cid, series in report.result.advantages.items():
        own = trainable.filter(pl.col("config_id") == cid)["advantage"]
        assert series.len() == own.len() > 0
        assert series.sort().to_list() == own.sort().to_list()
    assert sum(s.len() for s in report.result.advantages.values()) == trainable.height


def test_a_report_missing_only_its_recommendation_is_refused_cleanly(two_configs, tmp_path):
    """model.py Report.read: without recommendation.parquet the report stores no verdict this
    version reads: refused with exit code 2 and a message to rerun, never an AttributeError."""
    import shutil

    copy = tmp_path / "r"
    shutil.copytree(two_configs, copy)
    (copy / "recommendation.parquet").unlink()
    assert Report.read(two_configs).verdict.recommendation.height == 2
    result = runner.invoke(app, ["report", str(copy)], env={"COLUMNS": "160"})
    assert result.exit_code == 2
    assert "rerun the replay" in result.output
    assert "Traceback" not in result.output
    assert "AttributeError" not in result.output


def test_tables_page_is_titled_by_its_directory(tmp_path):
    """pages.py: page(title, what, ...) with its arguments swapped titles the compare, explain
    and verify pages by their tables ('attribution.parquet')."""
    out = tmp_path / "explained"
    out.mkdir()
    render_tables_page(out, {"attribution": pl.DataFrame({"a": [1]})})
    html = (out / "index.html").read_text()
    assert "<title>replay report: explained</title>" in html


def test_fit_columns_keeps_a_column_that_fits_exactly():
    """terminal.py fit_columns: `used + need > width` -> `>=` drops a column that exactly fits
    (4 borders + 6 label + 3 + 14 other + 17 header + 3 = 47)."""
    cells = {"m" * 17: ["1"]}
    assert fit_columns(["aaaaaa"], cells, 47, header=lambda n: n) == ["m" * 17]
    assert fit_columns(["aaaaaa"], cells, 46, header=lambda n: n) == []


def test_skipped_bad_lines_go_to_stderr_with_their_header(tmp_path):
    """cli/analysis.py: the "Skipped N bad lines" header goes where its lines go (stderr)."""
    row = {"_ng_task_index": 3, "_ng_rollout_index": 0, "reward": 1.0, "openhands_run_time": 1.0}
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(row) + "\n{bad\n")
    out = tmp_path / "o.parquet"
    result = runner.invoke(
        app, ["import", "nemo-gym", str(path), "--out", str(out), "--skip-bad-lines"]
    )
    assert result.exit_code == 0, result.output
    assert "Skipped 1 bad lines, first:" in result.stderr
    assert "Skipped" not in result.stdout
    assert "r.jsonl:2: not valid JSON" in result.stderr


@pytest.mark.parametrize(
    ("value", "text"), [(1.0, "1"), (-1.0, "-1"), (0.5, "1/2"), (1 / 60, "1/60"), (0.0, "0")]
)
def test_lambda_text_never_writes_one_over_one(value, text):
    """defaults.py lambda_text: `1 < k` -> `1 <= k` prints λ=1 as "1/1"."""
    assert lambda_text(value) == text


def test_call_bonus_refusal_without_a_look_alike_says_how_to_map(tmp_path):
    """rollouts/fit.py: without the fallback hint the refusal reads "Add the column (), …"."""
    path = tmp_path / "in.parquet"
    pl.DataFrame(
        {"group_id": [1, 1], "reward": [1.0, 0.0], "openhands_run_time": [60.0, 120.0]}
    ).write_parquet(path)
    args = ["--lambda-call-bonus", "0.1", "--call-bonus-ref", "20"]
    result = runner.invoke(app, ["replay", str(path), "--out", str(tmp_path / "r"), *args])
    assert result.exit_code == 2
    assert "Add the column (or rename one: --map SRC=calls), or set" in result.output
    assert "()" not in result.output


def test_a_one_config_reports_hparams_name_the_run_by_its_label():
    """report/tensorboard.py: a one-config report varies no parameter, so its HParams carry the
    label (without it the HParams view has nothing to tell the run by); a sweep's carry the
    parameters it varies, and every run its role."""
    from replay_cli.report.tensorboard import hparam_values

    one = pl.DataFrame({"config_id": ["a"], "label": ["λ=1/60 all"], "lambda_time": [1 / 60]})
    assert hparam_values(one, {"a": "recommended"}) == [
        {"label": "λ=1/60 all", "role": "recommended"}
    ]
    two = pl.DataFrame(
        {
            "config_id": ["a", "b"],
            "label": ["λ=1/60 all", "λ=1/30 all"],
            "lambda_time": [1 / 60, 1 / 30],
        }
    )
    values = hparam_values(two, {"a": "recommended", "b": "avoid"})
    assert [v["role"] for v in values] == ["recommended", "avoid"]
    assert [v["lambda_time"] for v in values] == ["1/60", "1/30"]
    assert all("label" not in v for v in values)
