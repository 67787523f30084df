"""Tests for replay_cli.maths.peers: each peer trainer's documented values and edge cases."""

import math

import polars as pl
import pytest

from replay_cli.config import AdvantageParams
from replay_cli.errors import EstimatorError
from replay_cli.maths.advantages import AdvColumns
from replay_cli.maths.peers import add_peer_advantages

from factories import replay_rows, rollouts

OUT = AdvColumns("b", "s", "u", "a", "eq", "norm")


def peer_columns(rewards, groups, estimator, validation=None, **params):
    """Every output column of the estimator (baseline, std, unclipped, advantage, flags), straight
    from it (so NaN rewards can be fed in)."""
    frame = pl.LazyFrame(
        {
            "r": rewards,
            "_gid": groups,
            "_bid": [0] * len(rewards),
            "_is_validation": validation or [False] * len(rewards),
        },
        schema={"r": pl.Float64, "_gid": pl.Int64, "_bid": pl.Int64, "_is_validation": pl.Boolean},
    )
    p = AdvantageParams(estimator=estimator, precision="float64", **params)
    return add_peer_advantages(frame, "r", "_gid", "_bid", p, OUT).collect()


def peer(rewards, estimator, groups=None, **params):
    """The advantages alone, one group unless `groups` is given."""
    return peer_columns(rewards, groups or [0] * len(rewards), estimator, **params)["a"].to_list()


def test_verl_grpo_unbiased_std_and_eps():
    assert peer([1.0, 0.0, 0.0, 0.0], "verl-grpo") == pytest.approx(
        [0.75 / 0.500001] + [-0.25 / 0.500001] * 3
    )


def test_verl_grpo_singleton_leaks_the_reward():
    assert peer([0.7], "verl-grpo") == pytest.approx([0.7 / (1 + 1e-6)])


def test_verl_grpo_without_std_is_dr_grpo():
    assert peer([1.0, 0.0, 0.0, 0.0], "verl-grpo", normalize=False) == pytest.approx(
        [0.75, -0.25, -0.25, -0.25]
    )


def test_verl_grpo_all_equal_and_nan():
    assert peer([1.0, 1.0], "verl-grpo") == [0.0, 0.0]
    assert all(math.isnan(a) for a in peer([1.0, float("nan")], "verl-grpo"))


def test_verl_rloo():
    assert peer([1.0, 0.0, 0.0, 0.0], "verl-rloo") == pytest.approx([1.0, -1 / 3, -1 / 3, -1 / 3])
    assert peer([0.7], "verl-rloo") == pytest.approx([0.7])


def test_trl_group_batch_none():
    assert peer([1.0, 0.0, 0.0, 0.0], "trl-grpo") == pytest.approx(
        [0.75 / 0.5001] + [-0.25 / 0.5001] * 3
    )
    assert peer([1.0, 0.0, 0.0, 0.0], "trl-grpo", scale_rewards="none") == pytest.approx(
        [0.75, -0.25, -0.25, -0.25]
    )
    # batch: the group mean is subtracted, the std is the whole step's.
    batch = peer([1.0, 0.0, 1.0, 1.0], "trl-grpo", groups=[0, 0, 1, 1], scale_rewards="batch")
    step_std = pl.Series([1.0, 0.0, 1.0, 1.0]).std()
    assert batch == pytest.approx([0.5 / (step_std + 1e-4), -0.5 / (step_std + 1e-4), 0.0, 0.0])


def test_trl_nan_rows_get_zero_and_leave_the_statistics():
    adv = peer([1.0, 0.0, float("nan")], "trl-grpo")
    std = math.sqrt(0.5)
    assert adv == pytest.approx([0.5 / (std + 1e-4), -0.5 / (std + 1e-4), 0.0])


def test_trl_singleton_is_zero():
    assert peer([0.7], "trl-grpo") == [0.0]


def test_openrlhf_group_norm():
    assert peer([1.0, 0.0, 0.0, 0.0], "openrlhf-group-norm") == pytest.approx(
        [0.75 / 0.5] + [-0.25 / 0.5] * 3
    )
    assert peer([1.0, 1.0], "openrlhf-group-norm") == [0.0, 0.0]


