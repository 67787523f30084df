"""The Ray engine (a real local Ray instance) gives reports identical to the local engine."""

import os
import shutil
import tempfile
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli import ForecastSettings, api
from replay_cli.cli.app import app
from replay_cli.engine import ray_engine
from replay_cli.errors import TaskFailedError
from replay_cli.parameters import expand

from factories import config

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install replay-cli[ray]")

pytestmark = pytest.mark.slow  # a Ray cluster per test: `-m "not slow"` skips it, CI runs it

SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "rollouts_small.parquet"
TABLES = ("rollouts", "groups", "steps", "summary")
SHORT = ForecastSettings(steps=5, seeds=2, check_budgets=False)
"""A short forecast: the engines differ in how the rows are replayed, not in the forecast, and
TRL's configs train through the polars plans step by step."""


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """A Ray instance of this run's own: address="local" never joins a cluster another run
    started (ray.init() alone reads /tmp/ray/ray_current_cluster), and a temporary directory of
    its own keeps its sockets, logs and session_latest link apart from a suite running beside
    it. The directory is short (mkdtemp under /tmp): Ray's socket paths must fit 107 bytes."""
    temp = tempfile.mkdtemp(prefix="ray-")
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        _temp_dir=temp,
    )
    yield
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


def same_reports(a: Path, b: Path) -> None:
    for name in TABLES:
        left, right = pl.read_parquet(a / f"{name}.parquet"), pl.read_parquet(b / f"{name}.parquet")
        assert left.equals(right), name


def test_bundled_sample(tmp_path):
    configs = [config(), config({"semantics": "internal"}, metrics_by="batch")]
    for engine in ("local", "ray"):
        api.replay_to_report(
            [SAMPLE], configs, tmp_path / engine, chunk_rows=9, engine=engine, forecast=SHORT
        )
    same_reports(tmp_path / "local", tmp_path / "ray")


def test_synthetic_sweep_in_many_tasks(synth_path, tmp_path):
    configs = expand(
        {},
        {
            "lambda_time": [0.0, 1 / 60, 1 / 30],
            "apply_to": ["all", "correct"],
            "estimator": ["grpo", "trl-grpo"],
        },
    )
    for engine in ("local", "ray"):
        api.replay_to_report(
            [synth_path], configs, tmp_path / engine, chunk_rows=30, engine=engine, forecast=SHORT
        )
    same_reports(tmp_path / "local", tmp_path / "ray")
    assert not (tmp_path / "ray" / "_parts").exists()


def test_rows_sample_and_none(synth_path, tmp_path):
    for engine in ("local", "ray"):
        api.replay_to_report(
            [synth_path],
            [config()],
            tmp_path / engine,
            rows="sample",
            chunk_rows=30,
            engine=engine,
            forecast=SHORT,
        )
    same_reports(tmp_path / "local", tmp_path / "ray")
    api.replay_to_report(
        [synth_path], [config()], tmp_path / "none", rows="none", engine="ray", forecast=SHORT
    )
    assert not (tmp_path / "none" / "rollouts.parquet").exists()


def test_cli_engine_flag(synth_path, tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "sweep",
            str(synth_path),
            "--out",
            str(tmp_path / "s"),
            "--lambda-time",
            "0,1/60",
            "--engine",
            "ray",
            "--no-charts",
        ],
    )
    assert result.exit_code == 0, result.output
    assert pl.read_parquet(tmp_path / "s" / "summary.parquet").height == 2


def test_bad_engine(synth_path, tmp_path):
    result = CliRunner().invoke(
        app, ["replay", str(synth_path), "--out", str(tmp_path / "r"), "--engine", "spark"]
    )
    assert result.exit_code == 2
    assert "Invalid value for '--engine'" in result.output
    assert "'spark' is not one of" in result.output


def test_worker_killed_mid_task_is_retried(synth_path, tmp_path, monkeypatch):
    """A worker that dies mid-task (as under the OOM killer), leaving a torn part file, is
    retried by Ray; the retry rewrites the part and the report equals a local run's."""
    marker = tmp_path / "killed"
    real_task = ray_engine._task

    def dies_once(*args):
        part = args[6]
        if part is not None and not marker.exists():
            marker.touch()
            Path(part).write_bytes(b"torn")
            os._exit(1)
        return real_task(*args)

    monkeypatch.setattr(ray_engine, "_task", dies_once)
    configs = [config(), config({"lambda_time": 1 / 60})]
    for engine in ("local", "ray"):
        api.replay_to_report(
            [synth_path], configs, tmp_path / engine, chunk_rows=30, engine=engine, forecast=SHORT
        )
    assert marker.exists()  # a worker did die
    same_reports(tmp_path / "local", tmp_path / "ray")


def test_bad_input_found_in_a_worker_is_a_plain_error(synth_path, tmp_path, monkeypatch):
    """An input that vanishes after the driver checked it fails in the worker: the CLI prints
    the library's own message (exit 2), not Ray's remote traceback."""
    source = tmp_path / "rollouts.parquet"
    source.write_bytes(Path(synth_path).read_bytes())
    real_task = ray_engine._task

    def input_gone(*args):
        source.unlink(missing_ok=True)
        return real_task(*args)

    monkeypatch.setattr(ray_engine, "_task", input_gone)
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["replay", str(source), "--out", str(out), "--engine", "ray"])
    assert result.exit_code == 2, result.output
    assert result.output == f"Error: Input file {source} does not exist.\n"
    assert not out.exists()


def test_task_dying_on_every_try_is_one_readable_error(synth_path, tmp_path, monkeypatch):
    """A worker that dies on every try (retries exhausted) ends the run with a message naming
    the task; no report is written."""
    monkeypatch.setattr(ray_engine, "MAX_RETRIES", 1)

    def always_dies(*args):
        os._exit(1)

    monkeypatch.setattr(ray_engine, "_task", always_dies)
    out = tmp_path / "report"
    with pytest.raises(TaskFailedError, match=r"Ray task for steps \d+-\d+ x configs"):
        api.replay_to_report([synth_path], [config()], out, engine="ray", forecast=SHORT)
    assert not out.exists()
