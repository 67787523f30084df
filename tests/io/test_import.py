"""Tests for replay_cli.io importers: NeMo-Gym JSONL and W&B tables, good and malformed."""

import json

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay_cli.cli.app import app
from replay_cli.errors import ConfigError, InputFileError, RowError
from replay_cli.io.gym import count_calls, to_float
from replay_cli.io.importers import import_logs
from replay_cli.io.jsonl import full_decode
from replay_cli.io.wandb import step_from_name
from replay_cli.rollouts.synth import synth_rollouts

from writers import write_gym_jsonl, write_wandb_table

runner = CliRunner()
ROW = {
    "_ng_task_index": 3,
    "_ng_rollout_index": 0,
    "reward": 1.0,
    "resolved": True,
    "openhands_run_time": 120.5,
    "response": {
        "output": [{"type": "function_call"}, {"type": "message"}, {"type": "function_call"}]
    },
    "instance_config": {"mask_sample": True},
    "agent_timed_out": False,
    "agent_error_kind": "max_iteration",
    "total_model_call_time": 33.0,
}


def jsonl(tmp_path, *records, name="rollouts.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_gym_row_fields(tmp_path):
    out = tmp_path / "o.parquet"
    import_logs("nemo-gym", [jsonl(tmp_path, ROW)], out, step=4)
    row = pl.read_parquet(out).row(0, named=True)
    assert row["step"] == 4
    assert (row["group_id"], row["rollout_index"]) == (3, 0)
    assert row["calls"] == 2
    assert row["mask_sample"] is True
    assert row["openhands_run_time"] == 120.5
    assert row["agent_error_kind"] == "max_iteration"
    assert row["total_model_call_time"] == 33.0


def test_full_result_nested_and_string_run_time(tmp_path):
    record = {"_ng_task_index": 1, "full_result": {**ROW, "openhands_run_time": "90"}}
    out = tmp_path / "o.parquet"
    import_logs("nemo-gym", [jsonl(tmp_path, record)], out)
    assert pl.read_parquet(out)["openhands_run_time"].to_list() == [90.0]


def test_upstream_conversions():
    assert to_float("120") == 120.0
    assert to_float("n/a") is None
    assert to_float(True) == 1.0
    assert count_calls({"response": {"output": "oops"}}) == 0
    assert count_calls({"response": {"output": [{"type": "function_call"}, "x", None]}}) == 1


def test_round_trip_from_synth(tmp_path):
    frame = synth_rollouts(steps=1, groups_per_step=3, group_size=4, seed=2)
    write_gym_jsonl(frame, tmp_path / "r.jsonl")
    out = tmp_path / "o.parquet"
    import_logs("nemo-gym", [tmp_path / "r.jsonl"], out, step=1)
    back = pl.read_parquet(out)
    for col in (
        "group_id",
        "rollout_index",
        "reward",
        "resolved",
        "openhands_run_time",
        "calls",
        "mask_sample",
    ):
        assert back[col].to_list() == frame[col].to_list(), col


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ('["a", "list"]', "expected a JSON object, got list"),
        (json.dumps({**ROW, "_ng_task_index": None}), "missing integer _ng_task_index"),
        (json.dumps({**ROW, "reward": "high"}), "reward 'high' is not a number"),
        (json.dumps({**ROW, "instance_config": [1]}), "instance_config is not an object"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path, line, message):
    path = jsonl(tmp_path, ROW, line)
    with pytest.raises(InputFileError, match=f"{path}:2: .*{message}"):
        import_logs("nemo-gym", [path], tmp_path / "o.parquet")
    assert not (tmp_path / "o.parquet").exists()


def test_skip_bad_lines_counts_them(tmp_path):
    path = jsonl(tmp_path, ROW, "{oops", {**ROW, "_ng_rollout_index": 1})
    stats = import_logs("nemo-gym", [path], tmp_path / "o.parquet", skip_bad=True)
    assert (stats.rows, stats.bad_lines) == (2, 1)
    assert stats.first_bad[0].startswith(f"{path}:2:")


def test_empty_file(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text("")
    with pytest.raises(InputFileError, match="is empty"):
        import_logs("nemo-gym", [path], tmp_path / "o.parquet")


def test_group_size_when_no_task_index(tmp_path):
    rows = [{k: v for k, v in ROW.items() if not k.startswith("_ng")} for _ in range(4)]
    out = tmp_path / "o.parquet"
    import_logs("nemo-gym", [jsonl(tmp_path, *rows)], out, group_size=2)
    assert pl.read_parquet(out)["group_id"].to_list() == [0, 0, 1, 1]


def test_wandb_table_step_from_name(tmp_path):
    frame = synth_rollouts(steps=1, groups_per_step=2, group_size=4, seed=3)
    path = tmp_path / "train_swe_agents_full_result_7_ab12cd.table.json"
    write_wandb_table(frame, path)
    out = tmp_path / "o.parquet"
    import_logs("wandb-table", [path], out)
    back = pl.read_parquet(out)
    assert back["step"].unique().to_list() == [8]  # W&B named step 8's table after step 7
    assert back["reward"].to_list() == frame["reward"].to_list()
    assert step_from_name(tmp_path / "table_step12.json") == 12


def test_wandb_names_a_steps_table_after_the_previous_step(tmp_path, monkeypatch):
    """The naming rule, from the wandb package itself: an offline run logged as NeMo-RL logs
    (one call per step with the train metrics and the full_result table, step=k) names step k's
    table `full_result_<k-1>_<hash>.table.json`, and the import reads each back at its step."""
    wandb = pytest.importorskip("wandb", reason="needs the extra replay-cli[wandb]")

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    frame = synth_rollouts(steps=3, groups_per_step=2, group_size=2, seed=4)
    run = wandb.init(project="replay-cli-test", dir=str(tmp_path), mode="offline")
    try:
        for (step,), part in frame.group_by("step", maintain_order=True):
            cells = json.loads(_table_json(part))["data"]
            table = wandb.Table(columns=["Full result"], data=cells)
            run.log({"train/reward": 0.5, "train/swe_agents/full_result": table}, step=step)
    finally:
        run.finish()
        wandb.teardown()  # finish() returns before the writer has flushed the log
    files = sorted(tmp_path.glob("wandb/offline-run-*/files/media/table/**/*.table.json"))
    assert [f.name.split("_")[2] for f in files] == ["0", "1", "2"]
    out = tmp_path / "o.parquet"
    import_logs("wandb-table", files, out)
    back = pl.read_parquet(out)
    assert back["step"].to_list() == frame["step"].to_list()
    assert back["reward"].to_list() == frame["reward"].to_list()
    # The run directory itself: each table at the step its history logged it.
    (run_dir,) = tmp_path.glob("wandb/offline-run-*")
    import_logs("wandb-table", [run_dir], tmp_path / "d.parquet")
    assert pl.read_parquet(tmp_path / "d.parquet").equals(back)
    with pytest.raises(ConfigError, match="gives each table its own step"):
        import_logs("wandb-table", [run_dir], tmp_path / "e.parquet", step=3)


def _table_json(frame: pl.DataFrame) -> str:
    from pathlib import Path
    from tempfile import TemporaryDirectory

    with TemporaryDirectory() as d:
        path = Path(d) / "t.table.json"
        write_wandb_table(frame, path)
        return path.read_text()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "is not valid JSON"),
        ('{"rows": []}', "is not a W&B table"),
        ('{"data": [["{}"]]}', "is not a W&B table"),  # no columns
        ('{"columns": ["full_result"]}', "is not a W&B table"),  # no data
        ('{"columns": "full_result", "data": []}', "is not a W&B table"),
        ('[["{}"]]', "is not a W&B table"),
        ('{"columns": ["a", "b"], "data": []}', "no 'full_result' column"),
    ],
)
def test_bad_tables(tmp_path, content, message):
    path = tmp_path / "t_1_ab.table.json"
    path.write_text(content)
    with pytest.raises(InputFileError, match=message):
        import_logs("wandb-table", [path], tmp_path / "o.parquet")