def test_openrlhf_rloo_and_dr_grpo():
    assert peer([1.0, 0.0, 0.0, 0.0], "openrlhf-rloo") == pytest.approx(
        [1.0, -1 / 3, -1 / 3, -1 / 3]
    )
    assert peer([1.0, 0.0, 0.0, 0.0], "dr-grpo") == pytest.approx([0.75, -0.25, -0.25, -0.25])


@pytest.mark.parametrize("estimator", ["openrlhf-group-norm", "openrlhf-rloo", "dr-grpo"])
def test_openrlhf_refuses_singletons_and_uneven_groups(estimator):
    with pytest.raises(EstimatorError, match=r"needs at least 2 rollouts per prompt group"):
        peer([1.0, 0.0, 0.5], estimator, groups=[0, 0, 1])
    with pytest.raises(EstimatorError, match=r"needs groups of one size"):
        peer([1.0, 0.0, 0.5, 1.0, 0.0], estimator, groups=[0, 0, 1, 1, 1])


def test_reinforce_pp_baseline_whitens_the_step():
    adv = peer([1.0, 0.0, 1.0, 1.0], "reinforce-pp-baseline", groups=[0, 0, 1, 1])
    std = math.sqrt(0.5 / 3)
    assert adv == pytest.approx([0.5 / std, -0.5 / std, 0.0, 0.0], rel=1e-6)


def test_reinforce_pp_baseline_singleton_uses_mean_zero():
    # Group [0.7] keeps x = 0.7 (mean := 0); group [1, 0] gives +-0.5; then the step is whitened.
    adv = peer([0.7, 1.0, 0.0], "reinforce-pp-baseline", groups=[0, 1, 1])
    x = pl.Series([0.7, 0.5, -0.5])
    assert adv == pytest.approx(((x - x.mean()) / x.std()).to_list(), rel=1e-6)


def test_reinforce_pp_token_weighted():
    frame = rollouts(reward=[1.0, 0.0, 1.0, 1.0], group_id=[0, 0, 1, 1]).with_columns(
        pl.Series("response_tokens", [3, 1, 1, 1])
    )
    rows = replay_rows(
        frame, {"enabled": False}, {"estimator": "reinforce-pp-baseline", "precision": "float64"}
    ).rows
    x = [0.5, -0.5, 0.0, 0.0]
    w = [3, 1, 1, 1]
    mu = sum(a * b for a, b in zip(x, w, strict=True)) / 6
    var = sum(b * (a - mu) ** 2 for a, b in zip(x, w, strict=True)) / 6 * 6 / 5
    assert rows.sort("group_id", "rollout_index")["advantage"].to_list() == pytest.approx(
        [(a - mu) / math.sqrt(var + 1e-8) for a in x]
    )


def test_estimator_through_replay_and_label():
    result = replay_rows(
        rollouts(reward=[1.0, 0.0, 0.0, 0.0]), {"enabled": False}, {"estimator": "verl-rloo"}
    )
    assert result.rows.sort("rollout_index")["advantage"].to_list() == pytest.approx(
        [1.0, -1 / 3, -1 / 3, -1 / 3]
    )
    assert "verl-rloo" in result.summary["label"][0]


