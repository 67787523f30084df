"""Tests for replay_cli.maths.shaping: every rule and quirk of spec §3.2 (nemo-rl) and §3.3 (internal)."""

import math

import polars as pl
import pytest

from replay_cli.advice.verdict import judge

from factories import replay_rows, rollouts


def shaped(shaping, **columns):
    return replay_rows(rollouts(**columns), shaping).rows.sort("rollout_index")


def test_sixty_minutes_cost_one():
    rows = shaped({}, reward=[1.0], openhands_run_time=[3600.0])
    assert rows["reward_shaped"][0] == pytest.approx(0.0)
    assert rows["deduction"][0] == pytest.approx(1.0)
    assert rows["minutes"][0] == pytest.approx(60.0)


@pytest.mark.parametrize(
    ("run_time", "minutes"),
    [(None, 0.0), (-30.0, 0.0), (math.nan, 0.0), (math.inf, 0.0), (-math.inf, 0.0), (90.0, 1.5)],
)
def test_missing_negative_and_invalid_run_times_count_zero_minutes(run_time, minutes):
    rows = shaped({}, reward=[1.0], openhands_run_time=[run_time])
    assert rows["minutes"][0] == minutes
    assert rows["reward_shaped"][0] == pytest.approx(1.0 - minutes / 60)


def test_invalid_run_times_are_counted_in_the_report():
    result = replay_rows(
        rollouts(reward=[1.0, 0.0, 0.0], openhands_run_time=[math.nan, math.inf, None]), {}
    )
    summary = result.summary.row(0, named=True)
    assert summary["input/run_time_invalid"] == 2
    assert summary["input/run_time_null"] == 1


def test_apply_to_correct_skips_failures():
    rows = shaped({"apply_to": "correct"}, reward=[1.0, 0.0], openhands_run_time=[600.0, 600.0])
    assert rows["charged"].to_list() == [True, False]
    assert rows["reward_shaped"].to_list() == pytest.approx([1.0 - 10 / 60, 0.0])


def test_negative_reward_is_truthy_and_counts_as_correct():
    rows = shaped(
        {"apply_to": "correct"}, reward=[-0.5], resolved=[True], openhands_run_time=[600.0]
    )
    assert rows["charged"][0]
    assert rows["reward_shaped"][0] == pytest.approx(-0.5 - 10 / 60)
    result = replay_rows(rollouts(reward=[-0.5], resolved=[True]), {"apply_to": "correct"})
    assert result.summary["quirk/negative_reward_charged"][0] == 1


def test_resolved_but_zeroed_reward_is_skipped_under_correct():
    rows = shaped({"apply_to": "correct"}, reward=[0.0], resolved=[True], zeroed_by_penalty=[True])
    assert not rows["charged"][0]
    assert rows["reward_shaped"][0] == 0.0


def test_floor_clamps_and_deduction_can_be_negative():
    # base 0, bonus 0.1, time 0.5: new -0.4 is floored to 0.05, so the "deduction" is -0.05.
    rows = shaped(
        {"floor": 0.05, "lambda_call_bonus": 0.1, "call_bonus_ref": 10.0},
        reward=[0.0],
        calls=[20],
        openhands_run_time=[1800.0],
    )
    assert rows["floored"][0]
    assert rows["reward_shaped"][0] == pytest.approx(0.05)
    assert rows["deduction"][0] == pytest.approx(-0.05)


def test_call_bonus_saturates():
    rows = shaped(
        {"lambda_time": 0.0, "lambda_call_bonus": 0.1, "call_bonus_ref": 56.0},
        reward=[1.0, 1.0],
        calls=[28, 200],
    )
    assert rows["bonus"].to_list() == pytest.approx([0.05, 0.1])


def test_masked_rows_are_not_charged_and_keep_raw_reward():
    rows = shaped(
        {}, reward=[0.0, 0.0], mask_sample=[True, False], openhands_run_time=[1800.0, 600.0]
    )
    assert rows["charged"].to_list() == [False, True]
    assert rows["reward_shaped"][0] == 0.0


