"""Tests for `import table` (io/tables.py): rollouts from CSV, JSON lines, Arrow and Hugging Face
datasets (saved with the `datasets` library itself), renamed with --map, refused as a replay would
refuse them, and the hints that point a CSV or a run-time-like column at the way in."""

import sys

import polars as pl
import pytest
from typer.testing import CliRunner

from replay_cli import api
from replay_cli.cli.app import app
from replay_cli.errors import ConfigError, InputFileError, SchemaError

runner = CliRunner()
ROWS = {
    "task": ["a", "a", "b", "b"],
    "wall_seconds": [60.0, 120.0, 30.0, 90.0],
    "score": [1.0, 0.0, 1.0, 1.0],
    "ok": [True, False, True, True],
}
MAP = ["task=group_id", "wall_seconds=openhands_run_time", "score=reward", "ok=resolved"]
CANONICAL = {
    "group_id": ["a", "a", "b", "b"],
    "openhands_run_time": [60.0, 120.0, 30.0, 90.0],
    "reward": [1.0, 0.0, 1.0, 1.0],
    "resolved": [True, False, True, True],
}


def frame():
    return pl.DataFrame(ROWS)


def imported(path, out, **kwargs):
    api.import_logs("table", [path], out, mapping=MAP, **kwargs)
    return pl.read_parquet(out)


