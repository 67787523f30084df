"""Tests for replay_cli.cli.app through typer's CliRunner: exit codes, messages and the written reports."""

import json
import re
import subprocess
import sys

import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli.cli.app import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_replay_writes_every_table(synth_path, tmp_path):
    out = tmp_path / "report"
    result = run(
        "replay", synth_path, "--out", out, "--lambda-time", "1/30", "--apply-to", "correct"
    )
    assert result.exit_code == 0, result.output
    assert "λ=1/30 correct" in result.output
    assert {p.name for p in out.iterdir()} == {
        "resamples.parquet",
        "forecast.parquet",
        "rollouts.parquet",
        "groups.parquet",
        "steps.parquet",
        "summary.parquet",
        "findings.parquet",
        "recommendation.parquet",
        "manifest.json",
        "index.html",
    }
    rows = pl.read_parquet(out / "rollouts.parquet")
    for col in (
        "config_id",
        "reward_raw",
        "reward_shaped",
        "minutes",
        "bonus",
        "deduction",
        "charged",
        "floored",
        "masked",
        "baseline",
        "std",
        "advantage_unclipped",
        "advantage",
        "advantage_raw",
        "agent_timed_out",
        "agent_error_kind",
    ):
        assert col in rows.columns, col
    summary = pl.read_parquet(out / "summary.parquet").row(0, named=True)
    assert summary["lambda_time"] == pytest.approx(1 / 30)
    assert summary["apply_to"] == "correct"
    charged = rows.filter(pl.col("charged"))
    assert charged["resolved"].all()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["inputs"][0]["sha256"]
    assert manifest["configs"][0]["shaping"]["apply_to"] == "correct"


