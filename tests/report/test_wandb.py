"""Tests for the W&B bridge: offline runs written with the wandb library and read back from their
transaction logs with W&B's own record definitions, every logged value equal to the Parquet it
came from; `compare --internal` reading a trainer's W&B run directory like the CSV route."""

import json
import re
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli import catalogue as C
from replay_cli.advice.words import param_text
from replay_cli.cli.app import app
from replay_cli.config import build_config
from replay_cli.io.wandb_run import BLOCK, read_log, read_run, runs_of
from replay_cli.report.layouts import TRACKER_CURVES
from replay_cli.report.run_tags import headline, run_name, trainer_tag
from replay_cli.report.wandb_runs import run_config

from factories import write_small_synth

runner = CliRunner()
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+\-]*$")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """An 8-config sweep with its W&B runs: (report dir, W&B dir, runs by display name)."""
    pytest.importorskip("wandb", reason="needs the extra replay-cli[wandb]")
    pytest.importorskip("tensorboardX", reason="needs the extra replay-cli[tensorboard]")
    root = tmp_path_factory.mktemp("wb")
    data = write_small_synth(root / "rollouts.parquet", seed=5)
    report, runs = root / "report", root / "runs"
    args = ["sweep", str(data), "--out", str(report), "--wandb", str(runs), "--no-charts"]
    args += ["--lambda-time", "0,1/60", "--apply-to", "all,correct", "--floor", "none,0"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"wandb sync {runs}/wandb/offline-run-*" in result.output
    read = {}
    for log in runs_of(runs).values():
        run = read_log(log)
        read[run.name] = run
    return report, runs, read


def test_every_logged_value_equals_the_parquet_it_came_from(sweep):
    report, _, read = sweep
    steps = pl.read_parquet(report / "steps.parquet")
    summary = pl.read_parquet(report / "summary.parquet")
    verdict = pl.read_parquet(report / "recommendation.parquet")
    assert sorted(read) == sorted(run_name(x) for x in summary["label"])
    for row in summary.iter_rows(named=True):
        run = read[run_name(row["label"])]
        decided = verdict.filter(pl.col("config_id") == row["config_id"]).row(0, named=True)
        # History: the trainer's tags carry the trainer's values exactly (JSON keeps every bit),
        # the replay's curves are in the page's units.
        expected = {}
        for step in steps.filter(pl.col("config_id") == row["config_id"]).iter_rows(named=True):
            for column, value in step.items():
                if value is None or column in ("config_id", "step", "rows", "groups"):
                    continue
                human_tag = f"replay/{C.human_name(column)}"
                tag = human_tag if column in TRACKER_CURVES else trainer_tag(column)
                human = C.metric(column).human(value) if column in TRACKER_CURVES else value
                expected[(tag, step["step"])] = float(human)
        written = {
            (r["metric"], r["step"]): r["value"] for r in run.scalars().iter_rows(named=True)
        }
        assert written == expected
        assert "train/time_efficiency/deduction/mean" in {t for t, _ in written}
        # Summary: the headline in human units, the role and the resample share.
        for column, value in headline(row).items():
            assert run.summary[column] == value
        assert run.summary["forecast/resolve_vs_off_pct"] == pytest.approx(
            row["forecast/resolve_vs_off"] * 100
        )
        # A key named _frac or _rate holds a fraction, as the trainer's do; a % says _pct.
        keys = {*run.summary, *(t for t, _ in written)}
        assert any(k.endswith("_pct") for k in keys)
        for key in keys:
            if key.endswith(("_frac", "_rate", "_share")):
                values = [v for (t, _), v in written.items() if t == key] or [run.summary[key]]
                assert all(0 <= v <= 1 for v in values if v is not None), (key, values)
        assert run.summary["role"] == decided["role"]
        # The resample share in % among the other % keys, never a fraction beside them.
        won = decided["won_share"]
        assert run.summary["won_pct"] == (None if won is None else pytest.approx(100 * won))
        assert "won_share" not in run.summary
        # The headline's mean over the steps is named apart from the trainer's per-step tag.
        assert run.summary["total_reward/mean_over_steps"] == pytest.approx(
            row["total_reward/mean"]
        )
        assert "total_reward/mean" not in run.summary
        # Config: the parameters as the summary holds them, the id, label and launch overrides.
        for key in ("apply_to", "floor", "normalize", "clip_low", "std_guard"):
            assert run.config[key] == row[key]
        # λ a number (a numeric axis), and as every surface writes it beside.
        assert run.config["lambda_time"] == row["lambda_time"]
        assert run.config["lambda_time_text"] == param_text("lambda_time", row["lambda_time"])
        # `enabled` as the run launches: λ = 0 changes no reward and launches enabled=false.
        launched = "enabled=true" if run.config["enabled"] else "enabled=false"
        assert launched in decided["overrides"]
        assert run.config["enabled"] == (row["enabled"] and not decided["shaping_off"])
        assert run.config["config_id"] == row["config_id"]
        assert run.config["label"] == row["label"]
        assert run.config["overrides"] == decided["overrides"]
        assert run.tags == [decided["role"]]
        assert (run.group, run.job_type) == ("report", "replay")


def test_a_run_launched_with_shaping_off_says_so_in_its_config():
    """The W&B config says `enabled` as the run launches (`enabled=false` in its overrides), and
    λ as a number (a numeric axis) with its text as every surface writes it beside."""
    off = build_config({"shaping": {"enabled": False, "lambda_time": 1 / 120}})
    config = run_config(off, off.label, "++grpo.time_efficiency.enabled=false")
    assert config["enabled"] is False
    assert config["lambda_time"] == 1 / 120
    assert config["lambda_time_text"] == "1/120"
    zero = build_config({"shaping": {"lambda_time": 0.0}})  # changes no reward: launched off
    config = run_config(zero, zero.label, "++grpo.time_efficiency.enabled=false", True)
    assert config["enabled"] is False
    assert config["lambda_time"] == 0.0
    assert config["lambda_time_text"] == "0"
    on = build_config({"shaping": {"lambda_time": 1 / 60}})
    config = run_config(on, on.label, "++grpo.time_efficiency.lambda_time=0.016666666666666666")
    assert config["enabled"] is True
    assert isinstance(config["lambda_time"], float)
    assert config["lambda_time"] == 1 / 60
    assert config["lambda_time_text"] == "1/60"


def test_the_page_and_the_manifest_say_where_the_runs_are(sweep):
    report, runs, _ = sweep
    assert json.loads((report / "manifest.json").read_text())["wandb"] == str(runs)
    page = (report / "index.html").read_text()
    assert "W&amp;B runs" in page
    assert f"wandb sync {runs}/wandb/offline-run-*" in page


def test_run_names_are_valid_in_a_shell_and_unique(sweep):
    _, _, read = sweep
    assert all(SAFE_NAME.match(name) for name in read)
    assert run_name("λ=1/60 correct floor=0.05 clip[-3,3]") == (
        "lambda=1over60_correct_floor=0.05_clip_-3_3"
    )


def test_without_the_extra_it_fails_before_any_work(monkeypatch, tmp_path, synth_path):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import fails as when not installed
    out = tmp_path / "report"
    result = runner.invoke(
        app, ["replay", str(synth_path), "--out", str(out), "--wandb", str(tmp_path / "wb")]
    )
    assert result.exit_code == 2
    assert "replay-cli[wandb]" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()
    assert not (tmp_path / "wb").exists()


def test_export_wandb_is_refused_then_replaced_with_force_and_takes_a_group(sweep, tmp_path):
    report, _, _ = sweep
    out = tmp_path / "export"
    first = runner.invoke(
        app, ["export", "wandb", str(report), "--out", str(out), "--group", "sweep-7"]
    )
    assert first.exit_code == 0, first.output
    assert {read_log(log).group for log in runs_of(out).values()} == {"sweep-7"}
    assert first.output.startswith(f"Wrote 8 W&B runs to {out}")
    again = runner.invoke(app, ["export", "wandb", str(report), "--out", str(out)])
    assert again.exit_code == 2
    assert "--force" in again.output
    forced = runner.invoke(app, ["export", "wandb", str(report), "--out", str(out), "--force"])
    assert forced.exit_code == 0, forced.output
    groups = {read_log(log).group for log in runs_of(out).values()}
    assert groups == {"report"}  # the report directory's name by default


def _trainer_run(tmp_path, report, label, shift):
    """A trainer-like offline W&B run (the internal metric names under `train/`) and the same
    numbers as a W&B panel CSV export."""
    import wandb

    summary = pl.read_parquet(report / "summary.parquet")
    steps = pl.read_parquet(report / "steps.parquet")
    cid = summary.filter(pl.col("label") == label)["config_id"][0]
    mine = steps.filter(pl.col("config_id") == cid).sort("step")
    settings = wandb.Settings(mode="offline", silent=True, console="off", x_disable_stats=True)
    run = wandb.init(
        dir=str(tmp_path), project="exp", name=f"internal-{shift}", settings=settings,
        reinit="create_new",
    )  # fmt: skip
    for step, reward, deduction in mine.select(
        "step", "total_reward/mean", "time_efficiency/deduction/mean"
    ).rows():
        run.log(
            {
                "train/total_reward/mean": reward + shift,
                "train/time_efficiency/deduction_mean": deduction,
            },
            step=step,
        )
    run.finish()
    wandb.teardown()  # finish() returns before the writer has flushed the log
    columns = {
        "Step": mine["step"].to_list(),
        "internal-a - train/total_reward/mean": [v + shift for v in mine["total_reward/mean"]],
        "internal-a - train/time_efficiency/deduction_mean": mine[
            "time_efficiency/deduction/mean"
        ].to_list(),
    }
    csv = tmp_path / f"panel-{shift}.csv"
    pl.DataFrame(columns).write_csv(csv)
    return csv, cid


def test_compare_reads_a_wandb_run_directory_like_the_csv_export(sweep, tmp_path):
    report, _, _ = sweep
    csv, cid = _trainer_run(tmp_path, report, "λ=1/60 all", 0.25)
    (run_dir,) = (tmp_path / "wandb").glob("offline-run-*")
    common = ["compare", str(report), "--config-id", cid]
    from_wandb = runner.invoke(
        app, [*common, "--out", str(tmp_path / "a"), "--internal", str(run_dir)]
    )
    assert from_wandb.exit_code == 0, from_wandb.output
    from_csv = runner.invoke(app, [*common, "--out", str(tmp_path / "b"), "--internal", str(csv)])
    assert from_csv.exit_code == 0, from_csv.output
    a = pl.read_parquet(tmp_path / "a" / "internal_comparison.parquet")
    b = pl.read_parquet(tmp_path / "b" / "internal_comparison.parquet")
    assert a.equals(b)  # float64 in both: the W&B log keeps every bit, as the CSV does
    assert set(a["metric"]) == {"total_reward/mean", "time_efficiency/deduction/mean"}
    assert a.filter(pl.col("metric") == "total_reward/mean")["delta"].to_list() == pytest.approx(
        [-0.25] * 3, abs=1e-12
    )
    # A wandb/ folder of two runs needs a choice, which the error lists; a name picks one.
    _trainer_run(tmp_path, report, "λ=1/60 all", 0.5)
    folder = tmp_path / "wandb"
    two = runner.invoke(app, [*common, "--out", str(tmp_path / "c"), "--internal", str(folder)])
    assert two.exit_code == 2
    assert "holds 2 W&B runs" in two.output
    assert "--internal-run" in two.output
    # Listed by the names a user gave them, not by their offline-run-<time>-<id> directories.
    assert "internal-0.25  (id " in two.output
    assert "internal-0.5  (id " in two.output
    assert "offline-run-" not in two.output
    args = [*common, "--out", str(tmp_path / "d"), "--internal", str(folder)]
    picked = runner.invoke(app, [*args, "--internal-run", "internal-0.25"])
    assert picked.exit_code == 0, picked.output
    assert pl.read_parquet(tmp_path / "d" / "internal_comparison.parquet").equals(a)


def test_records_that_span_blocks_and_a_torn_last_record(tmp_path):
    """A record larger than a 32 KiB block is cut in pieces across blocks; a log cut mid-record
    (a run killed while writing) reads up to its last whole record."""
    wandb = pytest.importorskip("wandb", reason="needs the extra replay-cli[wandb]")

    settings = wandb.Settings(mode="offline", silent=True, console="off", x_disable_stats=True)
    big = "x" * (3 * BLOCK)
    run = wandb.init(dir=str(tmp_path), project="p", config={"big": big}, settings=settings)
    rng = np.random.default_rng(0)
    logged = [float(v) for v in rng.normal(size=400)]
    for step, value in enumerate(logged):
        run.log({"v": value, "text": "y" * (step * 97 % 5000)}, step=step)
    run.finish()
    wandb.teardown()  # finish() returns before the writer has flushed the log
    (log,) = tmp_path.glob("wandb/offline-run-*/*.wandb")
    whole = read_run(log)
    assert whole.config["big"] == big
    back = whole.scalars().filter(pl.col("metric") == "v").sort("step")["value"].to_list()
    assert back == logged
    data = log.read_bytes()
    torn = tmp_path / "torn.wandb"
    torn.write_bytes(data[: len(data) // 2 + 5])
    part = read_log(torn)
    values = part.scalars().filter(pl.col("metric") == "v").sort("step")["value"].to_list()
    assert 0 < len(values) < len(logged)
    assert values == logged[: len(values)]


def test_not_a_wandb_log_is_named(tmp_path):
    pytest.importorskip("wandb", reason="needs the extra replay-cli[wandb]")
    from replay_cli.errors import InputFileError

    path = tmp_path / "run-x.wandb"
    path.write_text(json.dumps({"not": "a log"}))
    with pytest.raises(InputFileError, match="is not a W&B transaction log"):
        read_log(path)


def test_a_logged_table_is_one_with_a_path_and_a_log_is_a_wandb_file_or_a_run_folder(tmp_path):
    from replay_cli.io.wandb_run import WandbRun, is_wandb

    log = tmp_path / "run-1" / "run-1.wandb"
    log.parent.mkdir()
    log.write_bytes(b":W&B")
    run = WandbRun(
        log,
        history=[
            {"_step": 3, "train/full_result": {"_type": "table-file", "path": "media/t.json"}},
            {"_step": 4, "train/full_result": {"_type": "table-file"}},  # no file: no table
            {"_step": 5, "train/full_result": {"path": "media/u.json"}},  # not a table
        ],
    )
    assert run.tables("full_result") == [(3, tmp_path / "run-1" / "files" / "media/t.json")]
    assert is_wandb(log)  # the log given directly
    assert is_wandb(log.parent)  # a run's folder
    assert is_wandb(tmp_path)  # a folder of runs
    other = tmp_path / "run-1" / "metrics.csv"
    other.write_text("step,metric,value\n")
    assert not is_wandb(other)
    (tmp_path / "empty").mkdir()
    assert not is_wandb(tmp_path / "empty")


LOG_BLOCK = 32 * 1024
"""LevelDB's log block, W&B's too: written out here, not imported, so that the layout below is
the format's and not whatever the reader believes."""


