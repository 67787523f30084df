"""Tests for replay_cli.engine.run: chunking by whole steps and streaming rows change no number."""

import json

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from replay_cli import api
from replay_cli.engine.run import run_replay
from replay_cli.rollouts.chunks import plan_chunks, step_counts
from replay_cli.rollouts.synth import synth_rollouts
from replay_cli.rollouts.validation import rollouts_from_frame

from factories import config


@pytest.fixture(scope="module")
def rollouts():
    return rollouts_from_frame(
        synth_rollouts(steps=6, groups_per_step=8, group_size=4, seed=5, validation_groups=2)
    )


CONFIGS = [
    config(),
    config({"apply_to": "correct", "floor": 0.05}),
    config({"semantics": "internal"}, metrics_by="batch"),
]


def test_chunks_are_whole_steps(rollouts):
    assert plan_chunks(step_counts(rollouts.frame), 70) == [(1, 2), (3, 4), (5, 6)]
    assert plan_chunks(step_counts(rollouts.frame), 10) == [(s, s) for s in range(1, 7)]
    assert plan_chunks(step_counts(rollouts.frame), 10**9) == [(1, 6)]


def test_chunked_replay_equals_one_pass(rollouts):
    whole = run_replay(rollouts, CONFIGS)
    chunked = run_replay(rollouts, CONFIGS, chunk_rows=40, configs_per_pass=2)
    key = ["config_id", "step", "group_id", "rollout_index"]
    assert_frame_equal(whole.rows.sort(key), chunked.rows.sort(key))
    assert_frame_equal(
        whole.groups.sort("config_id", "step", "group_id"),
        chunked.groups.sort("config_id", "step", "group_id"),
    )
    assert_frame_equal(
        whole.steps.sort("config_id", "step"), chunked.steps.sort("config_id", "step")
    )
    # Means are finished from per-chunk sums: equal up to float rounding.
    assert_frame_equal(whole.summary, chunked.summary, abs_tol=1e-12, rel_tol=1e-12)


def test_same_inputs_same_report(rollouts):
    first, second = run_replay(rollouts, CONFIGS), run_replay(rollouts, CONFIGS)
    assert first.rows.equals(second.rows)
    assert first.summary.equals(second.summary)
    assert first.steps.equals(second.steps)


def test_streamed_rows_equal_in_memory_rows(synth_path, tmp_path):
    rollouts = api.load([synth_path])
    in_memory = run_replay(rollouts, CONFIGS)
    api.replay_to_report([synth_path], CONFIGS, tmp_path / "r", chunk_rows=30)
    written = pl.read_parquet(tmp_path / "r" / "rollouts.parquet")
    key = ["config_id", "step", "group_id", "rollout_index"]
    assert_frame_equal(in_memory.rows.sort(key), written.sort(key))


def test_rows_sample_keeps_whole_groups(synth_path, tmp_path):
    api.replay_to_report([synth_path], [config()], tmp_path / "r", rows="sample")
    written = pl.read_parquet(tmp_path / "r" / "rollouts.parquet")
    full = run_replay(api.load([synth_path]), [config()]).rows
    sizes = written.group_by("step", "group_id").len()
    expected = (
        full.join(sizes.select("step", "group_id"), on=["step", "group_id"])
        .group_by("step", "group_id")
        .len()
    )
    assert_frame_equal(sizes.sort("step", "group_id"), expected.sort("step", "group_id"))
    assert written.height < full.height


def test_rows_none_writes_no_row_table_and_the_same_numbers(synth_path, tmp_path):
    """rows=none leaves out rollouts.parquet only: every other table is the rows=all report's,
    and the summary's quantiles are those of the rows that were not written."""
    cfgs = [config(), config({"apply_to": "correct", "floor": 0.05})]
    api.replay_to_report([synth_path], cfgs, tmp_path / "none", rows="none", charts=True)
    api.replay_to_report([synth_path], cfgs, tmp_path / "all", rows="all")
    none, full = tmp_path / "none", tmp_path / "all"
    assert not (none / "rollouts.parquet").exists()
    assert (none / "charts" / "advantage_distribution.png").exists()
    manifest = json.loads((none / "manifest.json").read_text())
    assert manifest["rows"] == "none"
    assert "rollouts" not in manifest["tables"]
    for table in ("summary", "steps", "groups", "findings", "recommendation"):
        assert_frame_equal(
            pl.read_parquet(none / f"{table}.parquet"), pl.read_parquet(full / f"{table}.parquet")
        )
    rows = pl.read_parquet(full / "rollouts.parquet")
    summary = pl.read_parquet(none / "summary.parquet")
    for cfg in cfgs:
        trained = rows.filter(
            pl.col("config_id") == cfg.config_id,
            pl.col("split") == "train",
            ~pl.col("masked"),
            pl.col("kept"),
        )["advantage"]
        mine = summary.filter(pl.col("config_id") == cfg.config_id)
        assert mine["adv/p50"].item() == pytest.approx(trained.quantile(0.5, "linear"), rel=1e-12)
        assert mine["adv/max"].item() == trained.max()