def test_no_mask_flagged_charges_flagged_rows():
    rows = shaped(
        {"mask_flagged": False}, reward=[0.0], mask_sample=[True], openhands_run_time=[1800.0]
    )
    assert rows["charged"][0]
    assert not rows["masked"][0]
    assert rows["reward_shaped"][0] == pytest.approx(-0.5)


def test_validation_rows_are_never_charged_under_nemo_rl():
    rows = shaped({}, reward=[1.0], split=["validation"])
    assert not rows["charged"][0]
    assert rows["reward_shaped"][0] == 1.0


def test_shaping_off_is_a_raw_replay():
    rows = shaped({"enabled": False}, reward=[1.0, 0.0])
    assert rows["reward_shaped"].to_list() == [1.0, 0.0]
    assert rows["deduction"].to_list() == [0.0, 0.0]


# Internal semantics, item by item (spec §3.3).


def test_internal_item1_charges_masked_rows():
    rows = shaped(
        {"internal_items": (1,)}, reward=[0.0], mask_sample=[True], openhands_run_time=[1800.0]
    )
    assert rows["charged"][0]
    assert rows["reward_shaped"][0] == pytest.approx(-0.5)


def test_internal_item2_zeroed_rows_end_at_zero():
    rows = shaped(
        {"internal_items": (2,)},
        reward=[0.0],
        zeroed_by_penalty=[True],
        openhands_run_time=[1800.0],
    )
    assert rows["reward_shaped"][0] == 0.0
    assert rows["deduction"][0] == 0.0
    nemo = shaped({}, reward=[0.0], zeroed_by_penalty=[True], openhands_run_time=[1800.0])
    assert nemo["reward_shaped"][0] == pytest.approx(-0.5)


@pytest.mark.parametrize("reward", [1.0, -0.5])
def test_internal_item2_resets_a_zeroed_rows_reward_whatever_it_was(reward):
    # The reset is to exactly 0.0, not to the row's reward: a test with a reward of 0 cannot
    # tell the two apart.
    rows = shaped(
        {"internal_items": (2,)},
        reward=[reward, reward],
        resolved=[True, True],
        zeroed_by_penalty=[True, False],
        openhands_run_time=[1800.0, 1800.0],
    )
    assert rows["reward_shaped"].to_list() == [0.0, pytest.approx(reward - 0.5)]
    assert rows["charged"].to_list() == [False, True]
    assert rows["deduction"][0] == 0.0


def test_internal_item3_gate_is_resolved_alone():
    rows = shaped(
        {"apply_to": "correct", "internal_items": (3,)},
        reward=[0.0],
        resolved=[True],
        openhands_run_time=[600.0],
    )
    assert rows["charged"][0]
    assert rows["reward_shaped"][0] == pytest.approx(-10 / 60)


def test_internal_item4_charges_validation_rows():
    rows = shaped(
        {"internal_items": (4,)}, reward=[1.0], split=["validation"], openhands_run_time=[600.0]
    )
    assert rows["charged"][0]
    result = replay_rows(rollouts(reward=[1.0], split=["validation"]), {"semantics": "internal"})
    step = result.steps.row(0, named=True)
    assert step["validation/accuracy"] == 1.0
    assert step["validation/total_reward/mean"] == pytest.approx(1.0 - 10 / 60)


def test_internal_item8_defaults_call_bonus_ref_to_56():
    rows = shaped(
        {"internal_items": (8,), "lambda_call_bonus": 0.1, "lambda_time": 0.0},
        reward=[1.0],
        calls=[28],
    )
    assert rows["bonus"][0] == pytest.approx(0.05)


def test_nemo_rl_requires_call_bonus_ref_with_a_bonus():
    from replay_cli import ConfigError, build_config

    with pytest.raises(ConfigError, match="call_bonus_ref must be > 0"):
        build_config({"shaping": {"lambda_call_bonus": 0.1}})