def test_a_table_without_columns_is_a_clear_error_on_the_command_line(tmp_path):
    path = tmp_path / "t_1_ab.table.json"
    path.write_text('{"data": [["{}"]]}')
    out = tmp_path / "o.parquet"
    result = runner.invoke(app, ["import", "wandb-table", str(path), "--out", str(out)])
    assert result.exit_code == 2
    assert result.output == (
        f'Error: {path} is not a W&B table: expected {{"columns": [...], "data": [[...]]}}.\n'
    )
    assert not out.exists()


def test_wandb_table_without_step_needs_one(tmp_path):
    path = tmp_path / "full_result.table.json"
    path.write_text('{"columns": ["full_result"], "data": []}')
    with pytest.raises(InputFileError, match="Pass --step N"):
        import_logs("wandb-table", [path], tmp_path / "o.parquet")


def test_import_command(tmp_path):
    path = jsonl(tmp_path, ROW, "{bad")
    out = tmp_path / "o.parquet"
    result = runner.invoke(
        app, ["import", "nemo-gym", str(path), "--out", str(out), "--skip-bad-lines"]
    )
    assert result.exit_code == 0, result.output
    assert "Wrote 1 rollouts" in result.output
    assert "Skipped 1 bad lines" in result.output
    result = runner.invoke(app, ["import", "nemo-gym", str(path), "--out", str(out)])
    assert result.exit_code == 2
    assert "already exists" in result.output


