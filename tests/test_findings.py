"""Tests for replay_cli.advice.findings: each kind of finding on a group built to show it, the numbers
it quotes, the headline rows of a sweep, and the frontier's highlighted configs."""

import polars as pl
import pytest

from replay_cli import api, findings, highlights
from replay_cli.engine.run import run_replay
from replay_cli.rollouts.validation import rollouts_from_frame

from factories import config, replay_frame, rollouts


def kinds(result):
    return dict(result.findings.select("kind", "value").rows())


def test_all_fail_group_learning_to_fail_faster():
    frame = rollouts(reward=[0.0] * 4, openhands_run_time=[600.0, 1200.0, 1800.0, 2400.0])
    result = replay_frame(frame, {"apply_to": "all"})
    row = result.findings.filter(pl.col("kind") == "time_only_signal").row(0, named=True)
    assert row["value"] == 1.0
    assert row["severity"] == "warning"
    assert row["text"].startswith("λ=0.01667 all: 100% of training groups are all-fail groups")
    assert "apply_to=correct" in row["text"]
    # Charging resolved rollouts only keeps the failures tied: nothing to report.
    assert "time_only_signal" not in kinds(replay_frame(frame, {"apply_to": "correct"}))


def test_signal_only_from_uncharged_masked_rows():
    # Every charged row is floored to 0.05; the masked row keeps 0.0 and still votes.
    frame = rollouts(reward=[0.0] * 4, mask_sample=[False, False, False, True])
    result = replay_frame(frame, {"floor": 0.05})
    group = result.groups.row(0, named=True)
    assert group["has_signal"]
    assert not group["has_signal_raw"]
    assert group["uncharged_only_signal"]
    assert result.summary["signal/uncharged_only_rate"][0] == 1.0
    assert kinds(result)["uncharged_only_signal"] == 1.0
    # With the masked row out of the baseline (PR #4160) the group has no signal left.
    excluded = replay_frame(frame, {"floor": 0.05}, {"exclude_masked": True})
    assert not excluded.groups["uncharged_only_signal"][0]
    assert "uncharged_only_signal" not in kinds(excluded)


def test_time_spread_among_charged_rows_is_not_uncharged_only():
    frame = rollouts(
        reward=[0.0] * 4,
        openhands_run_time=[600.0, 1200.0, 1800.0, 2400.0],
        mask_sample=[False, False, False, True],
    )
    result = replay_frame(frame, {})
    assert result.groups["time_only_signal"][0]
    assert not result.groups["uncharged_only_signal"][0]


def explosive():
    # The resolved row's peers differ by one second: a leave-one-out std of about 1e-4.
    return rollouts(
        reward=[1.0, 0.0, 0.0, 0.0], openhands_run_time=[600.0, 600.0, 600.0, 601.0], step=[3] * 4
    )


def test_unclipped_explosion_names_the_group_and_its_std():
    result = replay_frame(explosive(), {}, {"precision": "float64"})
    group = result.groups.row(0, named=True)
    top_row = result.rows.sort("advantage_unclipped", descending=True).row(0, named=True)
    assert group["max_abs_advantage_unclipped"] == pytest.approx(top_row["advantage_unclipped"])
    assert group["std_at_max_abs"] == pytest.approx(top_row["std"])
    assert top_row["std"] < 1e-3
    found = result.findings.filter(pl.col("kind") == "explosion_unclipped").row(0, named=True)
    assert found["severity"] == "hazard"
    assert found["value"] == group["max_abs_advantage_unclipped"]
    assert f"max |advantage| {found['value']:.4g} at step 3, group 0" in found["text"]
    assert f"group std of {top_row['std']:.2g}" in found["text"]
    assert "--clip-low -3 --clip-high 3" in found["text"]


def test_a_clip_turns_the_explosion_into_information():
    result = replay_frame(
        explosive(), {}, {"precision": "float64", "clip_low": -3.0, "clip_high": 3.0}
    )
    assert "explosion_unclipped" not in kinds(result)
    assert kinds(result)["explosion_clipped"] == result.summary["adv/clip_frac"][0]


def test_clipped_twin_in_the_sweep_is_named():
    rollouts_ = rollouts_from_frame(explosive())
    configs = [
        config({}, {"precision": "float64"}),
        config({}, {"precision": "float64", "clip_low": -3.0, "clip_high": 3.0}),
    ]
    result = run_replay(rollouts_, configs)
    text = result.findings.filter(pl.col("kind") == "explosion_unclipped")["text"][0]
    assert "'λ=0.01667 all clip[-3,3]' is the clipped twin in this sweep" in text


def test_inversion_and_the_largest_safe_lambda():
    frame = rollouts(reward=[1.0, 0.0], openhands_run_time=[3600.0, 60.0])
    configs = [config({"lambda_time": lam}) for lam in (1 / 120, 1 / 30)]
    result = run_replay(rollouts_from_frame(frame), configs)
    rows = result.findings.filter(pl.col("kind") == "inversion")
    assert rows.height == 1  # only the steep lambda inverts: 1 - 2.0 < 0 - 1/30
    assert rows["value"][0] == 1.0
    assert rows["config_id"][0] == configs[1].config_id
    assert "inversion-free lambda_time with these settings here is 0.008333" in rows["text"][0]


