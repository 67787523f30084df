"""Every bad input gets exit code 2, a message naming file, column and rows, no traceback, no
report and untouched inputs; reports appear whole or not at all."""

import hashlib
import os
import signal
import subprocess
import sys
import time

import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli.cli.app import app
from replay_cli.rollouts.synth import synth_rollouts

runner = CliRunner()
GOOD = {"group_id": [1, 1], "reward": [1.0, 0.0], "openhands_run_time": [60.0, 120.0]}


def write(path, **columns):
    pl.DataFrame({**GOOD, **columns}).write_parquet(path)
    return path


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def refuse(tmp_path, inputs, *args, expect):
    """Run replay, require exit 2 with `expect` in the message, no traceback, no report, inputs intact."""
    before = {p: digest(p) for p in inputs}
    out = tmp_path / "report"
    result = runner.invoke(app, ["replay", *map(str, inputs), "--out", str(out), *args])
    assert result.exit_code == 2, result.output
    assert expect in result.output, result.output
    assert "Traceback" not in result.output
    assert not out.exists()
    assert {p: digest(p) for p in inputs} == before
    return result.output


def test_missing_file(tmp_path):
    refuse(
        tmp_path,
        [tmp_path / "nope.parquet"],
        expect=f"Input file {tmp_path / 'nope.parquet'} does not exist.",
    )


def test_empty_file(tmp_path):
    path = tmp_path / "empty.parquet"
    path.write_bytes(b"")
    refuse(tmp_path, [path], expect="is empty (0 bytes)")


def test_truncated_file(tmp_path):
    path = write(tmp_path / "t.parquet")
    path.write_bytes(path.read_bytes()[:-20])
    refuse(tmp_path, [path], expect="is not a complete Parquet file (it may be truncated)")


def test_not_parquet(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"reward": 1}\n')
    refuse(
        tmp_path,
        [path],
        expect="convert it with `replay-cli import nemo-gym` (NeMo-Gym rollouts), `import "
        "wandb-table` (W&B full_result tables) or `import table` (CSV, JSONL, Arrow, Hugging Face "
        "datasets)",
    )


def test_directory_without_inputs(tmp_path):
    (tmp_path / "d").mkdir()
    refuse(tmp_path, [tmp_path / "d"], expect="holds no *.parquet files")


def test_schemas_disagree(tmp_path):
    a = write(tmp_path / "a.parquet", resolved=[True, False])
    b = write(tmp_path / "b.parquet", group_id=[2, 2])
    refuse(tmp_path, [a, b], expect=f"column 'resolved' is in {a} but missing from {b}")


def test_group_id_kinds_disagree(tmp_path):
    a = write(tmp_path / "a.parquet")
    b = write(tmp_path / "b.parquet", group_id=["x", "x"])
    refuse(tmp_path, [a, b], expect="column 'group_id' is integer in")


def test_missing_required_column(tmp_path):
    path = tmp_path / "m.parquet"
    pl.DataFrame({"group_id": [1], "reward": [1.0]}).write_parquet(path)
    refuse(tmp_path, [path], expect=f"{path}: required column 'openhands_run_time' is missing")


def test_wrong_dtype(tmp_path):
    path = write(tmp_path / "w.parquet", calls=["a", "b"])
    refuse(tmp_path, [path], expect=f"{path}: column 'calls' has type String, expected an integer")


def test_null_group_ids(tmp_path):
    path = write(tmp_path / "n.parquet", group_id=[1, None])
    refuse(tmp_path, [path], expect=f"column 'group_id' is null in 1 row(s), first: {path} row 1")


def test_duplicate_keys(tmp_path):
    path = write(tmp_path / "d.parquet", rollout_index=[0, 0])
    refuse(tmp_path, [path], expect=f"duplicate key in 2 row(s), first: {path} row 0; {path} row 1")


def test_group_spanning_steps(tmp_path):
    path = tmp_path / "g.parquet"
    pl.DataFrame(
        {"step": [1, 2], "reward": [1.0, 0.0], "openhands_run_time": [1.0, 1.0]}
    ).write_parquet(path)
    refuse(
        tmp_path, [path], "--group-size", "2", expect="differs inside a group of 2 consecutive rows"
    )


def test_nan_run_times_with_strict(tmp_path):
    path = write(tmp_path / "nan.parquet", openhands_run_time=[float("nan"), 1.0])
    refuse(
        tmp_path,
        [path],
        "--strict",
        expect=f"is NaN or infinite (--strict) in 1 row(s), first: {path} row 0",
    )


