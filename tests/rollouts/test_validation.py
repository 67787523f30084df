"""Tests for replay_cli.rollouts.validation: aliases, defaults and every input problem reported at once."""

import re

import polars as pl
import pytest

from replay_cli.errors import InputFileError, SchemaError
from replay_cli.rollouts import value_checks
from replay_cli.rollouts.validation import load_rollouts
from replay_cli.rollouts.value_checks import problems_message


def write(tmp_path, name="in.parquet", **columns):
    path = tmp_path / name
    pl.DataFrame(columns).write_parquet(path)
    return path


def test_aliases_are_recognised(tmp_path):
    path = write(
        tmp_path,
        _ng_task_index=[3, 3],
        _ng_rollout_index=[0, 1],
        reward=[1.0, 0.0],
        run_time_s=[60.0, 120.0],
        instance_config_mask_sample=[False, True],
    )
    frame = load_rollouts([path]).frame.collect()
    assert frame["group_id"].to_list() == [3, 3]
    assert frame["rollout_index"].to_list() == [0, 1]
    assert frame["openhands_run_time"].to_list() == [60.0, 120.0]
    assert frame["mask_sample"].to_list() == [False, True]


def test_defaults_and_derived_resolved(tmp_path):
    path = write(tmp_path, group_id=["a", "a"], reward=[1.0, 0.0], openhands_run_time=[None, 5.0])
    loaded = load_rollouts([path])
    frame = loaded.frame.collect()
    assert loaded.resolved_derived
    assert frame["resolved"].to_list() == [True, False]
    assert frame["step"].to_list() == [0, 0]
    assert frame["calls"].to_list() == [0, 0]
    assert frame["split"].to_list() == ["train", "train"]
    assert any("resolved = reward > 0" in n for n in loaded.notes)


def test_directories_and_globs(tmp_path):
    (tmp_path / "d").mkdir()
    write(tmp_path / "d", "a.parquet", group_id=[1], reward=[1.0], openhands_run_time=[1.0])
    write(tmp_path / "d", "b.parquet", group_id=[2], reward=[0.0], openhands_run_time=[1.0])
    assert load_rollouts([tmp_path / "d"]).frame.collect().height == 2
    assert load_rollouts([str(tmp_path / "d" / "*.parquet")]).frame.collect().height == 2


def test_all_problems_reported_at_once(tmp_path):
    path = write(tmp_path, group_id=[1, 1], reward=["x", "y"], resolved=["yes", "no"])
    with pytest.raises(SchemaError) as err:
        load_rollouts([path])
    text = str(err.value)
    assert text.startswith("3 problems in the rollout input:")
    assert "required column 'openhands_run_time' is missing" in text
    assert "column 'reward' has type String, expected a number" in text
    assert "column 'resolved' has type String, expected a boolean" in text
    assert str(path) in text


def test_value_problems_name_rows(tmp_path):
    path = write(
        tmp_path,
        group_id=[1, 1, None, 2],
        rollout_index=[0, 0, 0, 0],
        reward=[1.0, float("nan"), 0.0, 0.0],
        openhands_run_time=[1.0, 1.0, 1.0, 1.0],
        split=["train", "train", "train", "test"],
    )
    with pytest.raises(SchemaError) as err:
        load_rollouts([path])
    text = str(err.value)
    assert f"column 'group_id' is null in 1 row(s), first: {path} row 2" in text
    assert f"column 'reward' is NaN or infinite in 1 row(s), first: {path} row 1" in text
    assert "column 'split' is not 'train' or 'validation' in 1 row(s)" in text
    assert f"duplicate key in 2 row(s), first: {path} row 0; {path} row 1" in text


def test_missing_group_column_hints_group_size(tmp_path):
    path = write(tmp_path, reward=[1.0], openhands_run_time=[1.0])
    with pytest.raises(SchemaError, match="try --group-size N"):
        load_rollouts([path])


def test_group_size_block_with_two_steps_is_an_error(tmp_path):
    path = write(
        tmp_path, step=[1, 2, 2, 2], reward=[1.0, 0.0, 0.0, 1.0], openhands_run_time=[1.0] * 4
    )
    with pytest.raises(SchemaError, match="differs inside a group of 2 consecutive rows"):
        load_rollouts([path], group_size=2)


def test_strict_rejects_nan_run_times(tmp_path):
    path = write(tmp_path, group_id=[1], reward=[1.0], openhands_run_time=[float("inf")])
    load_rollouts([path])
    with pytest.raises(SchemaError, match="openhands_run_time' is NaN or infinite"):
        load_rollouts([path], strict=True)