def test_internal_semantics_switches_every_item():
    rows = shaped(
        {"semantics": "internal"},
        reward=[0.0, 0.0],
        mask_sample=[True, False],
        zeroed_by_penalty=[False, True],
        openhands_run_time=[1800.0, 1800.0],
    )
    assert rows["reward_shaped"].to_list() == pytest.approx([-0.5, 0.0])


def _with_validation():
    return rollouts(
        reward=[1.0, 0.0, 1.0, 0.0],
        group_id=[0, 0, 1, 1],
        split=["train", "train", "validation", "validation"],
        openhands_run_time=[600.0, 1200.0, 1800.0, 600.0],
    )


def test_validation_shaped_charges_validation_like_the_sync_path():
    frame = _with_validation()
    plain = replay_rows(frame, {})
    synced = replay_rows(frame, {"validation_shaped": True}, metrics_by="batch")
    val = synced.rows.filter(pl.col("split") == "validation").sort("rollout_index")
    assert val["charged"].to_list() == [True, True]
    assert val["reward_shaped"].to_list() == pytest.approx([1.0 - 0.5, 0.0 - 1 / 6])
    assert val["advantage"].null_count() == 2  # still no advantage for validation rows
    step = synced.steps.row(0, named=True)
    assert step["validation/accuracy"] == 0.5
    assert step["validation/total_reward/mean"] == pytest.approx((0.5 - 1 / 6) / 2)
    # Training rows are shaped and trained exactly as without the switch.
    train = pl.col("split") == "train"
    assert synced.rows.filter(train)["advantage"].to_list() == (
        plain.rows.filter(train)["advantage"].to_list()
    )
    assert plain.rows.filter(~train)["charged"].to_list() == [False, False]
    assert (
        "validation rows are charged (the single-controller (sync) path)"
        in (
            judge(synced.summary, synced.top_groups).findings.filter(
                pl.col("kind") == "validation_not_comparable"
            )["text"][0]
        )
    )


def test_validation_shaped_label_sweep_and_stable_ids():
    from replay_cli import ReplayConfig
    from replay_cli.parameters import expand, parse_list

    # The id hashes every parameter, validation_shaped too (pinned: stable across runs).
    assert ReplayConfig().config_id == "55dfd301b2"
    configs = expand({}, {"validation_shaped": parse_list("validation_shaped", "false,true")})
    assert [c.label for c in configs] == ["λ=1/60 all", "λ=1/60 all val-shaped"]
    assert configs[0].config_id == "55dfd301b2" != configs[1].config_id


def test_a_row_landing_exactly_on_the_floor_is_charged_but_not_floored():
    """`floored` counts the clamp (the PR's metric): a row whose shaped reward is exactly the floor
    was not moved by it; one just below is clamped up to it."""
    rows = shaped(
        {"lambda_time": 0.5, "floor": 0.5}, reward=[1.0, 1.0], openhands_run_time=[60.0, 61.2]
    )
    assert rows["reward_shaped"].to_list() == [0.5, 0.5]
    assert rows["charged"].to_list() == [True, True]
    assert rows["floored"].to_list() == [False, True]
    assert rows["deduction"].to_list() == [0.5, 0.5]


@pytest.mark.parametrize("mask_flagged", [True, False])
def test_the_polars_plans_mask_exactly_the_flagged_rows(mask_flagged):
    """The filters' path (row_plans) computes `masked` itself: flagged and masking on."""
    frame = rollouts(reward=[1.0, 0.0, 1.0, 0.0], mask_sample=[True, False, False, True])
    for advantage in ({}, {"filter": "nemo-rl"}):
        rows = replay_rows(frame, {"mask_flagged": mask_flagged}, advantage).rows
        want = [True, False, False, True] if mask_flagged else [False] * 4
        assert rows.sort("rollout_index")["masked"].to_list() == want
