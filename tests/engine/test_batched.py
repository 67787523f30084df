"""The batched path (batched.py: configs x rows numpy arrays) against the polars plans of
row_plans.py (used for filters and peer estimators): both share the GRPO kernel and the shaping,
and every per-row column and every table they build must agree exactly. The float32 kernel
itself is held to a row-at-a-time float32 reference (tests/reference_impl.py), residues
included; the float64 maths to the exact reference in test_reference.py."""

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from test_reference import _frame, row

from replay_cli import schema as S
from replay_cli.engine.batched import batchable
from replay_cli.engine.row_batch import RowBatch
from replay_cli.engine.row_plans import planned_rows
from replay_cli.engine.run import (
    ChunkState,
    InputShape,
    config_pieces,
    read_chunk,
    replay_batch,
)
from replay_cli.rollouts.validation import rollouts_from_frame

from factories import config, rollouts

shaping = st.fixed_dictionaries(
    {
        "lambda_time": st.sampled_from([0.0, 1 / 120, 1 / 60, 1 / 7]),
        "apply_to": st.sampled_from(["all", "correct"]),
        "floor": st.sampled_from([None, 0.05, -0.5]),
        "lambda_call_bonus": st.sampled_from([0.0, 0.1]),
        "call_bonus_ref": st.just(20.0),
        "internal_items": st.one_of(
            st.none(), st.sets(st.sampled_from([1, 2, 3, 4, 5])).map(tuple)
        ),
    }
)
advantage = st.fixed_dictionaries(
    {
        "baseline": st.sampled_from(["loo", "mean"]),
        "normalize": st.booleans(),
        "exclude_masked": st.booleans(),
        "std_guard": st.sampled_from(["legacy", "trivial"]),
        "clip_low": st.sampled_from([None, -1.5]),
        "precision": st.sampled_from(["float32", "float64"]),
    }
)


def _both_paths(frame: pl.DataFrame, configs):
    """The pieces of the batched path and of the polars plans for the same configs."""
    rollouts = rollouts_from_frame(frame)
    shape = InputShape.of(rollouts, 4)
    chunk = read_chunk(rollouts, *_whole(frame))
    state = ChunkState.of(chunk, shape)
    batched = replay_batch(state, configs, chart_every=1)
    fresh = ChunkState.of(chunk, shape)
    frames = planned_rows(fresh.arrays, configs, fresh.raw_columns)
    planned = [
        config_pieces(
            RowBatch.from_frame(state.arrays, cfg, f),
            1,
            [f.drop(S.IS_VAL, S.TRAINABLE, S.GID)],
            state.levels,
            cfg.config_id,
        )[0]
        for cfg, f in zip(configs, frames, strict=True)
    ]
    return batched, planned


def _whole(frame: pl.DataFrame) -> tuple[int, int]:
    return int(frame[S.STEP].min()), int(frame[S.STEP].max())


def _assert_same(batched, planned):
    for got, want in zip(batched, planned, strict=True):
        assert got.config_id == want.config_id
        # Both paths give the float32 bound too, and the counts that read it.
        assert (got.rows[S.ADV_F32_BOUND].drop_nulls() >= 0).all()
        assert_frame_equal(got.rows, want.rows)
        assert_frame_equal(got.groups, want.groups)
        assert_frame_equal(got.steps, want.steps, rel_tol=1e-12, abs_tol=1e-12)
        assert_frame_equal(got.partials, want.partials, rel_tol=1e-12, abs_tol=1e-12)
        assert got.advantages.to_list() == want.advantages.to_list()
        assert got.deductions.to_list() == want.deductions.to_list()
        # The first-step diagnostic's inputs: per-level advantage means, and what is trained.
        for name in ("a", "ay", "a_off", "ay_off", "off_tied"):
            np.testing.assert_allclose(
                getattr(got.effort, name), getattr(want.effort, name), rtol=1e-12, atol=1e-12
            )
        assert got.digest == want.digest


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(row, min_size=1, max_size=30),
    shapings=st.lists(shaping, min_size=1, max_size=3),
    advantage_params=advantage,
    mask_flagged=st.booleans(),
)
def test_batched_path_equals_the_polars_plans(rows, shapings, advantage_params, mask_flagged):
    configs = [config({**s, "mask_flagged": mask_flagged}, advantage_params) for s in shapings]
    configs = list({c.config_id: c for c in configs}.values())
    assert all(batchable(c) for c in configs)
    _assert_same(*_both_paths(_frame(rows), configs))


def test_float32_residue_is_the_same_on_both_paths():
    # Equal run times and lambda 1/120: the peers of the lone success are all equal, and
    # float32 totals-minus-row leave the trainer's residue in the legacy guard's std.
    frame = rollouts(reward=[1.0, 0.0, 0.0, 0.0], openhands_run_time=[600.0] * 4)
    cfg = config({"lambda_time": 1 / 120}, {"std_guard": "legacy"})
    batched, planned = _both_paths(frame, [cfg])
    _assert_same(batched, planned)
    assert batched[0].rows[S.STD][0] != 0.0  # the residue itself, as the trainer has it


