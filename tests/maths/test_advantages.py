"""Tests for replay_cli.maths.advantages: the spec §4.1 worked examples and each NeMo-RL quirk."""

import pytest

from factories import replay_rows, rollouts

OFF = {"enabled": False}


def advantages(rewards, advantage=None, **columns):
    result = replay_rows(rollouts(reward=rewards, **columns), OFF, advantage or {})
    return result.rows.sort("rollout_index")


def test_loo_lone_success_is_not_normalised():
    rows = advantages([1.0, 0.0, 0.0, 0.0])
    assert rows["advantage"].to_list() == pytest.approx(
        [1.0, -0.57735, -0.57735, -0.57735], abs=1e-4
    )
    assert rows["std"][0] == 0.0


def test_mean_baseline_example():
    rows = advantages([1.0, 0.0, 0.0, 0.0], {"baseline": "mean"})
    assert rows["advantage"].to_list() == pytest.approx([1.5, -0.5, -0.5, -0.5], abs=1e-5)


def test_two_of_four_example():
    rows = advantages([1.0, 1.0, 0.0, 0.0])
    assert rows["advantage"].to_list() == pytest.approx(
        [1.1547, 1.1547, -1.1547, -1.1547], abs=1e-4
    )


def test_group_of_two_has_std_zero_and_raw_difference():
    rows = advantages([0.5, -1.0])
    assert rows["std"].to_list() == [0.0, 0.0]
    assert rows["advantage"].to_list() == pytest.approx([1.5, -1.5])


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_singleton_group_gets_zero_advantage(precision):
    rows = advantages([0.7], {"precision": precision})
    assert rows["baseline"][0] == pytest.approx(0.7)
    assert rows["std"][0] == 0.0
    assert rows["advantage"][0] == 0.0


def test_all_equal_rewards_give_zero():
    rows = advantages([1.0, 1.0, 1.0, 1.0])
    assert rows["advantage"].to_list() == [0.0, 0.0, 0.0, 0.0]


def test_no_normalize_keeps_differences():
    rows = advantages([1.0, 1.0, 0.0, 0.0], {"normalize": False})
    assert rows["advantage"].to_list() == pytest.approx([2 / 3, 2 / 3, -2 / 3, -2 / 3], abs=1e-6)


def test_clip_is_applied_last_and_unclipped_is_kept():
    rows = advantages([1.0, 1.0, 0.0, 0.0], {"clip_low": -1.0, "clip_high": 1.0})
    assert rows["advantage"].to_list() == pytest.approx([1.0, 1.0, -1.0, -1.0])
    assert rows["advantage_unclipped"][0] == pytest.approx(1.1547, abs=1e-4)


def _residue_case():
    """Find [0] + [c]*7 whose float32 LOO std for the 0 row is a rounding residue (not pinned to one c)."""
    for k in range(1, 100):
        rewards = [0.0] + [k / 100] * 7
        rows = advantages(rewards, {"std_guard": "legacy"})
        if rows["std"][0] != 0.0:
            return rewards, rows
    pytest.fail("no input left a float32 residue")


def test_float32_residue_spikes_under_legacy_guard():
    _, rows = _residue_case()
    assert 0 < rows["std"][0] < 1e-3
    assert abs(rows["advantage"][0]) > 100


def test_trivial_guard_never_spikes_on_the_residue():
    rewards, _ = _residue_case()
    rows = advantages(rewards, {"std_guard": "trivial"})
    assert rows["peers_all_equal"][0]
    assert rows["advantage"][0] == pytest.approx(-rewards[1], rel=1e-6)