def test_non_numeric_run_time_strings_become_zero_minutes(tmp_path):
    path = write(tmp_path, group_id=[1, 1], reward=[1.0, 1.0], openhands_run_time=["120", "n/a"])
    frame = load_rollouts([path]).frame.collect()
    assert frame["openhands_run_time"].to_list() == [120.0, None]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"PAR1garbage", "not a complete Parquet file (it may be truncated)"),
        (b"a,b\n1,2\n", "import"),
    ],
)
def test_bad_files(tmp_path, content, message):
    path = tmp_path / "bad.parquet"
    path.write_bytes(content)
    with pytest.raises(InputFileError, match=re.escape(message)):
        load_rollouts([path])


def test_corrupt_footer_is_an_input_error(tmp_path):
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1")
    with pytest.raises(InputFileError, match="Cannot read"):
        load_rollouts([path])


def test_empty_directory(tmp_path):
    with pytest.raises(InputFileError, match="holds no"):
        load_rollouts([tmp_path])


def test_zero_rows(tmp_path):
    path = tmp_path / "empty.parquet"
    pl.DataFrame(
        schema={"group_id": pl.Int64, "reward": pl.Float64, "openhands_run_time": pl.Float64}
    ).write_parquet(path)
    with pytest.raises(SchemaError, match="zero rows"):
        load_rollouts([path])


def test_inputs_are_not_modified(tmp_path):
    path = write(tmp_path, group_id=[1, 1], reward=[1.0, 0.0], openhands_run_time=[60.0, 60.0])
    before = path.read_bytes()
    load_rollouts([path]).frame.collect()
    assert path.read_bytes() == before


def test_a_reports_rollouts_replay_again_from_their_own_inputs(tmp_path):
    """A report's rollouts.parquet (or any input with a column named like one the replay writes,
    e.g. source_row) loads with those columns dropped and a note, and replays to the same tables
    instead of a polars DuplicateError."""
    from polars.testing import assert_frame_equal
    from typer.testing import CliRunner

    from replay_cli.cli.app import app

    sample = "data_samples/rollouts_medium.parquet"
    first, again = tmp_path / "first", tmp_path / "again"
    runner = CliRunner()
    for src, out in ((sample, first), (first / "rollouts.parquet", again)):
        res = runner.invoke(app, ["replay", str(src), "--out", str(out), "--no-charts"])
        assert res.exit_code == 0, res.output
    for table in ("summary", "steps", "groups"):
        assert_frame_equal(
            pl.read_parquet(first / f"{table}.parquet"), pl.read_parquet(again / f"{table}.parquet")
        )
    ro = load_rollouts([first / "rollouts.parquet"])
    assert "source_row" in ro.frame.collect_schema().names()  # numbered afresh
    assert "config_id" not in ro.frame.collect_schema().names()
    assert ro.notes[0].endswith(
        "ignored 21 column(s) that a replay writes itself (source_row, source_file, config_id, "
        "reward_raw, reward_shaped, minutes, ...); they are recomputed"
    )
    # --map can still take such a column as an input.
    path = write(
        tmp_path,
        reward=[1.0, 0.0],
        resolved=[True, False],
        openhands_run_time=[60.0] * 2,
        step=[1, 1],
        config_id=[7, 7],
    )
    mapped = load_rollouts([path], mapping={"config_id": "group_id"})
    assert not any("ignored" in note for note in mapped.notes)
    assert mapped.frame.select("group_id").collect()["group_id"].to_list() == [7, 7]


def test_duplicate_keys_are_found_in_an_unordered_input(tmp_path):
    path = write(
        tmp_path,
        group_id=[2, 1, 2],
        rollout_index=[0, 0, 0],
        reward=[1.0, 0.0, 0.0],
        openhands_run_time=[1.0] * 3,
    )
    with pytest.raises(SchemaError) as err:
        load_rollouts([path])
    assert f"duplicate key in 2 row(s), first: {path} row 0; {path} row 2" in str(err.value)


def test_a_run_time_of_exactly_a_week_is_allowed_and_five_rows_are_shown(tmp_path):
    week = 7 * 24 * 3600.0
    ok = write(tmp_path, "week.parquet", group_id=[1], reward=[1.0], openhands_run_time=[week])
    load_rollouts([ok])  # no problem raised
    path = write(
        tmp_path,
        group_id=[1] * 7,
        reward=[1.0] * 7,
        openhands_run_time=[week + 1.0] * 7,
    )
    with pytest.raises(SchemaError) as err:
        load_rollouts([path])
    shown = "; ".join(f"{path} row {i}" for i in range(5))
    assert f"in 7 row(s), first: {shown}\n" in str(err.value)


def test_group_size_blocks_within_one_step_load(tmp_path):
    # Without group ids, --group-size 2 cuts each step's rows into blocks of 2: one group per step.
    path = write(
        tmp_path, step=[1, 1, 2, 2], reward=[1.0, 0.0, 0.0, 1.0], openhands_run_time=[1.0] * 4
    )
    loaded = load_rollouts([path], group_size=2)
    frame = loaded.chunk(0, 10).collect().sort("step", "rollout_index")
    assert frame.select("step", "group_id", "rollout_index").rows() == [
        (1, 0, 0),
        (1, 0, 1),
        (2, 1, 0),
        (2, 1, 1),
    ]
    assert frame["reward"].to_list() == [1.0, 0.0, 0.0, 1.0]