def test_charged_validation_is_not_comparable():
    frame = rollouts(
        reward=[1.0, 0.0, 1.0, 1.0],
        group_id=[0, 0, 1, 1],
        split=["train", "train", "validation", "validation"],
        openhands_run_time=[600.0, 600.0, 1200.0, 1200.0],
    )
    internal = replay_frame(frame, {"semantics": "internal"})
    row = internal.summary.row(0, named=True)
    found = internal.findings.filter(pl.col("kind") == "validation_not_comparable")
    assert found["value"][0] == pytest.approx(
        row["validation/total_reward/mean"] - row["validation/accuracy"]
    )
    assert found["value"][0] == pytest.approx(-20 / 60)
    assert "validation_not_comparable" not in kinds(replay_frame(frame, {}))


def test_recommended_and_headlines_over_a_sweep(synth_path):
    configs = [config({"enabled": False})] + [
        config({"lambda_time": lam}, {"clip_low": -3.0, "clip_high": 3.0})
        for lam in (1 / 240, 1 / 120, 1 / 60, 1 / 30)
    ]
    result = api.replay(api.load([synth_path]), configs)
    found = result.findings
    recommended = found.filter((pl.col("kind") == "recommended") & ~pl.col("headline"))
    summary = result.summary
    gain = summary["signal/group_rate"] - summary["signal/group_rate_raw"]
    expected = summary.filter(
        (gain > 1e-9) & (summary["inversion/group_rate"] == 0) & summary["enabled"]
    )["config_id"]
    assert sorted(recommended["config_id"]) == sorted(expected)
    # More than three configs of one kind: one headline sentence, the per-config rows kept.
    for kind, n in found.filter(pl.col("config_id").is_not_null())["kind"].value_counts().rows():
        head = found.filter((pl.col("kind") == kind) & pl.col("config_id").is_null())
        assert head.height == (1 if n > 3 else 0)
        if n > 3:
            assert head["text"][0].startswith(f"{n} configs ")
    severities = found["severity"].to_list()
    order = ["hazard", "warning", "info", "ok"]
    assert severities == sorted(severities, key=order.index)


def test_no_safe_config_says_so():
    frame = rollouts(reward=[1.0, 0.0], openhands_run_time=[3600.0, 60.0])
    result = replay_frame(frame, {"lambda_time": 1 / 30})
    last = result.findings.filter(pl.col("kind") == "recommended").row(0, named=True)
    assert last["config_id"] is None
    assert last["text"].startswith("No shaped config adds signal")


def test_findings_equal_those_of_the_report_tables(synth_path, tmp_path):
    configs = [config({"enabled": False}), config({}), config({"apply_to": "correct"})]
    out = tmp_path / "r"
    result = api.replay_to_report([synth_path], configs, out)
    on_disk = pl.read_parquet(out / "findings.parquet")
    assert on_disk.equals(result.findings)
    again = findings(
        pl.read_parquet(out / "summary.parquet"), pl.scan_parquet(out / "groups.parquet")
    )
    assert again.equals(on_disk)
    assert on_disk.columns == ["config_id", "kind", "severity", "value", "text", "headline"]


def test_highlights_default_and_chosen(synth_path):
    configs = [config({"enabled": False})] + [
        config({"lambda_time": lam, "apply_to": a})
        for lam in (1 / 120, 1 / 15)
        for a in ("all", "correct")
    ]
    summary = api.replay(api.load([synth_path]), configs).summary
    chosen = highlights(summary)
    assert chosen[0] == configs[0].config_id
    assert len(chosen) == 3
    # No clip here: harm = inversion rate + explosion share; ties go to the smaller gain.
    harm = summary["inversion/group_rate"] + summary["adv/explosion_frac"]
    gain = summary["signal/group_rate"] - summary["signal/group_rate_raw"]
    ranked = summary.with_columns(harm.alias("h"), gain.alias("g")).filter(pl.col("enabled"))
    worst = ranked.sort(["h", "g"], descending=[True, False])["config_id"][0]
    best = ranked.sort(["h", "g"], descending=[False, True])["config_id"][0]
    assert chosen[1:] == [best, worst]
    wanted = [configs[2].config_id[:6], "λ=0.06667 all"]
    assert highlights(summary, wanted) == [configs[2].config_id, configs[3].config_id]


def test_top_groups_of_chunks_equal_those_of_the_whole_table(synth_path):
    from replay_cli.advice.top_groups import top_groups, top_of_config

    configs = [config({}), config({"lambda_time": 1 / 30, "floor": 0.05})]
    groups = run_replay(rollouts_from_frame(pl.read_parquet(synth_path)), configs).groups
    whole = top_groups(groups)
    assert whole.height == 2 * 5
    pieces = [
        top_of_config(part)
        for (_,), one in groups.partition_by("config_id", as_dict=True).items()
        for part in one.partition_by("step")
    ]
    assert top_groups(pl.concat(pieces)).equals(whole)
    values = whole.filter(pl.col("config_id") == configs[0].config_id)
    assert values["max_abs_advantage_unclipped"].is_sorted(descending=True)