def test_trivial_guard_never_spikes_on_any_lone_outlier():
    # A lone low and a lone high value alike: the guard's two branches (issue 38).
    for k in range(1, 100):
        rows = advantages([0.0] + [k / 100] * 7)
        assert abs(rows["advantage"][0]) <= 1.0
        rows = advantages([1.0] + [k / 100] * 7)
        assert abs(rows["advantage"][0]) <= 1.0


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_a_lone_high_value_among_equal_peers_is_not_normalised(precision):
    # The lone success's peers are all 0.09: its advantage is the raw 1 - 0.09, not that divided
    # by a rounding-sized std (26,794 with the lone-high branch of the guard broken).
    rows = advantages([1.0] + [0.09] * 7, {"precision": precision})
    assert rows["advantage"][0] == pytest.approx(0.91, abs=1e-6)


def test_float64_leaves_no_residue_for_the_pr_example():
    rows = advantages([0.0] + [0.95] * 7, {"precision": "float64", "std_guard": "legacy"})
    assert rows["advantage"][0] == pytest.approx(-0.95)


def test_masked_rows_vote_in_the_baseline_by_default():
    rows = advantages([1.0, 0.0, 0.0, 0.0], mask_sample=[False, False, False, True])
    # Row 0's peers are [0, 0, 0] including the masked one.
    assert rows["baseline"][1] == pytest.approx(1 / 3, abs=1e-6)


def test_exclude_masked_drops_masked_rows_from_the_baseline():
    rows = advantages(
        [1.0, 1.0, 0.0, 0.0], {"exclude_masked": True}, mask_sample=[False, False, False, True]
    )
    # Row 2's valid peers are [1, 1] (the masked row 3 does not vote): baseline 1.0.
    assert rows["baseline"][2] == pytest.approx(1.0)
    # The masked row itself is divided by sum(valid) - 1 = 2 over all three valid rows (trainer quirk).
    assert rows["baseline"][3] == pytest.approx(1.0)


def test_group_id_reused_at_another_step_is_another_group():
    frame = rollouts(
        reward=[1.0, 0.0, 0.0, 0.0],
        step=[1, 1, 2, 2],
        group_id=[5, 5, 5, 5],
        rollout_index=[0, 1, 0, 1],
    )
    rows = replay_rows(frame, OFF).rows.sort("step", "rollout_index")
    assert rows["advantage"].to_list() == pytest.approx([1.0, -1.0, 0.0, 0.0])


def test_validation_rows_get_no_advantage():
    rows = advantages([1.0, 0.0, 0.5], split=["train", "train", "validation"])
    assert rows["advantage"][2] is None
    assert rows["advantage"][:2].to_list() == pytest.approx([1.0, -1.0])


def test_advantage_raw_ignores_shaping():
    frame = rollouts(reward=[1.0, 1.0, 1.0, 1.0], openhands_run_time=[60.0, 120.0, 180.0, 240.0])
    rows = replay_rows(frame, {"lambda_time": 1 / 60}).rows.sort("rollout_index")
    assert rows["advantage_raw"].to_list() == [0.0, 0.0, 0.0, 0.0]
    assert rows["advantage"][0] > 0 > rows["advantage"][3]


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_the_toggled_baseline_drops_or_adds_the_masked_rows_votes(precision):
    """`baseline_masking_toggled` is the baseline under the other masking choice. A group of three
    with one masked row: with masked rows voting (default), the toggle leaves two valid rows, so
    each valid row's LOO baseline is the other valid row's reward, and the masked row's is the
    mean of both (it divides by n - 1 = 1 as the trainer does); with exclude_masked, the toggle
    lets all three vote."""
    frame = rollouts(
        reward=[1.0, 0.0, 0.5], mask_sample=[False, False, True], resolved=[True, False, False]
    )
    voting = replay_rows(frame, {"enabled": False}, {"precision": precision}).rows
    assert voting.sort("rollout_index")["baseline_masking_toggled"].to_list() == [0.0, 1.0, 1.0]
    excluded = replay_rows(
        frame, {"enabled": False}, {"precision": precision, "exclude_masked": True}
    ).rows.sort("rollout_index")
    assert excluded["baseline_masking_toggled"].to_list() == [0.25, 0.75, 0.5]
    assert excluded["baseline"].to_list() == [0.0, 1.0, 1.0]