def test_null_values_are_no_value_problem(tmp_path):
    # A null reward (read as 0), run time (input/run_time_null) or call count is not refused.
    path = write(
        tmp_path,
        group_id=[1, 1],
        reward=[None, 0.0],
        openhands_run_time=[None, 60.0],
        calls=[None, 3],
    )
    loaded = load_rollouts([path])
    assert loaded.counts["len"].to_list() == [2]  # every value checked, none refused
    frame = loaded.frame.collect()
    assert frame["reward"].to_list() == [None, 0.0]  # kept as logged; shaping reads null as 0
    assert frame["openhands_run_time"].to_list() == [None, 60.0]
    assert frame["calls"].to_list() == [0, 3]  # an optional column's null is its default
    assert frame["mask_sample"].to_list() == [False, False]  # absent: the default


def test_a_column_with_no_value_at_all_reads_as_its_nulls(tmp_path):
    """JSON lines type a column whose every value is null as Null (no other type fits): a
    nullable column of that type reads as the same nulls of its own type would."""
    empty = pl.Series([None, None], dtype=pl.Null)
    names = ("reward", "resolved", "calls", "mask_sample", "split", "zeroed_by_penalty")
    nulls = write(
        tmp_path,
        "nulls.parquet",
        group_id=[1, 1],
        rollout_index=empty,
        openhands_run_time=[60.0, 120.0],
        **dict.fromkeys(names, empty),
    )
    frame = load_rollouts([nulls]).frame.collect()
    assert frame["reward"].dtype == pl.Float64
    assert frame["reward"].to_list() == [None, None]
    assert frame.select(names[1:]).rows() == [(False, 0, False, "train", False)] * 2
    assert frame["rollout_index"].dtype == pl.Int64


@pytest.mark.parametrize(
    ("index", "want"),
    [
        ([0, None, 2, 3], [0, 1, 2, 3]),  # one null: the fill must still run
        ([None, None, 2, 3], [0, 1, 2, 3]),
        ([0, 1, 2, 3], [0, 1, 2, 3]),
    ],
)
def test_a_partly_null_rollout_index_is_filled_with_the_rows_position(tmp_path, index, want):
    path = write(
        tmp_path,
        group_id=[1] * 4,
        rollout_index=pl.Series(index, dtype=pl.Int64),
        reward=[1.0, 0.0, 0.0, 1.0],
        openhands_run_time=[60.0] * 4,
    )
    loaded = load_rollouts([path])
    assert loaded.fill_positions == (None in index)
    assert loaded.chunk(0, 10).collect()["rollout_index"].to_list() == want


def test_at_most_five_offending_rows_are_shown_over_many_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(value_checks, "CHECK_CHUNK_ROWS", 1)  # one step per chunk
    path = write(
        tmp_path,
        step=list(range(7)),
        group_id=list(range(7)),
        reward=[1.0] * 7,
        openhands_run_time=[1e9] * 7,
    )
    with pytest.raises(SchemaError) as err:
        load_rollouts([path])
    shown = "; ".join(f"{path} row {i}" for i in range(5))
    assert f"in 7 row(s), first: {shown}\n" in str(err.value)


@pytest.mark.parametrize(("n", "head"), [(1, "1 problem in"), (2, "2 problems in")])
def test_the_problem_count_is_singular_or_plural(n, head):
    assert problems_message(["a", "b"][:n]).startswith(f"{head} the rollout input:")


def test_an_alias_stands_in_for_a_missing_canonical_column_only(tmp_path):
    from replay_cli.rollouts.validation import rollouts_from_frame

    base = {"reward": [1.0, 0.0], "openhands_run_time": [60.0, 60.0]}
    alone = rollouts_from_frame(pl.DataFrame({**base, "_ng_task_index": [4, 4]}))
    assert alone.frame.collect()["group_id"].to_list() == [4, 4]
    both = rollouts_from_frame(pl.DataFrame({**base, "_ng_task_index": [4, 4], "group_id": [1, 2]}))
    assert both.frame.collect()["group_id"].to_list() == [1, 2]  # the canonical column wins


def test_a_column_some_files_lack_is_named_with_how_many_more(tmp_path):
    paths = [
        write(tmp_path, f"f{k}.parquet", group_id=[1], reward=[1.0], openhands_run_time=[1.0])
        for k in range(3)
    ]
    pl.DataFrame(
        {"group_id": [1], "reward": [1.0], "openhands_run_time": [1.0], "calls": [3]}
    ).write_parquet(paths[0])
    with pytest.raises(
        SchemaError,
        match=r"column 'calls' is in .*f0.parquet but missing from "
        r".*f1.parquet and 1 more; the files' schemas must agree",
    ):
        load_rollouts(paths)