def test_run_time_over_a_week(tmp_path):
    path = write(tmp_path / "ms.parquet", openhands_run_time=[900_000.0, 1_200_000.0])
    refuse(
        tmp_path, [path], expect="is over a week (604800 s): run times must be seconds in 2 row(s)"
    )


def test_zero_rows(tmp_path):
    path = tmp_path / "z.parquet"
    pl.DataFrame(GOOD).head(0).write_parquet(path)
    refuse(tmp_path, [path], expect="The input has zero rows.")


def test_unknown_option(tmp_path):
    result = runner.invoke(app, ["replay", "x.parquet", "--out", "r", "--lamda-time", "1"])
    assert result.exit_code == 2
    assert "No such option" in result.output


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["--apply-to", "correctt"], "--apply-to expects one of all, correct, got 'correctt'"),
        (
            ["--lambda-call-bonus", "-0.1", "--call-bonus-ref", "5"],
            "lambda_call_bonus: Input should be greater than or equal to 0",
        ),
        (["--lambda-call-bonus", "0.1"], "call_bonus_ref must be > 0 when lambda_call_bonus > 0"),
        (["--floor", "low"], "--floor expects a number, a fraction like 1/60 or none, got 'low'."),
        (["--clip-low", "1", "--clip-high", "-1"], "clip_low (1.0) is above clip_high (-1.0)"),
        (
            ["++grpo.time_efficiency.lamda_time=0.1"],
            "Did you mean grpo.time_efficiency.lambda_time?",
        ),
    ],
)
def test_invalid_parameters(tmp_path, args, expect):
    refuse(tmp_path, [write(tmp_path / "ok.parquet")], *args, expect=expect)


@pytest.mark.parametrize("command", ["replay", "sweep"])
def test_a_call_bonus_on_an_input_without_calls_is_refused(tmp_path, command):
    """It once ran with every row at 0 calls: exit 0, bonus 0.0, not a word."""
    path = write(tmp_path / "ok.parquet", n_calls=[3, 10])
    out = tmp_path / "report"
    bonus = "0,0.1" if command == "sweep" else "0.1"  # a sweep with a config that pays none
    args = ["--lambda-call-bonus", bonus, "--call-bonus-ref", "20"]
    result = runner.invoke(app, [command, str(path), "--out", str(out), *args])
    assert result.exit_code == 2, result.output
    assert (
        "lambda_call_bonus pays per tool call ('λ=1/60 all bonus=0.1/20'), but the input has no "
        "'calls' column: every row would count 0 calls and the bonus would be 0. Add the column "
        "('n_calls' looks like the tool-call count: try --map n_calls=calls), or set "
        "lambda_call_bonus to 0." in result.output
    )
    assert "Traceback" not in result.output
    assert not out.exists()
    mapped = runner.invoke(
        app, [command, str(path), "--out", str(out), *args, "--map", "n_calls=calls"]
    )
    assert mapped.exit_code == 0, mapped.output
    assert pl.read_parquet(out / "rollouts.parquet")["bonus"].max() > 0


@pytest.mark.parametrize("flag", ["--out", "--tensorboard"])
def test_an_output_under_a_regular_file_is_refused_before_any_work(tmp_path, flag):
    """Every output path is checked before the replay: exit 2, nothing written (the TensorBoard
    directory under a file once failed with a traceback after the whole report was written)."""
    if flag == "--tensorboard":
        pytest.importorskip("tensorboardX", reason="needs the extra replay-cli[tensorboard]")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    path = write(tmp_path / "ok.parquet")
    out = tmp_path / "report" if flag == "--tensorboard" else blocker / "report"
    args = ["--tensorboard", str(blocker / "tb")] if flag == "--tensorboard" else []
    result = runner.invoke(app, ["replay", str(path), "--out", str(out), *args])
    assert result.exit_code == 2, result.output
    assert f"{blocker} is a file, not a directory" in result.output
    assert "Traceback" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "ok.parquet"]


IMPORT_SOURCES = {
    "nemo-gym": "data_samples/rollouts_small.nemo_gym.jsonl",
    "wandb-table": "data_samples/train_swe_agents_full_result_0_5f2a9c0d.table.json",
    "table": None,  # a CSV written by the test
}


