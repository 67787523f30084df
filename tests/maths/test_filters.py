"""Tests for replay_cli.maths.filters: which rows survive each trainer's dynamic sampling."""

import polars as pl
import pytest

from factories import replay_rows, rollouts


def run(frame, shaping=None, **advantage):
    return replay_rows(frame, shaping or {"enabled": False}, {"precision": "float64", **advantage})


def test_nemo_rl_row_filter_drops_a_lone_success_pr_3469():
    result = run(rollouts(reward=[1.0, 0.0, 0.0, 0.0]), filter="nemo-rl", std_guard="legacy")
    rows = result.rows.sort("rollout_index")
    assert rows["kept"].to_list() == [False, True, True, True]
    assert rows["advantage"].to_list()[0] is None
    assert rows["advantage"].to_list()[1:] == [0.0, 0.0, 0.0]  # the survivors carry no signal
    assert result.summary["signal/group_rate"][0] == 0.0
    assert result.summary["filter/kept_rows_frac"][0] == pytest.approx(0.75)


def test_nemo_rl_trivial_rule_matches_on_binary_rewards():
    rows = run(rollouts(reward=[1.0, 1.0, 0.0, 0.0]), filter="nemo-rl").rows
    assert rows["kept"].all()


def test_verl_keeps_groups_with_spread_and_singletons():
    frame = rollouts(reward=[1.0, 1.0, 1.0, 0.0, 0.7], group_id=[0, 0, 1, 1, 2])
    groups = run(frame, filter="verl").groups.sort("group_id")
    assert groups["kept_rows"].to_list() == [0, 2, 1]


def test_openrlhf_strict_mean_range_on_raw_scores():
    frame = rollouts(
        reward=[1.0, 1.0, 0.0, 0.0, 1.0, 0.0],
        group_id=[0, 0, 1, 1, 2, 2],
        openhands_run_time=[60.0, 3000.0, 60.0, 3000.0, 60.0, 60.0],
    )
    # Shaping gives groups 0 and 1 a spread, but OpenRLHF filters on the raw score.
    groups = run(frame, {"lambda_time": 1 / 60}, filter="openrlhf").groups.sort("group_id")
    assert groups["kept_rows"].to_list() == [0, 0, 2]


def test_phantom_groups_from_shaping_and_filter_on_resolved():
    all_fail = rollouts(
        reward=[0.0, 0.0, 0.0, 0.0], openhands_run_time=[60.0, 600.0, 1200.0, 1800.0]
    )
    shaped = {"lambda_time": 1 / 60}
    on_reward = run(all_fail, shaped, filter="verl").summary.row(0, named=True)
    assert on_reward["filter/kept_groups_frac"] == 1.0
    assert on_reward["filter/phantom_groups_frac"] == 1.0
    on_resolved = run(all_fail, shaped, filter="verl", filter_on="resolved").summary.row(
        0, named=True
    )
    assert on_resolved["filter/kept_groups_frac"] == 0.0
    assert on_resolved["filter/phantom_groups_frac"] == 0.0
    assert on_resolved["signal/group_rate"] == 0.0


def test_no_filter_keeps_everything():
    summary = run(rollouts(reward=[1.0, 0.0]), filter="none").summary.row(0, named=True)
    assert summary["filter/kept_rows_frac"] == 1.0


ESTIMATORS = [
    ("grpo", "group"),
    ("verl-grpo", "group"),
    ("verl-rloo", "group"),
    ("trl-grpo", "group"),
    ("trl-grpo", "batch"),
    ("trl-grpo", "none"),
    ("openrlhf-group-norm", "group"),
    ("openrlhf-rloo", "group"),
    ("dr-grpo", "group"),
    ("reinforce-pp-baseline", "group"),
]


def _two_steps():
    """Groups every filter treats differently: a spread, an all-fail tie, an all-pass tie."""
    frames = []
    for step in (1, 2):
        frames.append(
            rollouts(
                step=[step] * 12,
                group_id=[0] * 4 + [1] * 4 + [2] * 4,
                reward=[1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0],
                openhands_run_time=[300.0 * step, 600.0, 900.0, 1200.0] + [600.0] * 8,
            )
        )
    return pl.concat(frames)


@pytest.mark.parametrize("filter_", ["nemo-rl", "verl", "openrlhf"])
@pytest.mark.parametrize(("estimator", "scale"), ESTIMATORS)
def test_statistics_are_taken_over_the_kept_rows(estimator, scale, filter_):
    """Filtering then computing equals computing on the survivors alone, step statistics too."""
    frame = _two_steps()
    advantage = {"estimator": estimator, "scale_rewards": scale, "precision": "float64"}
    filtered = replay_rows(frame, {}, {**advantage, "filter": filter_}).rows
    kept = filtered.filter(pl.col("kept"))
    assert 0 < kept.height < frame.height
    survivors = frame.join(
        kept.select("step", "group_id", "rollout_index"), on=["step", "group_id", "rollout_index"]
    )
    alone = replay_rows(survivors, {}, advantage).rows
    key = ["step", "group_id", "rollout_index"]
    got = kept.sort(key)["advantage"].to_list()
    assert got == pytest.approx(alone.sort(key)["advantage"].to_list(), abs=1e-12)


def test_nemo_rl_legacy_and_trivial_rules_part_on_a_float32_residue():
    # Row 0's peers are all 0.03: the trivial rule (PR #4158) drops it; in float32 its std is a
    # rounding residue (~1e-5, not 0), which the legacy rule keeps, as the trainer does.
    frame = rollouts(reward=[0.0, 0.03, 0.03, 0.03], resolved=[False] * 4)
    legacy = run(frame, filter="nemo-rl", std_guard="legacy", precision="float32").rows
    trivial = run(frame, filter="nemo-rl", std_guard="trivial", precision="float32").rows
    assert legacy.sort("rollout_index")["kept"].to_list() == [True] * 4
    assert trivial.sort("rollout_index")["kept"].to_list() == [False, True, True, True]
