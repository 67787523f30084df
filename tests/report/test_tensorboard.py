"""Tests for the TensorBoard bridge: runs written with tensorboardX and read back with TensorBoard's
own reader, a real `tensorboard` server's HTTP API over them, and `compare --internal` reading a
trainer's event files the same as the W&B CSV route."""

import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli import catalogue as C
from replay_cli.advice.words import param_text
from replay_cli.cli.app import app
from replay_cli.io.tensorboard import read_scalars, runs_of
from replay_cli.report.layouts import TRACKER_CURVES
from replay_cli.report.run_tags import run_name, trainer_tag

from factories import write_small_synth

pytestmark = pytest.mark.slow  # a real TensorBoard server: `-m "not slow"` skips it, CI runs it

runner = CliRunner()


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    pytest.importorskip("tensorboardX", reason="needs the extra replay-cli[tensorboard]")
    pytest.importorskip("tensorboard", reason="needs the extra replay-cli[tensorboard]")
    """A 4-config sweep with its TensorBoard runs: (report dir, tensorboard dir)."""
    root = tmp_path_factory.mktemp("tb")
    data = write_small_synth(root / "rollouts.parquet", seed=5)
    report, runs = root / "report", root / "runs"
    args = ["sweep", str(data), "--out", str(report), "--tensorboard", str(runs), "--no-charts"]
    result = runner.invoke(app, [*args, "--lambda-time", "0,1/60", "--apply-to", "all,correct"])
    assert result.exit_code == 0, result.output
    assert f"tensorboard --logdir {runs}" in result.output
    assert f"wandb sync --sync-tensorboard {runs}" in result.output
    return report, runs


def f32(x: float) -> float:
    return float(np.float32(x))


def test_every_scalar_equals_the_step_table(sweep):
    report, runs = sweep
    steps = pl.read_parquet(report / "steps.parquet")
    summary = pl.read_parquet(report / "summary.parquet")
    assert sorted(runs_of(runs)) == sorted([".", *(run_name(x) for x in summary["label"])])
    for row in summary.iter_rows(named=True):
        got = read_scalars(runs, run_name(row["label"]))
        mine = steps.filter(pl.col("config_id") == row["config_id"])
        expected = {}
        for step in mine.iter_rows(named=True):
            for column, value in step.items():
                if value is None or column in ("config_id", "step", "rows", "groups"):
                    continue
                if column in TRACKER_CURVES:  # the replay's own curves, in the page's units
                    human = C.metric(column).human(value)
                    expected[(f"replay/{C.human_name(column)}", step["step"])] = f32(human)
                else:  # the trainer's tags carry the trainer's values, to overlay its curves
                    expected[(trainer_tag(column), step["step"])] = f32(value)
        written = {
            (r["metric"], r["step"]): r["value"]
            for r in got.iter_rows(named=True)
            if not r["metric"].startswith("hparams/")
        }
        assert written == expected
        assert "train/time_efficiency/deduction/mean" in {t for t, _ in written}
        assert "replay/push/minutes_fail" in {t for t, _ in written}
        hparams = dict(
            got.filter(pl.col("metric").str.starts_with("hparams/"))
            .select("metric", "value")
            .rows()
        )
        ratio = row["forecast/resolve_vs_off"]
        assert hparams["hparams/forecast_resolve_vs_off_pct"] == f32(ratio * 100)  # % says _pct
        # The mean over the steps, named apart from the trainer's per-step train/total_reward/mean.
        assert hparams["hparams/total_reward_mean_over_steps"] == f32(row["total_reward/mean"])
        assert "hparams/total_reward_mean" not in hparams
        # A tag named _frac or _rate holds a fraction, the trainer's way; a % is named _pct.
        for (tag, _), value in written.items():
            if tag.endswith(("_frac", "_rate", "_share")):
                assert 0 <= value <= 1, (tag, value)
        assert "replay/adv/explosion_pct" in {t for t, _ in written}
        solve = C.metric("forecast/solve_minutes_vs_off").human(
            row["forecast/solve_minutes_vs_off"]
        )
        assert hparams["hparams/forecast_solve_minutes_vs_off"] == f32(solve)
    # A rounding-sized value is 0 on every surface: TensorBoard holds no 1e-17 where the CLI shows 0.
    every = read_scalars(runs, run_name(summary["label"][0]))
    tiny = every.filter((pl.col("value") != 0) & (pl.col("value").abs() < 1e-12))
    assert tiny.filter(pl.col("metric").str.starts_with("replay/")).is_empty()