@pytest.mark.parametrize("fmt", sorted(IMPORT_SOURCES))
def test_an_import_under_a_regular_file_is_refused_before_any_work(tmp_path, fmt):
    """The importers once exited 1 with a FileExistsError traceback here; every other command
    exits 2 and names the file in the way."""
    source = IMPORT_SOURCES[fmt]
    if source is None:
        source = tmp_path / "t.csv"
        pl.DataFrame(GOOD).write_csv(source)
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    before = sorted(p.name for p in tmp_path.iterdir())
    result = runner.invoke(app, ["import", fmt, str(source), "--out", str(blocker / "x.parquet")])
    assert result.exit_code == 2, result.output
    assert f"cannot be created: {blocker} is a file, not a directory" in result.output
    assert "Traceback" not in result.output
    assert blocker.read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    "command",
    [
        ["synth"],
        ["import", "nemo-gym", IMPORT_SOURCES["nemo-gym"], "--out"],
    ],
)
def test_a_file_output_is_refused_where_it_cannot_go(tmp_path, command):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    result = runner.invoke(app, [*command, str(blocker / "x.parquet")])
    assert result.exit_code == 2, result.output
    assert f"cannot be created: {blocker} is a file, not a directory" in result.output
    folder = tmp_path / "folder"
    (folder / "inside").mkdir(parents=True)
    result = runner.invoke(app, [*command, str(folder), "--force"])
    assert result.exit_code == 2, result.output
    assert f"Output {folder} is a directory; name a file to write." in result.output
    assert "Traceback" not in result.output
    assert (folder / "inside").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "folder"]


def test_a_negative_lambda_runs_with_a_warning(tmp_path):
    """NeMo-RL's config accepts a negative lambda_time; it rewards longer runs, which is said."""
    path = write(tmp_path / "ok.parquet")
    out = tmp_path / "r"
    result = runner.invoke(app, ["replay", str(path), "--out", str(out), "--lambda-time", "-1/60"])
    assert result.exit_code == 0, result.output
    assert "lambda_time -1/60 is negative" in result.output
    assert "rewards longer runs" in result.output
    manifest = (out / "manifest.json").read_text()
    assert "lambda_time -1/60 is negative" in manifest


def test_bad_grid(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text("grid: {lambda_time: [0, 1/60\n")
    path = write(tmp_path / "ok.parquet")
    result = runner.invoke(
        app, ["sweep", str(path), "--out", str(tmp_path / "s"), "--grid", str(grid)]
    )
    assert result.exit_code == 2
    assert f"Grid file {grid} is not valid YAML" in result.output
    assert not (tmp_path / "s").exists()


def test_existing_output(tmp_path):
    out = tmp_path / "report"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    path = write(tmp_path / "ok.parquet")
    result = runner.invoke(app, ["replay", str(path), "--out", str(out)])
    assert result.exit_code == 2
    assert f"Output directory {out} already exists.\n\nPass --force to replace it." in result.output
    assert (out / "mine.txt").read_text() == "keep"


def _cli(*args):
    return [sys.executable, "-m", "replay_cli", *map(str, args)]


@pytest.fixture(scope="module")
def big_input(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "big.parquet"
    synth_rollouts(steps=40, groups_per_step=250, group_size=8, seed=1).write_parquet(path)
    return path


@pytest.fixture(scope="module")
def slow_input(tmp_path_factory):
    """An input whose replay, one step per chunk, takes a few seconds: long enough to kill."""
    path = tmp_path_factory.mktemp("slow") / "slow.parquet"
    synth_rollouts(steps=120, groups_per_step=250, group_size=8, seed=1).write_parquet(path)
    return path


def test_killed_run_leaves_no_report(slow_input, tmp_path):
    out = tmp_path / "report"
    proc = subprocess.Popen(
        _cli("replay", slow_input, "--out", out, "--chunk-rows", "2000"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(".report.tmp-") for p in tmp_path.iterdir()):
        assert proc.poll() is None, "the run ended before it started writing"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert not out.exists()


def test_two_runs_to_one_output(big_input, tmp_path):
    out = tmp_path / "report"
    procs = [
        subprocess.Popen(
            _cli("replay", big_input, "--out", out),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [(p.returncode, p.communicate(timeout=300)[1]) for p in procs]
    results = [(p.returncode, err) for p, (_, err) in zip(procs, results, strict=True)]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    loser = next(err for code, err in results if code == 2)
    assert f"Output directory {out}" in loser
    assert "Traceback" not in loser
    assert {p.name for p in out.iterdir()} >= {
        "rollouts.parquet",
        "summary.parquet",
        "manifest.json",
    }