def test_import_unknown_format(tmp_path):
    result = runner.invoke(
        app, ["import", "csv", str(jsonl(tmp_path, ROW)), "--out", str(tmp_path / "o.parquet")]
    )
    assert result.exit_code == 2
    assert "Unknown import format 'csv'" in result.output


def test_instance_id_from_where_real_rows_carry_it(tmp_path):
    nested = {**ROW, "instance_config": {"problem_info": {"instance_id": "django__django-1"}}}
    request = {**ROW, "responses_create_params": {"metadata": {"instance_id": "astropy__a-2"}}}
    top = {**nested, "instance_id": "top-level"}
    out = tmp_path / "o.parquet"
    import_logs("nemo-gym", [jsonl(tmp_path, nested, request, top)], out, group_size=3)
    assert pl.read_parquet(out)["instance_id"].to_list() == [
        "django__django-1",
        "astropy__a-2",
        "top-level",
    ]


def test_mask_sample_top_level_first_then_instance_config(tmp_path):
    top = {**ROW, "mask_sample": False}  # NeMo-Gym 0.7: the top level wins over the nested flag
    nested = dict(ROW)
    absent = {**ROW, "instance_config": {}}
    path = jsonl(tmp_path, top, nested, absent)
    out = tmp_path / "o.parquet"
    result = runner.invoke(
        app, ["import", "nemo-gym", str(path), "--out", str(out), "--group-size", "3"]
    )
    assert result.exit_code == 0, result.output
    frame = pl.read_parquet(out)
    assert frame["mask_sample"].to_list() == [False, True, False]
    assert frame["mask_sample_source"].to_list() == [
        "mask_sample",
        "instance_config.mask_sample",
        "absent",
    ]
    assert (
        "mask_sample read from no field (taken as not masked) in 1 row; `instance_config."
        "mask_sample` in 1 row; the top-level `mask_sample` field in 1 row" in result.output
    )