def _log_bytes(records: list[bytes]) -> bytes:
    """A transaction log laid out as W&B's writer lays it (LevelDB's log format): a 7-byte file
    header, then records cut at block ends into pieces (full 1, first 2, middle 3, last 4), each
    behind a 7-byte header, a block tail of fewer than 7 bytes filled with zeros."""
    import struct

    out = bytearray(b":W&B\x00\x01\x00")
    for record in records:
        rest, first = record, True
        while True:
            left = LOG_BLOCK - len(out) % LOG_BLOCK
            if left < 7:
                out += bytes(left)
                continue
            piece, rest = rest[: left - 7], rest[left - 7 :]
            kind = (1 if not rest else 2) if first else (4 if not rest else 3)
            out += struct.pack("<IHB", 0, len(piece), kind) + piece
            first = False
            if not rest:
                break
    return bytes(out)


def test_a_block_tail_too_short_for_a_header_is_padding():
    """The first record ends 3 bytes before the block's end: those 3 zeros are padding, and the
    next record starts the next block. The reader must know where blocks end to skip them."""
    from replay_cli.io.wandb_run import pieces

    first = b"a" * (LOG_BLOCK - 7 - 7 - 3)  # file header, record header, record: 3 bytes left
    records = [first, b"second", b"c" * (2 * LOG_BLOCK), b"last"]
    data = _log_bytes(records)
    assert data[LOG_BLOCK - 3 : LOG_BLOCK] == bytes(3)
    assert list(pieces(data, Path("run.wandb"))) == records
