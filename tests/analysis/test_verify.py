"""Tests for replay_cli.analysis.verify: recomputing a run's logged advantages from its logged rewards."""

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli import api
from replay_cli.analysis.verify import compare_rewards, group_rows, rewards_match, verify
from replay_cli.cli.app import app
from replay_cli.errors import ConfigError, InputFileError
from replay_cli.io.train_data import read_train_data
from replay_cli.rollouts.validation import rollouts_from_frame

from factories import config, rollouts
from writers import write_train_data


def dumps(synth_path, tmp_path, cfg):
    rows = api.replay(api.load([synth_path]), cfg).result.rows.filter(pl.col("split") == "train")
    return write_train_data(rows, tmp_path / "dumps")


@pytest.mark.parametrize(
    ("advantage", "expected"),
    [
        ({}, {"baseline": "loo", "normalize": True}),
        ({"baseline": "mean"}, {"baseline": "mean", "normalize": True}),
        ({"normalize": False}, {"normalize": False}),
        ({"clip_low": -1.0, "clip_high": 1.0}, {"clip_low": -1.0, "clip_high": 1.0}),
        ({"exclude_masked": True}, {"exclude_masked": True}),
    ],
)
def test_finds_the_settings_that_made_the_log(synth_path, tmp_path, advantage, expected):
    paths = dumps(synth_path, tmp_path, config({"lambda_time": 1 / 60}, advantage))
    result = verify(read_train_data(paths))
    assert result.best["differing_rows"] == 0
    assert result.best["rows_within_bound"] == 0  # our own float32 values: no bound needed
    for key, value in expected.items():
        assert result.best[key] == value
    assert result.grouping == "identical prompt tokens (as the trainer)"
    # Among equally good settings the first in candidate order is named.
    c = result.candidates
    tied = c.filter(
        (pl.col("differing_rows") == result.best["differing_rows"])
        & (pl.col("max_abs_diff") == result.best["max_abs_diff"])
    )
    assert result.best["candidate"] == tied["candidate"].min()


def test_reports_differing_rows(synth_path, tmp_path):
    paths = dumps(synth_path, tmp_path, config())
    lines = paths[0].read_text().splitlines()
    first = json.loads(lines[0])
    first["advantages"] = [[0.0] * 4 + [123.0] * 6]
    paths[0].write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    result = verify(read_train_data(paths))
    assert result.best["differing_rows"] == 1
    assert result.differing["logged_advantage"].to_list() == [123.0]
    moved = abs(123.0 - result.differing["recomputed"][0])
    assert result.best["max_abs_diff"] == pytest.approx(moved)
    first_step = result.steps.row(0, named=True)
    assert first_step["differing_rows"] == 1
    assert first_step["max_abs_diff"] == pytest.approx(moved)


def test_group_size_blocks(synth_path, tmp_path):
    paths = dumps(synth_path, tmp_path, config())
    result = verify(read_train_data(paths), group_size=4)
    assert result.grouping == "blocks of 4 rows"
    assert result.best["differing_rows"] == 0


def test_bad_dump(tmp_path):
    path = tmp_path / "train_data_step1.jsonl"
    path.write_text('{"rewards": [1.0]}\n')
    with pytest.raises(InputFileError, match="missing or malformed rewards/advantages"):
        read_train_data([path])


def test_verify_command_with_rollouts(synth_path, tmp_path):
    paths = dumps(synth_path, tmp_path, config())
    args = ["verify", str(synth_path)] + [a for p in paths for a in ("--train-data", str(p))]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "v")])
    assert result.exit_code == 0, result.output
    assert "reproduces the log: 0 of" in result.output
    assert "Logged rewards vs the replayed shaped rewards: match" in result.output
    assert (tmp_path / "v" / "candidates.parquet").exists()
    # A different lambda no longer matches the logged rewards.
    result = CliRunner().invoke(app, [*args, "++grpo.time_efficiency.lambda_time=0.0333"])
    assert "Logged rewards vs the replayed shaped rewards: differ" in result.output


def test_the_shells_glob_and_a_directory_both_reach_train_data(synth_path, tmp_path):
    paths = dumps(synth_path, tmp_path, config())
    assert len(paths) > 1
    # `--train-data train_data_step*.jsonl`: the shell passes the second file as a positional.
    globbed = ["verify", str(synth_path), "--train-data", *map(str, paths)]
    directory = ["verify", str(synth_path), "--train-data", str(paths[0].parent)]
    for args in (globbed, directory):
        result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        rows = sum(len(p.read_text().splitlines()) for p in paths)
        assert f"reproduces the log: 0 of {rows} rows differ" in result.output
        assert "Logged rewards vs the replayed shaped rewards: match" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(app, ["verify", "--train-data", str(empty)])
    assert result.exit_code == 2
    assert "holds no train_data_step*.jsonl dumps" in result.output