def test_hydra_overrides_equal_flags(synth_path, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert (
        run(
            "replay",
            synth_path,
            "--out",
            a,
            "--apply-to",
            "correct",
            "--clip-low",
            "-3",
            "--no-normalize",
        ).exit_code
        == 0
    )
    result = run(
        "replay",
        synth_path,
        "--out",
        b,
        "++grpo.time_efficiency.apply_to=correct",
        "++grpo.advantage_clip_low=-3",
        "++grpo.adv_estimator.normalize_rewards=false",
    )
    assert result.exit_code == 0, result.output
    ra, rb = pl.read_parquet(a / "rollouts.parquet"), pl.read_parquet(b / "rollouts.parquet")
    assert ra["advantage"].to_list() == rb["advantage"].to_list()
    assert ra["config_id"][0] == rb["config_id"][0]


def test_flags_win_over_overrides(synth_path, tmp_path):
    out = tmp_path / "r"
    result = run(
        "replay",
        synth_path,
        "--out",
        out,
        "++grpo.time_efficiency.apply_to=correct",
        "--apply-to",
        "all",
    )
    assert result.exit_code == 0, result.output
    assert pl.read_parquet(out / "summary.parquet")["apply_to"][0] == "all"


def test_mask_flag_override(synth_path, tmp_path):
    out = tmp_path / "r"
    assert (
        run("replay", synth_path, "--out", out, "++env.should_mask_flagged_samples=false").exit_code
        == 0
    )
    assert not pl.read_parquet(out / "summary.parquet")["mask_flagged"][0]


def test_unknown_override_suggests_the_key(synth_path, tmp_path):
    result = run(
        "replay", synth_path, "--out", tmp_path / "r", "++grpo.time_efficency.lambda_time=0.1"
    )
    assert result.exit_code == 2
    assert "Did you mean grpo.time_efficiency.lambda_time?" in result.output
    assert not (tmp_path / "r").exists()


def test_ignore_unknown_overrides(synth_path, tmp_path):
    result = run(
        "replay",
        synth_path,
        "--out",
        tmp_path / "r",
        "++policy.model_name=x",
        "++grpo.time_efficiency.floor=0.1",
        "--ignore-unknown-overrides",
    )
    assert result.exit_code == 0, result.output
    assert "Ignored trainer overrides: policy.model_name" in result.output
    assert pl.read_parquet(tmp_path / "r" / "summary.parquet")["floor"][0] == 0.1  # known: applied
    refused = run("replay", synth_path, "--out", tmp_path / "r2", "++policy.model_name=x")
    assert refused.exit_code == 2
    assert not (tmp_path / "r2").exists()


def test_existing_output_is_refused_without_force(synth_path, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    result = run("replay", synth_path, "--out", out)
    assert result.exit_code == 2
    assert "already exists" in result.output
    assert run("replay", synth_path, "--out", out, "--force").exit_code == 0
    assert (out / "summary.parquet").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--floor", "abc"], "--floor expects a number"),
        (["--lambda-call-bonus", "0.1"], "call_bonus_ref must be > 0"),
        (["--clip-low", "3", "--clip-high", "-3"], "clip_low (3.0) is above clip_high (-3.0)"),
        (["--lambda-call-bonus", "-1", "--call-bonus-ref", "5"], "greater than or equal to 0"),
        (["--internal-items", "1+7"], "internal_items [7] unknown"),
        (["--lambda-time", "0,1/60"], "use `replay-cli sweep`"),
        (["--apply-to", "all,correct"], "use `replay-cli sweep` for 'all,correct'"),
    ],
)
def test_invalid_parameters_exit_2(synth_path, tmp_path, args, message):
    result = run("replay", synth_path, "--out", tmp_path / "r", *args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", ["replay", "sweep"])
def test_bad_choice_is_a_usage_error(synth_path, tmp_path, monkeypatch, command):
    """One error style for every choice, in replay and sweep alike, with a did-you-mean."""
    monkeypatch.setenv("COLUMNS", "200")
    result = run(command, synth_path, "--out", tmp_path / "r", "--apply-to", "corect")
    assert result.exit_code == 2
    assert "--apply-to expects one of all, correct, got 'corect'" in result.output
    assert "Did you mean correct?" in result.output
    assert not (tmp_path / "r").exists()


def test_missing_input_exit_2(tmp_path):
    result = run("replay", tmp_path / "nope.parquet", "--out", tmp_path / "r")
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_floor_none_and_fractions(synth_path, tmp_path):
    out = tmp_path / "r"
    assert (
        run(
            "replay", synth_path, "--out", out, "--floor", "none", "--lambda-time", "1/120"
        ).exit_code
        == 0
    )
    summary = pl.read_parquet(out / "summary.parquet").row(0, named=True)
    assert summary["floor"] is None
    assert summary["lambda_time"] == pytest.approx(1 / 120)


def test_inspect(synth_path):
    result = run("inspect", synth_path)
    assert result.exit_code == 0, result.output
    assert "OK: the input is valid." in result.output
    assert "18×4" in result.output
    # Shares in % and run times in minutes, as on every other surface.
    frame = pl.read_parquet(synth_path).filter(pl.col("split") == "train")
    resolved = frame["resolved"].mean()
    assert re.search(rf"│ resolved +│ {resolved:.1%} ", result.output), result.output
    times = pl.read_parquet(synth_path)["openhands_run_time"].drop_nulls()
    p50 = times.quantile(0.5) / 60
    assert re.search(rf"│ run time p50 +│ {p50:.4g} min ", result.output), result.output
    assert re.search(r"│ run time mean +│ \d+(\.\d+)? min ", result.output)
    assert "share" not in result.output
    assert "(s)" not in result.output


def test_synth_writes_parquet(tmp_path):
    out = tmp_path / "s.parquet"
    result = run("synth", out, "--steps", "2", "--groups", "3", "--group-size", "4")
    assert result.exit_code == 0
    assert pl.read_parquet(out).height == 24
    assert run("synth", out).exit_code == 2


@pytest.mark.slow
def test_demo_writes_report_and_charts(demo_run):
    cwd, result = demo_run
    assert result.exit_code == 0, result.output
    out = cwd / "replay-demo"
    charts = sorted(p.name for p in (out / "charts").iterdir())
    assert len(charts) >= 3
    assert pl.read_parquet(out / "summary.parquet").height == len(
        set(pl.read_parquet(out / "summary.parquet")["config_id"])
    )
    assert "replay-demo/index.html" in result.output
    tables = result.output.split("Tables: ")[1]
    assert {f"{p.name}" for p in out.glob("*.parquet")} >= {"forecast.parquet", "resamples.parquet"}
    listed = tables.split("(")[1].split(";")[0].split(", ")
    assert sorted(listed) == sorted(p.stem for p in out.glob("*.parquet"))
    # It ran over an earlier report (the fixture's), which it replaced whole.
    assert not (out / "earlier.txt").exists()
    # Its log is the first stretch of a run (api.DEMO_LOG): 192 problems named, the forecast
    # starting from the first 4 of its 12 steps, the fit never short of named problems.
    train = pl.read_parquet(out / "rollouts.parquet", columns=["instance_id", "split"]).filter(
        pl.col("split") == "train"
    )
    assert train["instance_id"].null_count() == 0
    assert train["instance_id"].n_unique() == 192
    summary = pl.read_parquet(out / "summary.parquet")
    assert summary["forecast/start_steps"].unique().to_list() == [4.0]
    assert summary["forecast/fit_steps"].unique().to_list() == [12.0]
    assert "no instance_id" not in summary["forecast/fit"][0]
    # ... so the forecast checks itself on the log's last third, and the terminal says so.
    assert summary["forecast/backtest_pass"].unique().to_list() == [1.0]
    assert (
        "Backtest: the forecast of shaping off reproduces steps 9–12 of your run" in result.output
    )


def test_demo_refuses_a_foreign_directory(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    result = run("demo", "--out", tmp_path / "mine")
    assert result.exit_code == 2
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_group_size_for_inputs_without_groups(tmp_path):
    path = tmp_path / "flat.parquet"
    pl.DataFrame(
        {"reward": [1.0, 0.0, 0.0, 0.0, 1.0, 1.0], "openhands_run_time": [60.0] * 6}
    ).write_parquet(path)
    result = run("replay", path, "--out", tmp_path / "r", "--group-size", "3", "--lambda-time", "0")
    assert result.exit_code == 0, result.output
    rows = pl.read_parquet(tmp_path / "r" / "rollouts.parquet")
    assert rows["group_id"].to_list() == [0, 0, 0, 1, 1, 1]
    assert rows["advantage"][0] == pytest.approx(1.0)


def test_map_renames_a_column(tmp_path):
    path = tmp_path / "m.parquet"
    pl.DataFrame({"task": [7, 7], "reward": [1.0, 0.0], "secs": [60.0, 120.0]}).write_parquet(path)
    result = run(
        "replay",
        path,
        "--out",
        tmp_path / "r",
        "--map",
        "task=group_id",
        "--map",
        "secs=openhands_run_time",
    )
    assert result.exit_code == 0, result.output
    assert pl.read_parquet(tmp_path / "r" / "rollouts.parquet")["minutes"].to_list() == [1.0, 2.0]


def test_help_does_not_load_the_library():
    # `replay-cli --help` must start fast: polars, numpy, pyarrow, matplotlib and the pydantic
    # models load on first use (the options come from param_snapshot.py).
    code = (
        "import sys\n"
        "from replay_cli.cli.app import app\n"
        "from typer.testing import CliRunner\n"
        "assert CliRunner().invoke(app, ['--help']).exit_code == 0\n"
        "heavy = ('polars', 'numpy', 'pyarrow', 'matplotlib', 'pydantic.main', 'replay_cli.config')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_package_names_resolve_lazily():
    import replay_cli
    from replay_cli import findings, run_replay

    assert callable(findings)  # the function, not a module of that name
    assert callable(run_replay)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        replay_cli.nope  # noqa: B018


def test_replay_prints_how_the_input_was_read(tmp_path):
    # An input without a resolved column: the assumption the replay makes is said, not only
    # written to the manifest.
    path = tmp_path / "in.parquet"
    pl.DataFrame(
        {"group_id": [1, 1], "reward": [1.0, 0.0], "openhands_run_time": [60.0, 120.0]}
    ).write_parquet(path)
    result = runner.invoke(app, ["replay", str(path), "--out", str(tmp_path / "r"), "--no-charts"])
    assert result.exit_code == 0, result.output
    assert "Note: no 'resolved' column: resolved = reward > 0" in result.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert "no 'resolved' column: resolved = reward > 0" in manifest["notes"]


def test_sweep_forecasts_by_default_and_no_forecast_turns_it_off(synth_path, tmp_path):
    out = tmp_path / "fx"
    args = ["--lambda-time", "0,1/60", "--steps", "3", "--seeds", "2", "--no-charts"]
    result = run("sweep", synth_path, "--out", out, *args)
    assert result.exit_code == 0, result.output
    table = pl.read_parquet(out / "forecast.parquet")
    assert table["step"].max() == 3
    assert set(table["budget"]) == {0.0005, 0.001, 0.002}
    assert "Forecast (horizon T = 3 steps, " in result.output
    assert '<section id="forecast">' in (out / "index.html").read_text()
    assert run("forecast", "--help").exit_code == 2  # sweep is the forecast: no second command
    plain = run("sweep", synth_path, "--out", tmp_path / "plain", *args, "--no-forecast")
    assert plain.exit_code == 0, plain.output
    assert not (tmp_path / "plain" / "forecast.parquet").exists()
    assert "Forecast (" not in plain.output
    assert "the verdict did not judge resolve rate" in plain.output


@pytest.mark.parametrize("command", ["replay", "sweep", "demo", "explain"])
def test_help_prints_as_written_with_each_default(command, monkeypatch):
    """Rich markup once ate `[tensorboard]` ("needs the extra replay-cli."); defaults are shown
    the way the option takes them."""
    monkeypatch.setenv("COLUMNS", "250")
    text = run(command, "--help").output
    if command != "explain":
        assert "replay-cli[tensorboard]" in text
    assert "needs the extra replay-cli." not in text
    if command in ("replay", "sweep", "explain"):
        assert "[default: 1/60]" in text  # --lambda-time
        assert "[default: trivial]" in text  # --std-guard
        assert "replay-cli[torch]" in text  # --precision


def test_a_no_switch_says_what_passing_it_does(monkeypatch):
    """`--no-normalize` and `--no-mask-flagged` once described the default (what the trainer
    does without the flag); each switch's help now says what passing it changes."""
    from replay_cli import parameters as P

    monkeypatch.setenv("COLUMNS", "250")
    text = run("replay", "--help").output
    lines = {line.split()[0]: line for line in text.splitlines() if line.strip().startswith("--")}
    for p in P.registry().values():
        if p.kind != "bool" or not p.replay or p.switch not in lines:
            continue
        if p.default:  # a --no- switch: never the description of the setting it turns off
            assert p.off is not None, f"{p.name} needs an `off` help for {p.switch}"
            assert p.help[:40] not in lines[p.switch], p.switch
    assert "--no-normalize" in lines
    assert lines["--no-normalize"].split(None, 1)[1].startswith("Do not divide by the std")
    assert lines["--no-mask-flagged"].split(None, 1)[1].startswith("Charge loss-masked rows too")


def test_export_takes_its_output_as_out_like_every_command(synth_path, tmp_path):
    """`export tensorboard REPORT --out DIR`; a second positional is refused."""
    pytest.importorskip("tensorboardX")
    report = tmp_path / "r"
    assert run("replay", synth_path, "--out", report, "--no-forecast").exit_code == 0
    missing = run("export", "tensorboard", report)
    assert missing.exit_code == 2
    assert "--out" in missing.output
    new = run("export", "tensorboard", report, "--out", tmp_path / "tb")
    assert new.exit_code == 0, new.output
    assert sorted(p.name for p in (tmp_path / "tb").iterdir())
    old = run("export", "tensorboard", report, tmp_path / "tb2")
    assert old.exit_code == 2
    assert not (tmp_path / "tb2").exists()