@pytest.mark.parametrize("tokens", [False, True])
def test_reinforce_pp_without_tokens_warns_and_the_manifest_says_so(tmp_path, tokens):
    import json

    from typer.testing import CliRunner

    from replay_cli.cli.app import app

    frame = rollouts(reward=[1.0, 0.0, 1.0, 1.0], group_id=[0, 0, 1, 1])
    if tokens:
        frame = frame.with_columns(pl.Series("response_tokens", [3, 1, 1, 1]))
    src = tmp_path / "in.parquet"
    frame.write_parquet(src)
    out = tmp_path / "r"
    args = ["replay", str(src), "--out", str(out), "--estimator", "reinforce-pp-baseline"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    warned = "Warning: reinforce-pp-baseline: the input has no response_tokens column"
    if tokens:
        assert warned not in result.stderr
        assert manifest["whitening_weights"] == "response_tokens"
        assert manifest["notes"] == []
    else:
        assert warned in result.stderr
        assert manifest["whitening_weights"] == "one per rollout"
        assert manifest["notes"][0].startswith("reinforce-pp-baseline: the input has no")


TWO_GROUPS = ([1.0, 0.0, 0.0, 0.0, 0.2, 0.2, 0.2, 0.2], [0] * 4 + [1] * 4)
MEAN = [0.25] * 4 + [0.2] * 4
GROUP_STD = [0.5] * 4 + [0.0] * 4
LOO = [0.0, 1 / 3, 1 / 3, 1 / 3] + [0.2] * 4
STEP_STD = pl.Series(TWO_GROUPS[0]).std()  # the step's std over all eight rewards
WHITE_STD = math.sqrt(0.75 / 7)  # x = r - group mean over the step: mu 0, var 0.75 / 7


@pytest.mark.parametrize(
    ("estimator", "params", "baseline", "std", "normalized"),
    [
        ("verl-grpo", {}, MEAN, GROUP_STD, True),
        ("verl-grpo", {"normalize": False}, MEAN, None, False),
        ("verl-rloo", {}, LOO, None, False),
        ("trl-grpo", {}, MEAN, GROUP_STD, True),
        ("trl-grpo", {"scale_rewards": "batch"}, MEAN, [STEP_STD] * 8, True),
        ("trl-grpo", {"scale_rewards": "none"}, MEAN, None, False),
        ("openrlhf-group-norm", {}, MEAN, GROUP_STD, True),
        ("openrlhf-rloo", {}, LOO, None, False),
        ("dr-grpo", {}, MEAN, None, False),
        ("reinforce-pp-baseline", {}, MEAN, [WHITE_STD] * 8, True),
    ],
)
def test_each_estimators_baseline_std_and_flags(estimator, params, baseline, std, normalized):
    # A group with a signal beside a group of equal rewards: the baseline, std, normalised flag
    # and equal-peers flag of every row, not only the advantage.
    got = peer_columns(*TWO_GROUPS, estimator, **params)
    assert got["b"].to_list() == pytest.approx(baseline, rel=1e-12, abs=1e-15)
    if std is None:
        assert got["s"].null_count() == 8
    else:
        assert got["s"].to_list() == pytest.approx(std, rel=1e-12, abs=1e-15)
    assert got["norm"].to_list() == [normalized] * 8
    assert got["eq"].to_list() == [False] * 4 + [True] * 4
    assert got["u"].to_list() == got["a"].to_list()
    assert got["u"][4:].to_list() == pytest.approx([0.0] * 4, abs=1e-12)


def test_verl_rloo_only_a_group_of_one_keeps_its_reward():
    got = peer_columns([0.7, 1.0, 0.0], [0, 1, 1], "verl-rloo")
    assert got["u"].to_list() == pytest.approx([0.7, 1.0, -1.0])
    assert got["b"].to_list() == pytest.approx([0.0, 0.0, 1.0])


def test_trl_all_nan_group_counts_as_equal_peers_and_gets_zero():
    got = peer_columns([float("nan"), float("nan"), 1.0, 0.0], [0, 0, 1, 1], "trl-grpo")
    assert got["eq"].to_list() == [True, True, False, False]
    assert got["u"][:2].to_list() == [0.0, 0.0]


def test_reinforce_pp_whitening_adds_exactly_1e_8_to_the_variance():
    # A step whose spread is itself ~1e-8: the epsilon is a visible part of the denominator.
    got = peer_columns([0.0, 2e-4, 5.0, 5.0], [0, 0, 1, 1], "reinforce-pp-baseline")
    var = (2 * 1e-8) / 4 * 4 / 3
    want = [-1e-4 / math.sqrt(var + 1e-8), 1e-4 / math.sqrt(var + 1e-8), 0.0, 0.0]
    assert got["u"].to_list() == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("estimator", ["openrlhf-group-norm", "openrlhf-rloo", "dr-grpo"])
def test_openrlhf_checks_only_the_training_rows(estimator):
    # Singleton and uneven groups among validation rows are not the training batch's shape; a
    # step with no training rows at all passes the check and still gets its values.
    rewards, groups = [1.0, 0.0, 0.5, 0.3, 0.1], [0, 0, 1, 2, 2]
    got = peer_columns(rewards, groups, estimator, validation=[False, False, True, True, True])
    assert got["u"][:2].to_list() == pytest.approx(
        [1.0, -1.0]
        if estimator == "openrlhf-rloo"
        else [0.5 / 0.5**0.5, -0.5 / 0.5**0.5]
        if estimator == "openrlhf-group-norm"
        else [0.5, -0.5]
    )
    only_validation = peer_columns([1.0, 0.0, 0.5], [0, 0, 1], estimator, validation=[True] * 3)
    assert only_validation.height == 3
