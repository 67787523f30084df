"""One footing for every config (issue 53 item 8): a sweep that varies a non-shaping setting
measures every config against the one baseline the log was run with, says what the setting does
alone, and launches no change of it on a difference within the interval."""

import polars as pl

from replay_cli.advice.recommendation import recommend
from replay_cli.config import AdvantageParams, ReplayConfig, ShapingParams
from replay_cli.forecast.runs import footing

from advice_rows import OFF, resamples, summary

NOISE = [0.05, -0.05] * 10
UNMASKED = {
    "mask_flagged": False,
    # Shaping off un-masked resolves 55.0% of long problems after T; the baseline's 30.0%
    # (advice_rows.GOOD: every config is measured against it).
    "forecast/resolve_own_off": 0.52,
    "forecast/resolve_own_off@long": 0.55,
}
MASKED = {"mask_flagged": True}


def _rows(unmasked_gain: float, spread: float):
    """c0 shaping off (the baseline), c1 masked, c2 unmasked and `unmasked_gain` faster than
    shaping off with `spread` of noise around it in the resamples."""
    frame = summary(
        {**OFF, **MASKED},
        {**MASKED, "forecast/solve_minutes_vs_off": -0.6},
        {**UNMASKED, "forecast/solve_minutes_vs_off": unmasked_gain},
    )
    table = resamples(
        {
            "c0": [(1.0, 1.0, 0.0, 0.0)] * 20,
            "c1": [(1.0, 1.0, -0.6 + e, 0.0) for e in NOISE],
            "c2": [(1.0, 1.0, unmasked_gain - spread * e / 0.05, 0.0) for e in NOISE],
        }
    )
    return frame, table


def test_a_change_of_a_non_shaping_setting_within_the_interval_is_not_launched():
    # c2 (un-masked) is 0.02 min faster than c1 at its point, well within the noise: c1 is
    # recommended, and c2 says why it was not.
    frame, table = _rows(-0.62, 0.05)
    verdict = recommend(frame, resamples=table)
    assert verdict["config_id"].to_list()[:2] == ["c1", "c2"]
    best = verdict.row(0, named=True)
    assert "should_mask_flagged_samples" not in best["overrides"]
    (reason,) = verdict.filter(pl.col("config_id") == "c2")["reasons"].to_list()
    assert reason.startswith(
        "trains like 'config 1' within the interval after 50 steps: it changes "
        "mask_flagged=false from the baseline the log was run with"
    )
    assert reason.endswith(
        "mask_flagged=false alone (shaping off with it) moves shaping off's resolve rate on long "
        "problems after 50 steps from 30.0% to 55.0%"
    )


def test_a_change_of_a_non_shaping_setting_clearly_faster_is_launched():
    frame, table = _rows(-1.2, 0.01)
    verdict = recommend(frame, resamples=table)
    best = verdict.row(0, named=True)
    assert best["config_id"] == "c2"
    assert "++env.should_mask_flagged_samples=false" in best["overrides"]
    assert "from 30.0% to 55.0%" in best["reasons"]
    # Without resamples nothing says the difference is within the interval: the point decides.
    assert recommend(_rows(-0.62, 0.05)[0])["config_id"][0] == "c2"


def test_shaping_off_with_another_setting_is_ranked_as_any_config_not_as_the_reference():
    # Shaping off un-masked, measured against the masked baseline, ends successes 0.5 min
    # sooner: it is a config the rule ranks (and launches as shaping off un-masked), not the
    # reference every config is measured against.
    frame = summary(
        {**OFF, **MASKED},
        {**OFF, **UNMASKED, "forecast/solve_minutes_vs_off": -0.5},
    )
    verdict = recommend(frame)
    best = verdict.row(0, named=True)
    assert best["config_id"] == "c1"
    assert best["shaping_off"]
    assert best["overrides"] == (
        "++grpo.time_efficiency.enabled=false ++env.should_mask_flagged_samples=false "
        "++grpo.advantage_clip_low=-3.0 ++grpo.advantage_clip_high=3.0"
    )
    assert verdict.filter(pl.col("config_id") == "c0")["reasons"][0].startswith("shaping off")


def test_the_footing_is_shaping_off_on_the_settings_nearest_the_defaults():
    def cfg(mask: bool, bonus: float = 0.0) -> ReplayConfig:
        shaping = ShapingParams(
            lambda_time=1 / 60, mask_flagged=mask, lambda_call_bonus=bonus, call_bonus_ref=40.0
        )
        return ReplayConfig(shaping=shaping, advantage=AdvantageParams(clip_low=-3.0))

    base = footing([cfg(False), cfg(False, 0.1), cfg(True), cfg(True, 0.1)])
    assert not base.shaping.enabled
    assert base.shaping.mask_flagged
    assert base.advantage.clip_low == -3.0  # a setting every config shares stays
    only_unmasked = footing([cfg(False), cfg(False, 0.1)])
    assert not only_unmasked.shaping.mask_flagged
