"""Tests for replay_cli.rollouts.fit: a setting that reads a column the input lacks is refused
(the call bonus) or said (the rest), never left to do nothing silently."""

import polars as pl
import pytest

from replay_cli import api
from replay_cli.errors import ConfigError
from replay_cli.rollouts.validation import rollouts_from_frame

from factories import config, rollouts

FRAME = rollouts(reward=[1.0, 0.0, 1.0, 0.0], openhands_run_time=[60.0, 600.0, 300.0, 30.0])


def test_a_call_bonus_without_a_calls_column_is_refused_before_any_work():
    bare = rollouts_from_frame(FRAME.drop("calls").with_columns(tool_calls=pl.lit(4)))
    paying = config({"lambda_call_bonus": 0.1, "call_bonus_ref": 20.0})
    with pytest.raises(ConfigError, match="no 'calls' column") as caught:
        api.replay(bare, [config(), paying])
    assert "'tool_calls' looks like the tool-call count: try --map tool_calls=calls" in str(
        caught.value
    )
    # The bonus switched off, or shaping off, reads no calls: nothing to refuse.
    assert (
        api.replay(
            bare,
            [
                config(),
                config({"enabled": False, "lambda_call_bonus": 0.1, "call_bonus_ref": 20.0}),
            ],
        ).result.summary.height
        == 2
    )
    # With the column, the bonus is paid.
    paid = api.replay(rollouts_from_frame(FRAME), [paying])
    assert paid.result.rows["bonus"].max() == pytest.approx(0.1 * 10 / 20)


SETTINGS = {
    "mask_sample": (
        config(advantage={"exclude_masked": True}),
        "exclude_masked leaves every row voting",
    ),
    "split": (config({"validation_shaped": True}), "validation_shaped charges no row"),
    "zeroed_by_penalty": (config({"internal_items": (2,)}), "internal item 2 resets no row to 0"),
}


@pytest.mark.parametrize("column", sorted(SETTINGS))
def test_a_setting_that_cannot_act_on_the_input_is_said(column):
    cfg, what = SETTINGS[column]
    lacking = api.replay(rollouts_from_frame(FRAME.drop(column)), [cfg])
    (note,) = [n for n in lacking.result.notes if column in n]
    label = lacking.result.summary["label"][0]
    assert note.startswith(f"'{label}': the input has no '{column}' column, so {what}")
    assert note.endswith("(the setting does nothing here).")
    having = api.replay(rollouts_from_frame(FRAME), [cfg])
    assert not [n for n in having.result.notes if "does nothing here" in n]
    # The default settings read the same columns without a word: they ask for nothing.
    assert not [
        n
        for n in api.replay(rollouts_from_frame(FRAME.drop(column)), [config()]).result.notes
        if "does nothing" in n
    ]


def test_unmasked_shaping_without_a_mask_column_is_said():
    lacking = api.replay(
        rollouts_from_frame(FRAME.drop("mask_sample")), [config({"mask_flagged": False})]
    )
    assert any("mask_flagged=false charges no extra row" in n for n in lacking.result.notes)
