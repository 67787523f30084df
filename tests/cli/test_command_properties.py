"""Whole commands on random rollout inputs (hypothesis): replay, sweep with and without the
forecast, compare, the TensorBoard and W&B exports and the three importers, through the library
and through the CLI. Every run either finishes with a complete report (exit 0) or refuses the
input with exit 2 and a message that names the file, the column and the rows; never a
traceback, never a half-written directory (no `.NAME.tmp-*` sibling left behind)."""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from replay_cli import api, build_config
from replay_cli import schema as S
from replay_cli.cli.app import app
from replay_cli.errors import ReplayError
from replay_cli.maths.peers import ESTIMATORS
from replay_cli.parameters import registry
from replay_cli.report.model import Report
from replay_cli.rollouts.value_checks import MAX_RUN_TIME_S

from writers import AGENT_TIMEOUT, write_gym_jsonl, write_wandb_table

runner = CliRunner()


def examples(n: int) -> settings:
    """A fixed example count (times PROPERTY_SCALE, for a longer search by hand), no deadline (a
    shared two-core machine is slow at random)."""
    return settings(
        max_examples=n * int(os.environ.get("PROPERTY_SCALE", "1")),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ---- inputs --------------------------------------------------------------------------------

NULLABLE = (
    S.REWARD,
    S.RESOLVED,
    S.RUN_TIME,
    S.CALLS,
    S.MASK_SAMPLE,
    S.SPLIT,
    S.ZEROED,
    S.ROLLOUT_INDEX,
    S.INSTANCE_ID,
)
"""Columns a rollout table may hold nulls in (schema.DEFAULTS, rollouts/validation.py: a null
reward or run time is 0, a null resolved is false, a null rollout_index is the row's position;
instance_id is an extra column the measure pools problems by)."""

FAULTS = {
    "group_id null": S.GROUP_ID,
    "step null": S.STEP,
    "reward NaN": S.REWARD,
    "calls negative": S.CALLS,
    "run time over a week": S.RUN_TIME,
    "split unknown": S.SPLIT,
    "duplicate key": f"{S.STEP}, {S.GROUP_ID}, {S.ROLLOUT_INDEX}",
}
"""Value faults planted in a valid table, and the column the refusal must name."""

rewards = st.sampled_from([0.0, 1.0, 0.5, -0.5])  # few values: ties in most groups
run_times = st.one_of(
    st.sampled_from([0.0, 60.0, float(AGENT_TIMEOUT), MAX_RUN_TIME_S]),
    st.floats(0.0, MAX_RUN_TIME_S, allow_nan=False),
)


@dataclass
class Input:
    """A drawn rollout table and the fault planted in it (None: the table is valid)."""

    frame: pl.DataFrame
    fault: str | None

    @property
    def trains(self) -> bool:
        """Whether any row is a training row (a forecast needs one)."""
        return bool((self.frame[S.SPLIT].fill_null(S.SPLIT_TRAIN) == S.SPLIT_TRAIN).any())

    @property
    def steps(self) -> list[int]:
        return sorted(self.frame[S.STEP].drop_nulls().unique().to_list())


def _maybe_null(draw: Any, value: Any, nullable: bool) -> Any:
    return None if nullable and draw(st.integers(0, 4)) == 0 else value


@st.composite
def groups(draw: Any, size: int, nulls: frozenset[str], order: bool) -> list[dict[str, Any]]:
    """The rows of one prompt group: all masked at times, tied rewards, run times from 0 to the
    longest a table may hold."""
    all_masked = draw(st.integers(0, 3)) == 0
    positions = list(range(size)) if order else draw(st.permutations(range(size)))
    rows = []
    for position in positions:
        reward = draw(rewards)
        rows.append(
            {
                S.ROLLOUT_INDEX: position,
                S.REWARD: reward,
                S.RESOLVED: reward > 0 if draw(st.booleans()) else draw(st.booleans()),
                S.RUN_TIME: draw(run_times),
                S.CALLS: draw(st.integers(0, 80)),
                S.MASK_SAMPLE: True if all_masked else draw(st.booleans()),
                S.ZEROED: draw(st.integers(0, 5)) == 0,
            }
        )
    for row in rows:
        for col in nulls & set(row):
            row[col] = _maybe_null(draw, row[col], True)
    return rows


@st.composite
def inputs(draw: Any, faults: bool = True, max_steps: int = 3) -> Input:
    """A rollout table: 1 to `max_steps` steps (some validation only), 1 to 3 groups per step of
    1 to 32 rollouts, instance ids repeated across steps and within a step, integer or string
    group ids, nulls where the schema allows them; with `faults`, at times one planted value
    fault that the loader must refuse."""
    step_numbers = sorted(draw(st.sets(st.integers(0, 9), min_size=1, max_size=max_steps)))
    nulls = frozenset(draw(st.sets(st.sampled_from(NULLABLE), max_size=4)))
    string_ids = draw(st.booleans())
    instances = draw(st.none() | st.integers(1, 4))  # None: no instance_id column
    # A null rollout_index is filled with the row's position in its group: in order, no clash.
    order = S.ROLLOUT_INDEX in nulls or draw(st.booleans())
    rows: list[dict[str, Any]] = []
    for step in step_numbers:
        split = draw(st.sampled_from(["train", "train", "validation", "mixed"]))
        for g in range(draw(st.integers(1, 3))):
            size = draw(st.integers(1, 32))
            instance = None if instances is None else f"task-{draw(st.integers(1, instances))}"
            group_split = (
                draw(st.sampled_from(["train", "validation"])) if split == "mixed" else split
            )
            for row in draw(groups(size, nulls, order)):
                row[S.STEP] = step
                row[S.GROUP_ID] = f"g{g}" if string_ids else g
                row[S.SPLIT] = _maybe_null(draw, group_split, S.SPLIT in nulls)
                if instances is not None:
                    row[S.INSTANCE_ID] = _maybe_null(draw, instance, S.INSTANCE_ID in nulls)
                rows.append(row)
    schema = {**S.NORMALISED_TYPES, S.GROUP_ID: pl.String if string_ids else pl.Int64}
    frame = pl.DataFrame(rows, schema={c: schema.get(c, pl.String) for c in rows[0]})
    fault = draw(st.none() | st.sampled_from(sorted(FAULTS))) if faults else None
    if fault is not None:
        frame = _plant(frame, fault, draw(st.integers(0, frame.height - 1)))
    return Input(frame, fault)


def _plant(frame: pl.DataFrame, fault: str, row: int) -> pl.DataFrame:
    at = pl.int_range(pl.len()) == row
    if fault == "duplicate key":  # the row copied once more, with a rollout_index to clash on
        index = pl.when(at).then(pl.col(S.ROLLOUT_INDEX).fill_null(10_000))
        frame = frame.with_columns(index.otherwise(pl.col(S.ROLLOUT_INDEX)))
        return pl.concat([frame, frame.slice(row, 1)])
    column, value = {
        "group_id null": (S.GROUP_ID, None),
        "step null": (S.STEP, None),
        "reward NaN": (S.REWARD, math.nan),
        "calls negative": (S.CALLS, -1),
        "run time over a week": (S.RUN_TIME, MAX_RUN_TIME_S + 1.0),
        "split unknown": (S.SPLIT, "test"),
    }[fault]
    return frame.with_columns(
        pl.when(at)
        .then(pl.lit(value))
        .otherwise(pl.col(column))
        .cast(frame[column].dtype)
        .alias(column)
    )


# ---- what every run must leave -------------------------------------------------------------

BASE_FILES = {
    "index.html",
    "manifest.json",
    "summary.parquet",
    "steps.parquet",
    "groups.parquet",
    "findings.parquet",
    "recommendation.parquet",
}
"""Files every report holds, whatever its options (rollouts.parquet unless --rows none,
resamples.parquet with resamples, forecast.parquet with the forecast: the manifest lists them)."""


def assert_complete_report(
    out: Path, configs: int, forecast: bool = False, rows: str = "all"
) -> None:
    files = {p.name for p in out.iterdir() if p.is_file()}
    assert files >= BASE_FILES, sorted(BASE_FILES - files)
    manifest = json.loads((out / "manifest.json").read_text())
    tables = set(manifest["tables"].values())
    assert tables <= files, sorted(tables - files)
    assert {"summary.parquet", "recommendation.parquet"} <= tables
    assert ("forecast.parquet" in tables) == forecast
    assert ("rollouts.parquet" in tables) == (rows != "none")
    assert {p for p in files if p.endswith(".parquet")} == tables
    summary = pl.read_parquet(out / "summary.parquet")
    assert summary.height == configs == len(manifest["configs"])
    for name in tables:
        pl.read_parquet(out / name)  # readable, not truncated
    assert "</html>" in (out / "index.html").read_text()


def assert_no_leftovers(parent: Path) -> None:
    """No staged directory or temporary file of a write is left beside the outputs."""
    hidden = [p.name for p in parent.iterdir() if p.name.startswith(".")]
    assert hidden == [], hidden


def assert_refusal(output: str, path: Path, fault: str | None) -> None:
    """Exit 2: `Error:`, the file, a column and a row number; the planted fault's column."""
    assert output.startswith("Error: ") or "\nError: " in output, output
    assert str(path) in output, output
    assert re.search(r"column '[^']+'", output), output
    assert re.search(r" row \d+", output), output
    if fault is not None:
        assert f"column '{FAULTS[fault]}'" in output, output


def invoke(args: list[str]) -> tuple[int, str]:
    """A CLI run: exit 0 or 2, never an exception escaping the error boundary."""
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code in (0, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


@contextmanager
def workdir() -> Iterator[Path]:
    """A fresh directory per example (pytest's tmp_path is one per test, not per example)."""
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def written(tmp: Path, data: Input, name: str = "rollouts.parquet") -> Path:
    path = tmp / name
    data.frame.write_parquet(path)
    return path


QUICK = ["--resamples", "20", "--no-charts", "--no-forecast"]
"""Options that keep an example quick: fewer bootstrap resamples, no charts, no forecast (the
tests that run it say `FORECAST` after these: the last flag wins)."""
FORECAST = ["--forecast", "--steps", "3", "--seeds", "1", "--problems", "10"]


# ---- the library ---------------------------------------------------------------------------


@examples(25)
@given(data=inputs(), sweep=st.booleans(), forecast=st.booleans())
def test_the_library_writes_a_whole_report_or_raises_a_replay_error(data, sweep, forecast):
    from replay_cli.config import EffortSettings, ForecastSettings

    configs = [build_config({})]
    if sweep:
        configs += [
            build_config({"shaping": {"enabled": False}}),
            build_config({"shaping": {"apply_to": "correct", "floor": 0.0}}),
            build_config({"shaping": {"semantics": "internal"}}),
        ]
    ahead = ForecastSettings(steps=3, seeds=1, problems=10) if forecast else None
    with workdir() as tmp:
        path, out = written(tmp, data), tmp / "report"
        options = {"effort": EffortSettings(resamples=20), "forecast": ahead}
        refused = refusal(lambda: api.replay_to_report([path], configs, out, **options))
        if refused is not None:
            assert data.fault is not None, refused
            assert_refusal(refused, path, data.fault)
            assert not out.exists()
        else:
            assert data.fault is None
            assert_complete_report(out, len(configs), forecast and data.trains)
        assert_no_leftovers(tmp)


def refusal(run: Callable[[], object]) -> str | None:
    """The library's message for a bad input (`Error: ...` as the CLI prints it), None when
    `run` succeeds; any other exception escapes."""
    try:
        run()
    except ReplayError as exc:
        return f"Error: {exc}"
    return None


@examples(20)
@given(data=inputs(faults=False))
def test_an_in_memory_replay_and_forecast_take_any_valid_table(data):
    from replay_cli.config import ForecastSettings
    from replay_cli.rollouts.validation import rollouts_from_frame

    rollouts = rollouts_from_frame(data.frame)
    configs = [build_config({}), build_config({"shaping": {"apply_to": "correct"}})]
    small = api.report_options(forecast=ForecastSettings(steps=3, seeds=1, problems=10))
    report = api.replay(rollouts, configs, small)
    assert report.result.summary.height == 2
    assert report.verdict.recommendation.height == 2
    assert report.result.rows.height == 2 * data.frame.height


PARAMETERS = st.fixed_dictionaries(
    {
        "enabled": st.booleans(),
        "lambda_time": st.sampled_from([0.0, 1 / 120, 1 / 60, 1 / 10]),
        "apply_to": st.sampled_from(["all", "correct"]),
        "floor": st.sampled_from([None, 0.0, -0.5]),
        "mask_flagged": st.booleans(),
        "validation_shaped": st.booleans(),
        "semantics": st.sampled_from(["nemo-rl", "internal"]),
        "estimator": st.sampled_from(registry()["estimator"].choices),
        "scale_rewards": st.sampled_from(["group", "batch", "none"]),
        "baseline": st.sampled_from(["loo", "mean"]),
        "normalize": st.booleans(),
        "std_guard": st.sampled_from(["legacy", "trivial"]),
        "exclude_masked": st.booleans(),
        "filter": st.sampled_from(["none", "nemo-rl", "verl", "openrlhf"]),
        "filter_on": st.sampled_from(["reward", "resolved"]),
        "clip_low": st.sampled_from([None, -3.0]),
        "clip_high": st.sampled_from([None, 3.0]),
        "precision": st.sampled_from(["float32", "float64"]),
        "metrics_by": st.sampled_from(["group", "batch"]),
    }
)
"""Any point of the parameter space but the torch precision (an optional extra)."""
PAIRS = {name for name, e in ESTIMATORS.items() if e.pairs}
"""Estimators that refuse groups of one row and groups of unequal sizes, as OpenRLHF does."""


@examples(25)
@given(data=inputs(faults=False), points=st.lists(PARAMETERS, min_size=1, max_size=3))
def test_any_config_replays_any_valid_table_or_its_estimator_refuses_it(data, points):
    from replay_cli.config import ForecastSettings
    from replay_cli.parameters import to_config
    from replay_cli.rollouts.validation import rollouts_from_frame

    configs = list({c.config_id: c for c in map(to_config, points)}.values())
    outcome: list[Report] = []
    small = api.report_options(forecast=ForecastSettings(steps=3, seeds=1, problems=10))
    refused = refusal(
        lambda: outcome.append(api.replay(rollouts_from_frame(data.frame), configs, small))
    )
    if refused is not None:  # OpenRLHF's estimators assert groups of one size, of 2 or more
        assert any(c.advantage.estimator in PAIRS for c in configs), refused
        assert "needs at least 2 rollouts per prompt group" in refused or (
            "needs groups of one size" in refused
        )
        return
    (report,) = outcome
    assert report.result.summary.height == len(configs)
    assert report.verdict.recommendation.height == len(configs)
    assert report.result.rows.height == len(configs) * data.frame.height


# ---- the CLI: replay, sweep, compare, export --------------------------------------------


@examples(20)
@given(data=inputs(), rows=st.sampled_from(["all", "sample", "none"]))
def test_replay_then_compare_and_export(data, rows):
    pytest.importorskip("tensorboardX", reason="needs the extra replay-cli[tensorboard]")
    pytest.importorskip("tensorboard", reason="needs the extra replay-cli[tensorboard]")
    pytest.importorskip("wandb", reason="needs the extra replay-cli[wandb]")
    with workdir() as tmp:
        path, out = written(tmp, data), tmp / "report"
        code, output = invoke(["replay", path, "--out", out, "--rows", rows, *QUICK])
        if code == 2:
            assert data.fault is not None, output
            assert_refusal(output, path, data.fault)
            assert not out.exists()
            assert_no_leftovers(tmp)
            return
        assert data.fault is None, output
        assert_complete_report(out, 1, rows=rows)
        code, output = invoke(["compare", out, "--out", tmp / "compared"])
        assert code == 0, output
        assert (tmp / "compared" / "comparison.parquet").is_file()
        code, output = invoke(["export", "tensorboard", out, "--out", tmp / "tb"])
        assert code == 0, output
        assert any((tmp / "tb").iterdir())
        assert_no_leftovers(tmp)


@examples(15)
@given(data=inputs(), forecast=st.booleans())
def test_sweep_with_and_without_the_forecast(data, forecast):
    args = ["--lambda-time", "0,1/60", "--apply-to", "all,correct", "--floor", "none,0"]
    with workdir() as tmp:
        path, out = written(tmp, data), tmp / "report"
        code, output = invoke(["sweep", path, "--out", out, *args, *QUICK, *(FORECAST * forecast)])
        if code == 2:
            assert data.fault is not None, output
            assert_refusal(output, path, data.fault)
            assert not out.exists()
        else:
            assert data.fault is None, output
            # λ = 0 under any gate or floor is one config: shaping changes nothing.
            configs = json.loads((out / "manifest.json").read_text())["configs"]
            assert_complete_report(out, len(configs), forecast and data.trains)
            assert 5 <= len(configs) <= 8
        assert_no_leftovers(tmp)


@examples(8)
@given(data=inputs(faults=False))
def test_export_wandb_writes_one_run_per_config(data):
    pytest.importorskip("wandb", reason="needs the extra replay-cli[wandb]")
    with workdir() as tmp:
        path, out = written(tmp, data), tmp / "report"
        code, output = invoke(["sweep", path, "--out", out, "--lambda-time", "0,1/60", *QUICK])
        assert code == 0, output
        code, output = invoke(["export", "wandb", out, "--out", tmp / "wandb"])
        assert code == 0, output
        assert "Wrote 2 W&B runs" in output
        assert_no_leftovers(tmp)


# ---- the importers -------------------------------------------------------------------------


def _for_writers(frame: pl.DataFrame) -> pl.DataFrame:
    """The log writers take integer group ids and a call count (the formats have no null call
    count: it is counted from the response)."""
    return frame.with_columns(pl.col(S.CALLS).fill_null(0))


@examples(10)
@given(data=inputs(faults=False))
def test_import_nemo_gym_then_replay(data):
    frame = _for_writers(data.frame)
    with workdir() as tmp:
        imported = []
        for step in data.steps:  # one collector file per step
            part = frame.filter(pl.col(S.STEP) == step)
            gym = tmp / f"rollouts_step{step}.jsonl"
            write_gym_jsonl(part.with_columns(pl.col(S.GROUP_ID).rank("dense") - 1), gym)
            out = tmp / f"step{step}.parquet"
            code, output = invoke(["import", "nemo-gym", gym, "--out", out, "--step", step])
            assert code == 0, output
            assert pl.read_parquet(out).height == part.height
            imported.append(out)
        code, output = invoke(["replay", *imported, "--out", tmp / "report", *QUICK])
        assert code == 0, output
        assert_complete_report(tmp / "report", 1)
        assert_no_leftovers(tmp)


@examples(10)
@given(data=inputs(faults=False))
def test_import_wandb_table_then_replay(data):
    frame = _for_writers(data.frame)
    with workdir() as tmp:
        tables = []
        for step in data.steps:  # one table per step, its step in the name
            part = frame.filter(pl.col(S.STEP) == step)
            table = tmp / f"full_result_step{step}.table.json"
            write_wandb_table(part.with_columns(pl.col(S.GROUP_ID).rank("dense") - 1), table)
            tables.append(table)
        out = tmp / "rollouts.parquet"
        code, output = invoke(["import", "wandb-table", *tables, "--out", out])
        assert code == 0, output
        assert pl.read_parquet(out).height == frame.height
        code, output = invoke(["replay", out, "--out", tmp / "report", *QUICK])
        assert code == 0, output
        assert_complete_report(tmp / "report", 1)
        assert_no_leftovers(tmp)


@examples(15)
@given(data=inputs(), suffix=st.sampled_from([".csv", ".jsonl", ".arrow", ".parquet"]))
def test_import_table_refuses_what_a_replay_would_refuse(data, suffix):
    frame = data.frame
    with workdir() as tmp:
        source = tmp / f"rollouts{suffix}"
        if suffix == ".csv":
            frame.write_csv(source)
        elif suffix == ".jsonl":
            frame.write_ndjson(source)
        elif suffix == ".arrow":
            frame.write_ipc(source)
        else:
            frame.write_parquet(source)
        out = tmp / "imported.parquet"
        code, output = invoke(["import", "table", source, "--out", out])
        fault = data.fault
        if suffix == ".jsonl" and fault == "reward NaN":
            fault = None  # JSON has no NaN: polars writes it as null
        if code == 2:
            assert fault is not None, output
            assert_refusal(output, source, fault)
            assert not out.exists()
        else:
            assert fault is None, output
            assert pl.read_parquet(out).height == frame.height
            code, output = invoke(["replay", out, "--out", tmp / "report", *QUICK])
            assert code == 0, output
            assert_complete_report(tmp / "report", 1)
        assert_no_leftovers(tmp)