def test_sweep_results_do_not_depend_on_threads_or_batch_size(synth_path):
    from replay_cli.engine.run import run_replay
    from replay_cli.parameters import expand
    from replay_cli.rollouts.validation import load_rollouts

    ro = load_rollouts([synth_path])
    configs = expand({}, {"lambda_time": [0.0, 1 / 60, 1 / 30], "floor": [None, 0.05]})
    one = run_replay(ro, configs, workers=1, configs_per_pass=1, with_rows=False)
    two = run_replay(ro, configs, workers=2, configs_per_pass=4, with_rows=False)
    assert_frame_equal(one.summary, two.summary)
    key = [S.CONFIG_ID, S.STEP, S.GROUP_ID]
    assert_frame_equal(one.groups.sort(key), two.groups.sort(key))
    assert one.summary[S.CONFIG_ID].to_list() == [c.config_id for c in configs]


@pytest.mark.parametrize("estimator", ["verl-grpo", "trl-grpo"])
def test_peer_estimators_keep_the_polars_plans(estimator):
    assert not batchable(config({}, {"estimator": estimator}))
    assert not batchable(config({}, {"filter": "nemo-rl"}))


@pytest.mark.parametrize("threshold", [1e-6, 1e-3, 3.0, 0.1])
def test_float32_thresholds_compare_as_float64(threshold):
    import numpy as np

    from replay_cli.maths.thresholds import above, below

    t32 = np.float32(threshold)
    near = [np.nextafter(t32, np.float32(-1)), t32, np.nextafter(t32, np.float32(10))]
    x = np.array([*near, -t32, 0.0, np.nan], dtype=np.float32)
    wide = x.astype(np.float64)
    assert above(x, threshold).tolist() == (wide > threshold).tolist()
    assert below(x, threshold).tolist() == (wide < threshold).tolist()


def _sums_exact_in_any_order(rewards: list[float]) -> bool:
    """Whether every float64 partial sum of the float32 rewards and of their float32 squares is
    exact: all the values' bits fit in float64's 53 whatever the order."""
    import math

    import numpy as np

    for values in (
        [np.float32(r) for r in rewards],
        [np.float32(r) * np.float32(r) for r in rewards],
    ):
        exponents = [math.frexp(float(v))[1] for v in values if v != 0]
        if exponents:
            carry = math.ceil(math.log2(len(values))) + 1
            if max(exponents) - min(exponents) + 24 + carry > 53:
                return False
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(
    rewards=[-0.25, 1e-07, 1e-07],
    masked=[False] * 12,
    advantage_params={
        "baseline": "loo",
        "normalize": False,
        "exclude_masked": False,
        "std_guard": "legacy",
        "clip_low": None,
        "precision": "float32",
    },
)
@given(
    rewards=st.lists(
        st.sampled_from([0.0, 1.0, 0.95, 0.9, 0.875, -0.25, 0.3333333333333333, 1e-7]),
        min_size=1,
        max_size=12,
    ),
    masked=st.lists(st.booleans(), min_size=12, max_size=12),
    advantage_params=advantage.filter(lambda a: a["precision"] == "float32"),
)
def test_float32_emulation_equals_a_scalar_float32_reference(rewards, masked, advantage_params):
    # One group, shaping off: the engine's float32 GRPO against the row-at-a-time reference,
    # value for value (the residues of totals-minus-row included).
    from reference_impl import float32_grpo_group

    n = len(rewards)
    frame = rollouts(reward=rewards, mask_sample=masked[:n])
    cfg = config({"enabled": False}, advantage_params)
    rows = _both_paths(frame, [cfg])[0][0].rows
    valid = [not m for m in masked[:n]] if advantage_params["exclude_masked"] else [True] * n
    want = float32_grpo_group(rewards, valid, advantage_params)
    if not _sums_exact_in_any_order(rewards):
        # The float64 group totals depend on the summation order (maths/segments.py): the
        # reference's row order and numpy's pairwise order may differ in the last bit, which the
        # float32 residues can magnify; both lie within the row's rounding bound.
        got = rows[S.ADV_UNCLIPPED].to_numpy()
        bound = rows["advantage_f32_bound"].to_numpy()
        assert all(
            abs(g - float(w["unclipped"])) <= b for g, w, b in zip(got, want, bound, strict=True)
        )
        return
    for column, key in [
        (S.BASELINE, "baseline"),
        (S.STD, "std"),
        (S.ADV_UNCLIPPED, "unclipped"),
        (S.ADVANTAGE, "advantage"),
    ]:
        assert rows[column].to_list() == [float(w[key]) for w in want], column
    assert rows[S.TRIVIAL_PEERS].to_list() == [w["peers_equal"] for w in want]
    assert rows[S.NORMALIZED].to_list() == [w["normalized"] for w in want]