def test_a_dump_given_as_rollouts_names_the_option(synth_path, tmp_path):
    (dump, *_) = dumps(synth_path, tmp_path, config())
    result = CliRunner().invoke(app, ["replay", str(dump), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "a NeMo-RL training dump: pass it to `verify --train-data`" in result.output


def test_verify_needs_train_data():
    result = CliRunner().invoke(app, ["verify"])
    assert result.exit_code == 2
    assert "verify needs --train-data" in result.output


def test_rollouts_of_other_steps_are_an_error_naming_both(synth_path, tmp_path):
    paths = dumps(synth_path, tmp_path, config())
    other = tmp_path / "other.parquet"
    pl.read_parquet(synth_path).with_columns(pl.col("step") + 100).write_parquet(other)
    args = ["verify", str(other)] + [a for p in paths for a in ("--train-data", str(p))]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "share no step: the dumps have steps 1, 2" in result.output
    assert "the rollouts 101, 102" in result.output


def _unclipped(synth_path, cfg) -> list[float]:
    rows = api.replay(api.load([synth_path]), cfg).result.rows.filter(pl.col("split") == "train")
    return sorted(rows["advantage_unclipped"].to_list())


@pytest.mark.parametrize("side", ["low", "high"])
def test_a_one_sided_clip_with_two_rows_on_its_bound_is_found(synth_path, tmp_path, side):
    """Only one bound binds, on exactly two rows: verify names that bound and no other."""
    shaping = {"lambda_time": 1 / 60}
    values = _unclipped(synth_path, config(shaping))
    if side == "low":
        bound = (values[1] + values[2]) / 2  # the two lowest rows end on it
        advantage, want = {"clip_low": bound}, (bound, None)
    else:
        bound = (values[-2] + values[-3]) / 2
        advantage, want = {"clip_high": bound}, (None, bound)
    paths = dumps(synth_path, tmp_path, config(shaping, advantage))
    result = verify(read_train_data(paths))
    assert result.best["differing_rows"] == 0
    # The dump holds float32 advantages: the bound as the log has it.
    logged = [
        pl.Series([x], dtype=pl.Float32).cast(pl.Float64)[0] if x is not None else None
        for x in want
    ]
    assert (result.best["clip_low"], result.best["clip_high"]) == tuple(logged)


def test_no_clip_is_named_when_each_extreme_is_a_single_row(synth_path, tmp_path):
    """An unclipped run's extremes are single rows: no candidate carries a clip."""
    values = _unclipped(synth_path, config({"lambda_time": 1 / 60}))
    assert values[0] < values[1]
    assert values[-2] < values[-1]
    paths = dumps(synth_path, tmp_path, config({"lambda_time": 1 / 60}))
    result = verify(read_train_data(paths))
    assert result.best["clip_low"] is None
    assert result.best["clip_high"] is None
    assert result.candidates["clip_low"].null_count() == result.candidates.height == 16
    assert result.candidates["clip_high"].null_count() == 16


@pytest.mark.parametrize(
    ("diffs", "ok"),
    [([0.0, 1e-5], True), ([0.0, 1.2e-5], False), ([None, 0.0], False), ([], False)],
)
def test_rewards_match_within_1e_5_on_every_step(diffs, ok):
    # A step whose row counts differ has no difference (null): that is no match either.
    rewards = pl.DataFrame({"max_abs_diff": diffs}, schema={"max_abs_diff": pl.Float64})
    assert rewards_match(rewards) == (ok, max((d for d in diffs if d is not None), default=None))


@pytest.mark.parametrize("n", [8, 9])
def test_steps_without_overlap_are_listed_up_to_eight(n):
    logged = pl.DataFrame({"step": list(range(1, n + 1)), "reward": [0.0] * n})
    replayed = pl.DataFrame({"step": [100], "split": ["train"], "reward_shaped": [0.0]})
    with pytest.raises(InputFileError) as err:
        compare_rewards(logged, replayed)
    shown = ", ".join(str(s) for s in range(1, 9))
    assert f"the dumps have steps {shown}{' … (9 in all)' if n == 9 else ','}" in str(err.value)


def test_groups_of_one_row_are_allowed_and_zero_is_not(synth_path, tmp_path):
    rows = read_train_data(dumps(synth_path, tmp_path, config()))
    assert group_rows(rows, 1)[1] == "blocks of 1 rows"
    with pytest.raises(ConfigError, match="--group-size must be at least 1, got 0"):
        group_rows(rows, 0)


def test_a_row_moved_by_exactly_the_tolerance_still_reproduces(tmp_path):
    # Mean baseline without normalisation on binary rewards: A = ±0.5, and a logged value moved by
    # exactly 2^-16 sits on the tolerance (2^-16 x max(1, |A|)): not past it.
    frame = rollouts(reward=[1.0, 1.0, 0.0, 0.0])
    cfg = config({"enabled": False}, {"baseline": "mean", "normalize": False})
    rows = api.replay(rollouts_from_frame(frame), cfg).result.rows
    rows = rows.with_columns(pl.col("advantage") + pl.Series([2.0**-16, 0.0, 0.0, 0.0]))
    log = read_train_data(write_train_data(rows, tmp_path / "dumps"))
    assert verify(log, tolerance=2.0**-16).best["differing_rows"] == 0
    assert verify(log, tolerance=2.0**-17).best["differing_rows"] == 1


def test_a_directory_of_dumps_is_read_in_step_order(tmp_path):
    """Numeric order (step 2 before step 10, which a name sort puts first); files as given."""
    from replay_cli.io.train_data import dump_files

    for name in ("train_data_step10.jsonl", "train_data_step2.jsonl", "train_data_step1.jsonl"):
        (tmp_path / name).write_text("")
    (tmp_path / "other.jsonl").write_text("")
    got = [p.name for p in dump_files([tmp_path])]
    assert got == ["train_data_step1.jsonl", "train_data_step2.jsonl", "train_data_step10.jsonl"]
    given = [tmp_path / "train_data_step10.jsonl", tmp_path / "train_data_step2.jsonl"]
    assert dump_files(given) == given
