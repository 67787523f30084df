"""Tests for replay_cli.analysis.attribution: one internal item at a time."""

import pytest
from typer.testing import CliRunner

from replay_cli import catalogue as C
from replay_cli.analysis.attribution import attribute
from replay_cli.cli.app import app
from replay_cli.rollouts.validation import rollouts_from_frame

from factories import config, rollouts


def test_item_effects_add_up():
    frame = rollouts(
        reward=[1.0, 0.0, 0.0, 0.0, 1.0],
        mask_sample=[False, False, False, True, False],
        split=["train"] * 4 + ["validation"],
        openhands_run_time=[600.0, 1200.0, 600.0, 1800.0, 600.0],
    )
    table = attribute(rollouts_from_frame(frame), config({"lambda_time": 1 / 60}))
    by_step = {row["step"]: row for row in table.iter_rows(named=True)}
    # Item 1 charges the masked timeout: 30 minutes = 0.5 off one of four training rows.
    assert by_step["item 1"]["delta total_reward/mean"] == pytest.approx(-0.5 / 4)
    # Item 4 charges the validation row: 10 minutes.
    assert by_step["item 4"]["delta validation/total_reward/mean"] == pytest.approx(-10 / 60)
    for item in (2, 3, 5, 8):
        assert by_step[f"item {item}"]["delta total_reward/mean"] == 0.0
    assert by_step["internal"]["delta total_reward/mean"] == pytest.approx(-0.5 / 4)
    assert by_step["interaction"]["delta total_reward/mean"] == pytest.approx(0.0)


def test_explain_command(synth_path, tmp_path):
    out = tmp_path / "attr"
    # A wide terminal: at 80 columns (xdist's workers set COLUMNS=80) the row's text wraps.
    result = CliRunner().invoke(
        app, ["explain", str(synth_path), "--out", str(out)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "masked rows are charged" in result.output
    # The catalogue's labels and units, as on every other surface: a share in %, no raw names.
    header = next(line for line in result.output.splitlines() if " step " in line)
    assert C.metric(C.SIGNAL).brief in header
    assert C.SIGNAL not in result.output
    reference = next(line for line in result.output.splitlines() if "(values)" in line)
    assert "100.0%" in reference  # every group has signal (a fraction would read 1.0000)
    assert (out / "attribution.parquet").exists()