def _write(kind, path):
    if kind == "csv":
        frame().write_csv(path)
    elif kind == "tsv":
        frame().write_csv(path, separator="\t")
    elif kind == "jsonl":
        frame().write_ndjson(path)
    elif kind == "arrow-file":
        frame().write_ipc(path)
    elif kind == "arrow-stream":
        frame().write_ipc_stream(path)


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("csv", "r.csv"),
        ("tsv", "r.tsv"),
        ("jsonl", "r.jsonl"),
        ("arrow-file", "r.arrow"),
        ("arrow-stream", "r.arrow"),
    ],
)
def test_each_file_format_imports_to_the_same_rows(tmp_path, kind, name):
    path = tmp_path / name
    _write(kind, path)
    back = imported(path, tmp_path / "o.parquet")
    assert back.select(list(CANONICAL)).to_dict(as_series=False) == CANONICAL
    result = runner.invoke(
        app, ["replay", str(tmp_path / "o.parquet"), "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output


def test_a_dataset_saved_with_save_to_disk_is_read_without_datasets(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets", reason="needs the extra replay-cli[hf]")

    data = datasets.Dataset.from_dict(ROWS)
    data.save_to_disk(str(tmp_path / "saved"))
    splits = datasets.DatasetDict({"train": data, "test": data.select([0, 1])})
    splits.save_to_disk(str(tmp_path / "splits"))
    monkeypatch.setitem(sys.modules, "datasets", None)  # reading needs pyarrow alone
    back = imported(tmp_path / "saved", tmp_path / "a.parquet")
    assert back.select(list(CANONICAL)).to_dict(as_series=False) == CANONICAL
    test = imported(tmp_path / "splits", tmp_path / "b.parquet", split="test")
    assert test["reward"].to_list() == [1.0, 0.0]
    with pytest.raises(ConfigError, match="holds the splits train, test; pick one with --split"):
        imported(tmp_path / "splits", tmp_path / "c.parquet")


def test_a_split_a_one_split_dataset_lacks_is_refused_not_replaced_by_the_one(tmp_path):
    datasets = pytest.importorskip("datasets", reason="needs the extra replay-cli[hf]")

    datasets.DatasetDict({"train": datasets.Dataset.from_dict(ROWS)}).save_to_disk(
        str(tmp_path / "one")
    )
    only = imported(tmp_path / "one", tmp_path / "a.parquet")  # no --split: the only one
    assert only["reward"].to_list() == ROWS["score"]
    with pytest.raises(ConfigError, match="holds the splits train; pick one with --split NAME"):
        imported(tmp_path / "one", tmp_path / "b.parquet", split="test")
    out = tmp_path / "c.parquet"
    args = ["import", "table", str(tmp_path / "one"), "--out", str(out), "--split", "test"]
    result = runner.invoke(app, [*args, *(f"--map={m}" for m in MAP)])
    assert result.exit_code == 2
    assert "holds the splits train; pick one with --split NAME" in result.output
    assert not out.exists()


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_a_column_without_a_value_imports_as_nulls_and_replays(tmp_path, kind):
    """A CSV reads a column with no value as text and JSON lines as Null; either is the nulls
    of the column's own type, as a Parquet file of the same table holds them."""
    path = tmp_path / f"r.{kind}"
    table = frame().with_columns(score=pl.lit(None, pl.Float64), ok=pl.lit(None, pl.Boolean))
    table.write_csv(path) if kind == "csv" else table.write_ndjson(path)
    back = imported(path, tmp_path / "o.parquet")
    assert back["reward"].null_count() == back["resolved"].null_count() == 4
    out = tmp_path / "r"
    result = runner.invoke(app, ["replay", str(tmp_path / "o.parquet"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = pl.read_parquet(out / "rollouts.parquet")
    assert rows["reward_raw"].null_count() == 4  # kept as logged, shaped as 0 (spec §3.2)
    assert rows["reward_shaped"].to_list() == pytest.approx((-rows["minutes"] / 60).to_list())
    assert rows["resolved"].to_list() == [False] * 4


def test_ids_that_look_like_dates_stay_text(tmp_path):
    """A CSV's values are not parsed as dates: a task id such as 2024-01-05 would become a Date
    group_id, which a replay refuses."""
    path = tmp_path / "r.csv"
    days = ["2024-01-05", "2024-01-05", "2024-01-06", "2024-01-06"]
    frame().with_columns(task=pl.Series(days)).write_csv(path)
    back = imported(path, tmp_path / "o.parquet")
    assert back.schema["group_id"] == pl.String
    assert back["group_id"].to_list() == days
    result = runner.invoke(
        app, ["replay", str(tmp_path / "o.parquet"), "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output


def test_a_hub_name_needs_the_extra_and_the_network(tmp_path, monkeypatch):
    with monkeypatch.context() as without:
        without.setitem(sys.modules, "datasets", None)
        with pytest.raises(ConfigError, match=r"replay-cli\[hf\]"):
            api.import_logs("table", ["someorg/rollouts"], tmp_path / "o.parquet")
    datasets = pytest.importorskip("datasets", reason="needs the extra replay-cli[hf]")

    asked = []

    def load_dataset(name, split):  # the Hub, offline: what it returns and how it fails
        asked.append((name, split))
        if name == "someorg/missing":
            raise ConnectionError(f"Couldn't reach {name!r} on the Hub (OfflineModeIsEnabled)")
        return datasets.Dataset.from_dict(ROWS)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    back = imported("someorg/rollouts", tmp_path / "o.parquet", split="validation")
    assert back.select(list(CANONICAL)).to_dict(as_series=False) == CANONICAL
    assert asked == [("someorg/rollouts", "validation")]
    with pytest.raises(InputFileError, match="Cannot load the Hub dataset 'someorg/missing'"):
        api.import_logs("table", ["someorg/missing"], tmp_path / "m.parquet")
    assert not (tmp_path / "m.parquet").exists()


def test_a_table_a_replay_would_refuse_is_not_written_and_the_message_names_it(tmp_path):
    path = tmp_path / "r.csv"
    frame().write_csv(path)
    out = tmp_path / "o.parquet"
    result = runner.invoke(app, ["import", "table", str(path), "--out", str(out)])
    assert result.exit_code == 2
    assert f"{path}: required column 'reward' is missing" in result.output
    assert "'wall_seconds' looks like a run time in seconds: try --map " in result.output
    assert "Traceback" not in result.output
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]


def test_map_names_a_column_the_table_lacks(tmp_path):
    path = tmp_path / "r.csv"
    frame().write_csv(path)
    with pytest.raises(
        SchemaError, match=r"(?s)--map names column\(s\) \['nope'\].*Its columns: task"
    ):
        api.import_logs("table", [path], tmp_path / "o.parquet", mapping=["nope=reward"])


def test_group_size_numbers_groups_as_the_loader_would(tmp_path):
    path = tmp_path / "r.csv"
    frame().drop("task").write_csv(path)
    out = tmp_path / "o.parquet"
    mapping = [m for m in MAP if not m.startswith("task")]
    api.import_logs("table", [path], out, mapping=mapping, group_size=2)
    back = pl.read_parquet(out)
    assert back["group_id"].to_list() == [0, 0, 1, 1]
    assert back["rollout_index"].to_list() == [0, 1, 0, 1]


def test_a_csv_given_to_replay_is_pointed_at_import_table(tmp_path):
    path = tmp_path / "rollouts.csv"
    frame().write_csv(path)
    result = runner.invoke(app, ["replay", str(path), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert f"`replay-cli import table {path} --out rollouts.parquet`" in result.output


def test_an_unknown_suffix_is_named(tmp_path):
    path = tmp_path / "r.xlsx"
    path.write_bytes(b"PK")
    with pytest.raises(InputFileError, match="cannot tell its format from its suffix"):
        api.import_logs("table", [path], tmp_path / "o.parquet")


def test_a_column_that_looks_like_the_call_count_is_pointed_at_calls(tmp_path):
    # Kept without a word, n_calls left `calls` at its default 0, and a call bonus paid nothing.
    path = tmp_path / "r.csv"
    frame().with_columns(n_calls=pl.Series([3, 10, 20, 5])).write_csv(path)
    out = tmp_path / "o.parquet"
    maps = [arg for m in MAP for arg in ("--map", m)]
    result = runner.invoke(app, ["import", "table", str(path), "--out", str(out), *maps])
    assert result.exit_code == 0, result.output
    assert (
        "Note: no 'calls' column, so every row counts 0; 'n_calls' looks like the tool-call "
        "count: try --map n_calls=calls" in result.output
    )
    assert "n_calls" in pl.read_parquet(out).columns  # kept, for a re-import or --map
    again = tmp_path / "again.parquet"
    maps += ["--map", "n_calls=calls"]
    result = runner.invoke(app, ["import", "table", str(path), "--out", str(again), *maps])
    assert result.exit_code == 0, result.output
    assert "Note:" not in result.output
    assert pl.read_parquet(again)["calls"].to_list() == [3, 10, 20, 5]