@pytest.mark.parametrize(
    ("record", "kind"),
    [
        (
            {"_ng_task_index": 0, "_ng_rollout_index": 1, "responses_create_params": {}},
            "materialized-inputs",
        ),
        ({"_ng_task_index": 0, "_ng_rollout_index": 1}, "materialized-inputs"),
        ({"responses_create_params": {"input": []}}, "materialized-inputs"),
        (
            {"_ng_task_index": 0, "_ng_failure_reason": "timeout", "_ng_failure_type": "x"},
            "failures",
        ),
        ({"id": 3}, "a rollout has `reward` and `response`; this row has neither"),
    ],
)
def test_collector_sidecar_files_are_refused(tmp_path, record, kind):
    path = jsonl(tmp_path, record, record)
    out = tmp_path / "o.parquet"
    for extra in ([], ["--skip-bad-lines"]):  # never skipped line by line
        result = runner.invoke(app, ["import", "nemo-gym", str(path), "--out", str(out), *extra])
        assert result.exit_code == 2
        if kind.startswith("a rollout"):
            assert kind in result.output
        else:
            assert f"this is the collector's {kind} file" in result.output
            assert "pass the rollouts file beside it" in result.output
        assert not out.exists()


def test_wandb_table_groups_by_instance_id_within_its_step(tmp_path):
    # Real NeMo-RL tables carry no _ng_task_index: rollouts of one prompt share an instance id.
    frame = synth_rollouts(steps=1, groups_per_step=3, group_size=4, seed=3).sample(
        fraction=1.0, shuffle=True, seed=1
    )
    path = tmp_path / "train_swe_agents_full_result_2_ab12cd.table.json"
    write_wandb_table(frame, path)
    out = tmp_path / "o.parquet"
    import_logs("wandb-table", [path], out)
    back = pl.read_parquet(out)
    # One group per instance, numbered by first appearance, rollouts counted within it.
    expected_group = {iid: i for i, iid in enumerate(dict.fromkeys(back["instance_id"]))}
    assert back["group_id"].to_list() == [expected_group[i] for i in back["instance_id"]]
    assert back["instance_id"].to_list() == [f"task-{g}" for g in frame["group_id"]]
    sizes = back.group_by("group_id").len()["len"].to_list()
    assert sorted(sizes) == [4, 4, 4]
    assert (
        back.group_by("group_id").agg(pl.col("rollout_index").sort())["rollout_index"].to_list()
        == [[0, 1, 2, 3]] * 3
    )


def test_rows_without_any_group_key_ask_for_group_size_only(tmp_path):
    row = {k: v for k, v in ROW.items() if not k.startswith("_ng")}
    path = jsonl(tmp_path, row, row)
    for extra in ([], ["--skip-bad-lines"]):
        result = runner.invoke(
            app, ["import", "nemo-gym", str(path), "--out", str(tmp_path / "o.parquet"), *extra]
        )
        assert result.exit_code == 2
        assert "no _ng_task_index and no instance id" in result.output
        assert "--group-size N" in result.output
        assert "--skip-bad-lines" not in result.output


def _rows_both_ways(path, fmt="nemo-gym", **options):
    """The import of one file by the slim decoder and by full json.loads decoding."""
    slim_out, full_out = path.parent / "slim.parquet", path.parent / "full.parquet"
    import_logs(fmt, [path], slim_out, **options)
    import_logs(fmt, [path], full_out, decode=full_decode, **options)
    return pl.read_parquet(slim_out), pl.read_parquet(full_out)


def test_real_layout_rows_import_field_for_field(tmp_path):
    frame = synth_rollouts(steps=1, groups_per_step=6, group_size=4, seed=9)
    path = tmp_path / "rollouts.jsonl"
    write_gym_jsonl(frame, path, pad=20_000)
    slim, full = _rows_both_ways(path, step=1)
    assert slim.equals(full)
    assert slim["calls"].to_list() == frame["calls"].to_list()  # parallel calls counted
    assert slim["reward"].to_list() == frame["reward"].to_list()
    assert slim["openhands_run_time"].to_list() == frame["openhands_run_time"].to_list()
    assert slim["instance_id"].to_list() == [f"task-{g}" for g in frame["group_id"]]
    assert set(slim["mask_sample_source"]) == {"mask_sample"}
    assert slim["mask_sample"].to_list() == frame["mask_sample"].to_list()
    timed_out = frame["agent_timed_out"].to_list()
    assert slim["agent_timed_out"].to_list() == [True if t else None for t in timed_out]
    assert slim["total_model_call_time"].null_count() == slim.height