def test_the_directory_is_refused_then_replaced_with_force(sweep, tmp_path):
    report, _ = sweep
    out = tmp_path / "export"
    first = runner.invoke(app, ["export", "tensorboard", str(report), "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert first.output.startswith(f"Wrote 4 TensorBoard runs to {out}")
    again = runner.invoke(app, ["export", "tensorboard", str(report), "--out", str(out)])
    assert again.exit_code == 2
    assert "--force" in again.output
    forced = runner.invoke(
        app, ["export", "tensorboard", str(report), "--out", str(out), "--force"]
    )
    assert forced.exit_code == 0, forced.output
    assert len(list(out.rglob("events.out.tfevents*"))) == 5  # four runs and the experiment


def test_without_the_extra_it_fails_at_once(monkeypatch, tmp_path, synth_path):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import fails as when not installed
    out = tmp_path / "report"
    result = runner.invoke(
        app, ["replay", str(synth_path), "--out", str(out), "--tensorboard", str(tmp_path / "tb")]
    )
    assert result.exit_code == 2
    assert "replay-cli[tensorboard]" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()  # refused before any replay


def _serve(runs: Path, tmp: Path) -> tuple[subprocess.Popen, str]:
    """A TensorBoard server over runs on a port the kernel gives it (--port 0; a port found free
    here and passed on could be taken by a suite running beside this one before the server
    binds it), its info files under tmp (TMPDIR; TensorBoard keeps them in the system temporary
    directory otherwise): (process, base URL read from the line it prints)."""
    log = tmp / "tensorboard.log"
    env = {**os.environ, "TMPDIR": str(tmp)}
    with log.open("w") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", "--logdir", str(runs), "--host",
             "127.0.0.1", "--port", "0", "--reload_interval", "0"],
            stdout=sink, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and server.poll() is None:
        found = re.search(r"at (http://127\.0\.0\.1:\d+)/", log.read_text())
        if found:
            return server, found.group(1)
        time.sleep(0.2)
    server.kill()
    raise AssertionError(f"TensorBoard did not start: {log.read_text()[-2000:]}")


def _get(url: str, body: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_a_real_tensorboard_server_lists_runs_tags_and_hparams(sweep, tmp_path):
    report, runs = sweep
    summary = pl.read_parquet(report / "summary.parquet")
    steps = pl.read_parquet(report / "steps.parquet")
    server, base = _serve(runs, tmp_path)
    try:
        deadline = time.monotonic() + 90
        listed: list = []
        while time.monotonic() < deadline:
            try:
                listed = _get(f"{base}/data/runs")
                if len(listed) == summary.height + 1:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        names = [run_name(label) for label in summary["label"]]
        assert sorted(listed) == sorted([".", *names])
        tags = _get(f"{base}/data/plugin/scalars/tags")
        for name in names:
            assert "train/total_reward/mean" in tags[name]
            assert "replay/signal/group_rate_pct" in tags[name]
        groups = _get(
            f"{base}/data/plugin/hparams/session_groups",
            {
                "experimentName": "",
                "allowedStatuses": ["STATUS_SUCCESS", "STATUS_UNKNOWN"],
                "colParams": [],
                "startIndex": 0,
                "sliceSize": 100,
            },
        )
        by_run = {g["name"]: g["hparams"] for g in groups["sessionGroups"]}
        for row in summary.iter_rows(named=True):
            hp = by_run[run_name(row["label"])]
            assert hp["apply_to"] == row["apply_to"]
            assert hp["lambda_time"] == param_text("lambda_time", row["lambda_time"])  # 1/60
            assert hp["role"] in ("recommended", "runner-up", "eligible", "avoid", "unrated")
        row = summary.row(1, named=True)
        query = urllib.parse.urlencode(
            {"run": run_name(row["label"]), "tag": "train/total_reward/mean"}
        )
        series = _get(f"{base}/data/plugin/scalars/scalars?{query}")
        mine = steps.filter(pl.col("config_id") == row["config_id"]).sort("step")
        assert [(s, v) for _, s, v in series] == [
            (s, f32(v)) for s, v in mine.select("step", "total_reward/mean").rows()
        ]
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _trainer_logs(tmp_path: Path, report: Path, label: str) -> tuple[Path, Path, str]:
    """A trainer-like TensorBoard log (the internal names, `train/` tags, two runs) and the same
    numbers as a W&B panel CSV export."""
    from tensorboardX import SummaryWriter

    summary = pl.read_parquet(report / "summary.parquet")
    steps = pl.read_parquet(report / "steps.parquet")
    cid = summary.filter(pl.col("label") == label)["config_id"][0]
    mine = steps.filter(pl.col("config_id") == cid).sort("step")
    logs = tmp_path / "internal"
    columns = {"Step": mine["step"].to_list()}
    for run, shift in (("internal-a", 0.25), ("internal-b", 0.5)):
        writer = SummaryWriter(str(logs / run))
        for step, reward, deduction in mine.select(
            "step", "total_reward/mean", "time_efficiency/deduction/mean"
        ).rows():
            writer.add_scalar("train/total_reward/mean", f32(reward + shift), step)
            writer.add_scalar("train/time_efficiency/deduction_mean", f32(deduction), step)
        writer.close()
        if run == "internal-a":
            columns[f"{run} - train/total_reward/mean"] = [
                f32(v + shift) for v in mine["total_reward/mean"]
            ]
            columns[f"{run} - train/time_efficiency/deduction_mean"] = [
                f32(v) for v in mine["time_efficiency/deduction/mean"]
            ]
    csv = tmp_path / "panel.csv"
    pl.DataFrame(columns).write_csv(csv)
    return logs, csv, cid


def test_compare_reads_a_trainer_log_like_the_wandb_csv(sweep, tmp_path):
    report, _ = sweep
    logs, csv, cid = _trainer_logs(tmp_path, report, "λ=1/60 all")
    common = ["compare", str(report), "--config-id", cid]
    from_tb = runner.invoke(
        app,
        [
            *common,
            "--out",
            str(tmp_path / "a"),
            "--internal",
            str(logs),
            "--internal-run",
            "internal-a",
        ],
    )
    assert from_tb.exit_code == 0, from_tb.output
    from_csv = runner.invoke(app, [*common, "--out", str(tmp_path / "b"), "--internal", str(csv)])
    assert from_csv.exit_code == 0, from_csv.output
    tb = pl.read_parquet(tmp_path / "a" / "internal_comparison.parquet")
    wandb = pl.read_parquet(tmp_path / "b" / "internal_comparison.parquet")
    assert tb.equals(wandb)
    assert set(tb["metric"]) == {"total_reward/mean", "time_efficiency/deduction/mean"}
    assert tb.filter(pl.col("metric") == "total_reward/mean")["delta"].to_list() == pytest.approx(
        [-0.25] * 3, abs=1e-6
    )
    # One event file works as a run of its own.
    (event,) = (logs / "internal-a").glob("events.out.tfevents*")
    single = runner.invoke(app, [*common, "--out", str(tmp_path / "c"), "--internal", str(event)])
    assert single.exit_code == 0, single.output
    assert pl.read_parquet(tmp_path / "c" / "internal_comparison.parquet").equals(tb)


def test_several_runs_need_a_choice_that_lists_them(sweep, tmp_path):
    report, _ = sweep
    logs, _, cid = _trainer_logs(tmp_path, report, "λ=1/60 all")
    common = ["compare", str(report), "--config-id", cid, "--out", str(tmp_path / "x")]
    result = runner.invoke(app, [*common, "--internal", str(logs)])
    assert result.exit_code == 2
    assert "internal-a, internal-b" in result.output
    assert "--internal-run" in result.output
    missing = runner.invoke(app, [*common, "--internal", str(logs), "--internal-run", "nope"])
    assert missing.exit_code == 2
    assert "no TensorBoard run 'nope'" in missing.output
