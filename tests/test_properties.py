"""Properties of shaping and advantages that must hold on any input (hypothesis)."""

import itertools

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay_cli import api
from replay_cli.analysis.verify import candidate_params
from replay_cli.report.options import ReportOptions
from replay_cli.rollouts.validation import rollouts_from_frame

from factories import replay_rows

NO_FORECAST = ReportOptions(forecast=None)
"""These properties are of rows and steps: the forecast is not theirs to pay for."""

KEY = ["step", "group_id", "rollout_index"]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

group = st.lists(
    st.tuples(
        st.sampled_from([0.0, 1.0, 0.5, -0.5]),  # reward
        st.booleans(),  # resolved
        st.floats(0, 7200, allow_nan=False),  # run time (s)
        st.booleans(),  # mask_sample
    ),
    min_size=1,
    max_size=10,
)
table = st.lists(group, min_size=1, max_size=5)


def frame(groups):
    rows = [
        {
            "step": 1 + g % 2,
            "group_id": g,
            "rollout_index": i,
            "reward": r,
            "resolved": res,
            "openhands_run_time": t,
            "mask_sample": m,
        }
        for g, members in enumerate(groups)
        for i, (r, res, t, m) in enumerate(members)
    ]
    return pl.DataFrame(rows)


@SETTINGS
@given(groups=table, apply_to=st.sampled_from(["all", "correct"]))
def test_lambda_zero_without_bonus_changes_nothing(groups, apply_to):
    rows = replay_rows(frame(groups), {"lambda_time": 0.0, "apply_to": apply_to}).rows
    assert rows["reward_shaped"].to_list() == rows["reward"].to_list()
    assert rows["advantage"].to_list() == rows["advantage_raw"].to_list()


@SETTINGS
@given(
    reward=st.sampled_from([0.0, 1.0, -0.5]),
    times=st.lists(st.floats(0, 7200, allow_nan=False), min_size=2, max_size=8),
    floor=st.sampled_from([None, 0.05, -1.0]),
)
def test_deduction_is_monotone_in_run_time(reward, times, floor):
    data = frame([[(reward, True, t, False) for t in times]])
    rows = replay_rows(data, {"floor": floor}).rows.sort("openhands_run_time")
    deductions = rows["deduction"].to_list()
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(deductions))


@SETTINGS
@given(
    groups=table, floor=st.sampled_from([0.05, -0.2, 0.5]), lam=st.sampled_from([1 / 60, 1 / 10])
)
def test_floor_is_respected(groups, floor, lam):
    rows = replay_rows(frame(groups), {"floor": floor, "lambda_time": lam}).rows
    charged = rows.filter(pl.col("charged"))["reward_shaped"]
    assert charged.is_empty() or charged.min() >= floor


@SETTINGS
@given(groups=table)
def test_mean_baseline_without_normalisation_sums_to_zero(groups):
    rows = replay_rows(
        frame(groups), {}, {"baseline": "mean", "normalize": False, "precision": "float64"}
    ).rows
    sums = rows.group_by("step", "group_id").agg(pl.col("advantage").sum())
    assert sums["advantage"].abs().max() == pytest.approx(0.0, abs=1e-12)


@SETTINGS
@given(groups=table, seed=st.integers(0, 1000), precision=st.sampled_from(["float32", "float64"]))
def test_reordering_rows_permutes_advantages(groups, seed, precision):
    data = frame(groups)  # in the trainer's order: the chunk reader skips its sort
    in_order = replay_rows(data, {}, {"precision": precision})
    shuffled = replay_rows(
        data.sample(fraction=1.0, shuffle=True, seed=seed), {}, {"precision": precision}
    )
    first, second = in_order.rows.sort(KEY), shuffled.rows.sort(KEY)
    for col in ("reward_shaped", "baseline", "std", "advantage", "advantage_raw"):
        assert first[col].to_list() == second[col].to_list(), col
    # Group and step tables are built from runs of sorted rows: identical, order included.
    assert_frame_equal(in_order.groups, shuffled.groups)
    assert_frame_equal(in_order.steps, shuffled.steps)


def test_splitting_input_across_files_changes_nothing(synth_path, tmp_path):
    data = pl.read_parquet(synth_path)
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    data.filter(pl.col("group_id") % 2 == 0).write_parquet(a)
    data.filter(pl.col("group_id") % 2 == 1).write_parquet(b)
    whole = api.replay(api.load([synth_path]), options=NO_FORECAST)
    split = api.replay(api.load([a, b]), options=NO_FORECAST)
    drop = ["source_file", "source_row"]
    assert_frame_equal(
        whole.result.rows.drop(drop).sort(KEY), split.result.rows.drop(drop).sort(KEY)
    )
    assert_frame_equal(whole.result.groups, split.result.groups)
    assert_frame_equal(whole.result.steps, split.result.steps)


def test_in_memory_and_file_inputs_agree(synth_path):
    data = pl.read_parquet(synth_path)
    from_file = api.replay(api.load([synth_path]), options=NO_FORECAST).result.rows.drop(
        "source_file"
    )
    from_frame = api.replay(rollouts_from_frame(data), options=NO_FORECAST).result.rows.drop(
        "source_file"
    )
    assert_frame_equal(from_file, from_frame)


@SETTINGS
@given(
    groups=st.lists(
        st.lists(
            st.tuples(
                st.sampled_from([0.0, 1.0, 0.5]),
                st.booleans(),
                st.sampled_from([0.0, 600.0, 1800.0, 3600.0]),  # few values: many exact ties
                st.booleans(),
            ),
            min_size=1,
            max_size=8,
        ),
        min_size=1,
        max_size=5,
    ),
    floor=st.sampled_from([None, 0.0, -0.5]),
    lam=st.sampled_from([0.0, 1 / 60, 1 / 30]),
)
def test_a_group_is_inverted_exactly_when_a_success_ends_strictly_below_a_failure(
    groups, floor, lam
):
    # Ties (equal shaped rewards, both on the floor) are never inversions.
    result = replay_rows(frame(groups), {"lambda_time": lam, "floor": floor})
    trained = result.rows.filter(~pl.col("masked") & pl.col("kept"))
    want = {
        (step, gid): bool(
            part.filter(pl.col("resolved")).height
            and part.filter(~pl.col("resolved")).height
            and part.filter(pl.col("resolved"))["reward_shaped"].min()
            < part.filter(~pl.col("resolved"))["reward_shaped"].max()
        )
        for (step, gid), part in trained.group_by("step", "group_id")
    }
    got = {(r["step"], r["group_id"]): r["inverted"] for r in result.groups.iter_rows(named=True)}
    assert {k: got[k] for k in want} == want
    assert not any(v for k, v in got.items() if k not in want)  # no trainable rows: no inversion


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.sampled_from([-3.0, -1.5, 0.0, 0.25, 1.5, 3.0]), min_size=1, max_size=12))
def test_a_clip_verify_tries_is_one_the_log_can_show(values):
    # A clip bound is tried only at a logged extreme that two or more rows sit on.
    rows = pl.DataFrame({"logged_advantage": values})
    for p in candidate_params(rows, None):
        for bound, extreme in ((p.clip_low, min(values)), (p.clip_high, max(values))):
            if bound is not None:
                assert bound == extreme
                assert values.count(bound) >= 2
    two_at_an_end = values.count(min(values)) >= 2 or values.count(max(values)) >= 2
    assert any(p.clips for p in candidate_params(rows, None)) == two_at_an_end