def test_real_layout_wandb_table_and_sidecars(tmp_path):
    from writers import write_collector_sidecars

    frame = synth_rollouts(steps=1, groups_per_step=3, group_size=4, seed=2)
    table = tmp_path / "train_swe_agents_full_result_4_0123ab.table.json"
    write_wandb_table(frame, table)
    assert json.loads(table.read_text())["columns"] == ["Full result"]
    slim, full = _rows_both_ways(table, fmt="wandb-table")
    assert slim.equals(full)
    assert slim["step"].unique().to_list() == [5]
    inputs, failures = write_collector_sidecars(frame, tmp_path, "rollouts")
    for path, kind in ((inputs, "materialized-inputs"), (failures, "failures")):
        with pytest.raises(InputFileError, match=f"the collector's {kind} file"):
            import_logs("nemo-gym", [path], tmp_path / "o.parquet")


_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-10, 10, allow_nan=False),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.sampled_from(["type", "x"]), st.text(max_size=3), max_size=2),
)
_KEYS = [
    "reward",
    "resolved",
    "openhands_run_time",
    "response",
    "instance_config",
    "responses_create_params",
    "mask_sample",
    "instance_id",
    "agent_timed_out",
    "_ng_task_index",
    "_ng_rollout_index",
]


@settings(max_examples=300, deadline=None)
@given(
    changes=st.dictionaries(
        st.sampled_from(_KEYS), st.one_of(st.just("<drop>"), _value), max_size=4
    )
)
def test_the_slim_decoder_reads_every_record_as_full_decoding_does(changes):
    from replay_cli.io import gym, slim

    base = {**ROW, "instance_config": {"mask_sample": True, "problem_info": {"instance_id": "i"}}}
    record = {k: v for k, v in base.items() if changes.get(k) != "<drop>"}
    record.update({k: v for k, v in changes.items() if v != "<drop>"})
    line = json.dumps(record).encode()

    def row_of(decode):
        try:
            return gym.rollout_row(decode(line), gym.Grouper(None))
        except (RowError, ValueError) as exc:  # the same error, message and all
            return (type(exc).__name__, str(exc))

    assert repr(row_of(slim.decode)) == repr(row_of(json.loads))  # repr: nan equals nan


def test_the_replays_manifest_says_where_mask_sample_came_from(tmp_path):
    frame = synth_rollouts(steps=1, groups_per_step=2, group_size=4, seed=6)
    path = tmp_path / "rollouts.jsonl"
    write_gym_jsonl(frame, path)
    imported = tmp_path / "rollouts.parquet"
    import_logs("nemo-gym", [path], imported, step=1)
    report = tmp_path / "report"
    result = runner.invoke(app, ["replay", str(imported), "--out", str(report)])
    assert result.exit_code == 0, result.output
    notes = json.loads((report / "manifest.json").read_text())["notes"]
    assert "mask_sample read from the top-level `mask_sample` field in 8 rows" in notes
    assert not any("(" in note for note in notes if note.startswith("mask_sample"))


def test_a_big_import_reports_its_progress_in_bytes(tmp_path):
    frame = synth_rollouts(steps=1, groups_per_step=4, group_size=4, seed=6)
    path = tmp_path / "rollouts.jsonl"
    write_gym_jsonl(frame, path, pad=50_000)
    seen = []
    import_logs(
        "nemo-gym", [path], tmp_path / "o.parquet", progress=lambda d, t: seen.append((d, t))
    )
    size = path.stat().st_size
    assert [t for _, t in seen] == [size] * len(seen)
    done = [d for d, _ in seen]
    assert done == sorted(done)
    assert done[-1] == size
    assert len(seen) == frame.height


