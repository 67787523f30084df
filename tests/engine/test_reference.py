"""The fast engine equals the slow per-row reference (tests/reference_impl.py) on random data."""

import math

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factories import replay_rows
from reference_impl import reference_groups, reference_replay, reference_steps

COLUMNS = (
    "reward_shaped",
    "deduction",
    "bonus",
    "minutes",
    "baseline",
    "std",
    "advantage_unclipped",
    "advantage",
    "advantage_raw",
)

row = st.fixed_dictionaries(
    {
        "step": st.sampled_from([1, 2]),
        "group_id": st.integers(0, 3),
        "reward": st.sampled_from([0.0, 1.0, 0.5, -0.25, 0.875]),
        "resolved": st.booleans(),
        "openhands_run_time": st.one_of(
            st.none(),
            st.sampled_from([math.nan, math.inf, -60.0]),
            st.integers(0, 60).map(lambda m: m * 60.0),
        ),
        "calls": st.integers(0, 120),
        "mask_sample": st.booleans(),
        "split": st.sampled_from(["train", "train", "train", "validation"]),
        "zeroed_by_penalty": st.booleans(),
    }
)
shaping = st.fixed_dictionaries(
    {
        "enabled": st.booleans(),
        "lambda_time": st.sampled_from([0.0, 1 / 120, 1 / 60, 1 / 30]),
        "apply_to": st.sampled_from(["all", "correct"]),
        "floor": st.sampled_from([None, 0.05, -0.5]),
        "lambda_call_bonus": st.sampled_from([0.0, 0.1]),
        "call_bonus_ref": st.sampled_from([None, 56.0, 20.0]),
        "mask_flagged": st.booleans(),
        "internal_items": st.one_of(
            st.none(), st.sets(st.sampled_from([1, 2, 3, 4, 5, 8])).map(tuple)
        ),
    }
).filter(lambda s: s["lambda_call_bonus"] == 0 or s["call_bonus_ref"] is not None)
advantage = st.fixed_dictionaries(
    {
        "baseline": st.sampled_from(["loo", "mean"]),
        "normalize": st.booleans(),
        "exclude_masked": st.booleans(),
        "clip_low": st.sampled_from([None, -3.0]),
        "clip_high": st.sampled_from([None, 3.0]),
        "precision": st.just("float64"),
        "std_guard": st.just("trivial"),
    }
)


def _frame(rows):
    seen: dict[tuple, int] = {}
    for r in rows:
        key = (r["step"], r["group_id"])
        r["rollout_index"] = seen.get(key, 0)
        seen[key] = r["rollout_index"] + 1
    return pl.DataFrame(
        rows, schema_overrides={"openhands_run_time": pl.Float64, "reward": pl.Float64}
    )


def _compare(rows, shaping_params, advantage_params):
    frame = _frame(rows)
    got = replay_rows(frame, shaping_params, advantage_params).rows.sort(
        "step", "group_id", "rollout_index"
    )
    want = sorted(
        reference_replay(frame.to_dicts(), shaping_params, advantage_params),
        key=lambda r: (r["step"], r["group_id"], r["rollout_index"]),
    )
    for col in COLUMNS:
        for g, w in zip(got[col].to_list(), [r[col] for r in want], strict=True):
            if w is None:
                assert g is None, col
            else:
                assert g == pytest.approx(w, rel=1e-7, abs=1e-7), col
    assert got["charged"].to_list() == [r["charged"] for r in want]
    assert got["floored"].to_list() == [r["floored"] for r in want]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(row, min_size=1, max_size=24), shaping_params=shaping, advantage_params=advantage
)
def test_engine_matches_reference(rows, shaping_params, advantage_params):
    _compare(rows, shaping_params, advantage_params)


@settings(max_examples=30, deadline=None)
@given(
    rewards=st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, -1.0]), min_size=1, max_size=10),
    baseline=st.sampled_from(["loo", "mean"]),
)
def test_legacy_guard_matches_reference_on_exact_rewards(rewards, baseline):
    rows = [
        {
            "step": 1,
            "group_id": 0,
            "reward": r,
            "resolved": r > 0,
            "openhands_run_time": 60.0,
            "calls": 0,
            "mask_sample": False,
            "split": "train",
            "zeroed_by_penalty": False,
        }
        for r in rewards
    ]
    _compare(
        rows,
        {"enabled": False},
        {"std_guard": "legacy", "precision": "float64", "baseline": baseline},
    )


def _assert_close(got, want, where):
    for name, w in want.items():
        g = got[name]
        if w is None:
            assert g is None, (where, name)
        elif isinstance(w, bool | str):
            assert g == w, (where, name)
        else:
            assert g == pytest.approx(w, rel=1e-9, abs=1e-12), (where, name)


filtering = st.fixed_dictionaries(
    {
        "baseline": st.sampled_from(["loo", "mean"]),
        "exclude_masked": st.booleans(),
        "filter": st.sampled_from(["none", "nemo-rl", "verl", "openrlhf"]),
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(row, min_size=1, max_size=30),
    shaping_params=shaping,
    advantage_params=filtering,
    metrics_by=st.sampled_from(["group", "batch"]),
)
def test_group_and_step_tables_match_reference(rows, shaping_params, advantage_params, metrics_by):
    result = replay_rows(_frame(rows), shaping_params, advantage_params, metrics_by=metrics_by)
    report_rows = result.rows.to_dicts()
    want_groups = reference_groups(report_rows, shaping_params)
    got_groups = {(g["step"], g["group_id"]): g for g in result.groups.to_dicts()}
    assert list(got_groups) == sorted(want_groups)  # one row per group, in (step, group) order
    for key, want in want_groups.items():
        _assert_close(got_groups[key], want, key)
    want_steps = reference_steps(report_rows, want_groups, shaping_params, metrics_by)
    got_steps = {s["step"]: s for s in result.steps.to_dicts()}
    assert list(got_steps) == list(want_steps)
    for step, want in want_steps.items():
        _assert_close(got_steps[step], want, step)