# ---- what a mutant once got past (issue 38) ----------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 64])
def test_the_line_splitter_keeps_every_line_at_any_block_size(size):
    """A line whose newline is the first byte of the next block ends there: with blocks of 2,
    b"ab\\ncd\\nef\\n" reads as blocks ab | \\nc | d\\n | ef | \\n, and no line may merge."""
    from io import BytesIO

    from replay_cli.io.jsonl import _lines

    data = b"ab\ncd\nef\n" + b"g" * 7 + b"\nh"
    lines = [bytes(line) for line in _lines(BytesIO(data), size=size)]
    assert lines == [b"ab\n", b"cd\n", b"ef\n", b"g" * 7 + b"\n", b"h"]


def test_agent_ref_is_read_as_its_json_or_its_text(tmp_path):
    records = [
        {**ROW, "_ng_rollout_index": 0, "agent_ref": {"type": "agents", "name": "swe"}},
        {**ROW, "_ng_rollout_index": 1, "agent_ref": "swe_agents"},
        {**ROW, "_ng_rollout_index": 2},
    ]
    out = tmp_path / "o.parquet"
    import_logs("nemo-gym", [jsonl(tmp_path, *records)], out)
    assert pl.read_parquet(out)["agent_ref"].to_list() == [
        '{"name": "swe", "type": "agents"}',
        "swe_agents",
        None,
    ]


def test_a_multi_file_import_reports_progress_across_all_files(tmp_path):
    """Bytes read count on from file to file: never backwards, ending at the total."""
    paths = []
    for k in range(3):
        frame = synth_rollouts(steps=1, groups_per_step=2, group_size=2, seed=k)
        paths.append(tmp_path / f"part{k}.jsonl")
        write_gym_jsonl(frame, paths[-1], pad=10_000)
    seen = []
    import_logs(
        "nemo-gym", paths, tmp_path / "o.parquet", progress=lambda d, t: seen.append((d, t))
    )
    total = sum(p.stat().st_size for p in paths)
    assert {t for _, t in seen} == {total}
    done = [d for d, _ in seen]
    assert done == sorted(done)
    assert done[-1] == total
    assert len(done) == 12
    assert done[3] == paths[0].stat().st_size < done[4]  # the second file counts on


def test_blank_and_whitespace_lines_are_skipped_and_a_deeply_indented_record_is_read(tmp_path):
    lines = ["", json.dumps({**ROW, "_ng_rollout_index": 0}), "   \t", "", " " * 70]
    lines += [" " * 70 + json.dumps({**ROW, "_ng_rollout_index": 1}), ""]
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o.parquet"
    stats = import_logs("nemo-gym", [path], out)
    assert (stats.rows, stats.bad_lines) == (2, 0)
    assert pl.read_parquet(out)["rollout_index"].to_list() == [0, 1]


@pytest.mark.parametrize(("size", "groups"), [(1, [0, 1, 2]), (3, [0, 0, 0])])
def test_a_group_size_of_one_is_a_group_per_row_and_zero_is_refused(tmp_path, size, groups):
    rows = [{k: v for k, v in ROW.items() if k != "_ng_task_index"}] * 3
    out = tmp_path / "o.parquet"
    import_logs("nemo-gym", [jsonl(tmp_path, *rows)], out, group_size=size)
    assert pl.read_parquet(out)["group_id"].to_list() == groups
    with pytest.raises(ConfigError, match="--group-size must be at least 1, got 0"):
        import_logs("nemo-gym", [jsonl(tmp_path, *rows)], tmp_path / "z.parquet", group_size=0)


def test_a_table_row_with_the_wrong_number_of_cells_is_a_bad_line(tmp_path):
    good = json.dumps({**ROW, "_ng_rollout_index": 0})
    table = {"columns": ["full_result", "x"], "data": [[good, 1], [good], {"full_result": good}]}
    path = tmp_path / "t_2_ab.table.json"
    path.write_text(json.dumps(table))
    stats = import_logs("wandb-table", [path], tmp_path / "o.parquet", skip_bad=True)
    assert (stats.rows, stats.bad_lines) == (1, 2)
    with pytest.raises(InputFileError, match=r"row 1: expected 2 cells"):
        import_logs("wandb-table", [path], tmp_path / "p.parquet")
