"""The diagnostics of a config (engine/diagnostics.py, engine/first_step.py): the step's share
spent on time alone, inversions and floor ties, the advantages, signal and group patterns, the
filter, the trainer's reward and validation curves, and the input. Each metric's constant is its
entry, with the hazard test that marks its summary cell."""

from __future__ import annotations

from replay_cli.catalogue.metric import Family, above, by_column, off
from replay_cli.maths.spec import EXPLOSION

TIME_ONLY_CELL = 0.25
"""Share of the step spent on time alone above which the summary table marks the cell."""
SIGN_FLIP_CELL = 0.05
"""Share of rows flipping sign vs shaping off above which the summary table marks the cell."""


OTHER = Family("diagnostics")
TIME_ONLY_SHARE = OTHER(
    "step/time_only_share",
    "time-only step",
    "share of the step's KL spent in groups whose outcomes are all equal (shaping off "
    "gives them no signal): update about time alone",
    "share",
    "lower",
    above(TIME_ONLY_CELL, "warn", "over a quarter of the step is about time alone"),
    short="time-only",
)
FIRST_ORDER_GAP = OTHER(
    "step/first_order_gap",
    "first-order gap",
    "|exact − first-order| resolve change of the step, relative to the exact one",
    "share",
    "lower",
)
ETA = OTHER("step/eta", "η", "the step size that spends the budget", "number")
KL_BUDGET = OTHER(
    "step/kl_budget", "budget", "the step's budget: mean KL per problem (nats)", "number"
)
INTRODUCED = OTHER(
    "inversion/introduced_group_rate",
    "inv. added",
    "share of groups where shaping puts a resolved rollout below an unresolved one that "
    "shaping off kept in order",
    "share",
    "lower",
    above(0.0, "hazard", "shaping puts resolved rollouts below unresolved ones"),
)
INVERSIONS = OTHER(
    "inversion/group_rate",
    "inversions",
    "share of groups with a resolved rollout's shaped reward below an unresolved one's",
    "share",
    "lower",
    by_column(INTRODUCED, "some introduced by shaping", "present with shaping off too"),
)
INVERSIONS_OFF = OTHER(
    off(INVERSIONS),
    "inversions (off)",
    "the same with shaping off (the input's own rewards)",
    "share",
)
INVERTED_PAIRS = OTHER(
    "inversion/pair_rate",
    "inverted pairs",
    "share of (resolved, unresolved) pairs inverted",
    "share",
    "lower",
)
FLOOR_TIES = OTHER(
    "floor/tie_group_rate",
    "floor ties",
    "share of groups where a resolved and an unresolved rollout both end on the floor",
    "share",
    "lower",
    above(0.0, "hazard", "successes tie failures on the floor"),
)
FLOOR_TIES_MIXED = OTHER(
    "floor/tie_mixed_rate", "floor ties (mixed)", "the same, of mixed groups", "share", "lower"
)
ABS_MAX = OTHER(
    "adv/abs_max",
    "max |adv|",
    "largest trained |advantage| (after the clip)",
    "advantage",
    "lower",
    above(EXPLOSION, "hazard", "trained |advantage| above {t:g} (after the clip)"),
)
EXPLOSION_TRAINED = OTHER(
    "adv/explosion_trained_frac",
    f"|adv|>{EXPLOSION:g} trained",
    f"share of trained rows with |advantage| > {EXPLOSION:g} after the clip",
    "share",
    "lower",
    above(0.0, "hazard", f"trained |advantage| above {EXPLOSION:g}: no clip bounds them"),
    short=f"|adv|>{EXPLOSION:g}",
)
EXPLOSION_UNCLIPPED = OTHER(
    "adv/explosion_frac",
    f"|adv|>{EXPLOSION:g} unclipped",
    f"share of rows with |unclipped advantage| > {EXPLOSION:g}",
    "share",
    "lower",
    by_column(EXPLOSION_TRAINED, "not all bounded by the clip", "bounded by the clip"),
)
EXPLOSION_CERTAIN = OTHER(
    "adv/explosion_certain_frac",
    f"|adv|>{EXPLOSION:g} every platform",
    f"share of trained rows beyond {EXPLOSION:g} on every float32 platform",
    "share",
    "lower",
)
EXPLOSION_POSSIBLE = OTHER(
    "adv/explosion_possible_frac",
    f"|adv|>{EXPLOSION:g} some platform",
    f"share of trained rows beyond {EXPLOSION:g} on some float32 platform",
    "share",
    "lower",
)
ABS_MAX_LOW = OTHER(
    "adv/abs_max_low",
    "max |adv| (low platform)",
    "the smallest max |advantage| any float32 platform gives",
    "advantage",
)
ABS_MAX_HIGH = OTHER(
    "adv/abs_max_high",
    "max |adv| (high platform)",
    "the largest max |advantage| any float32 platform gives",
    "advantage",
)
CLIP_FRAC = OTHER("adv/clip_frac", "clipped", "share of trained rows the clip changes", "share")
FRAGILE_STD = OTHER(
    "adv/fragile_std_frac",
    "fragile std",
    "share of rows normalised by a rounding-sized std (platform-dependent)",
    "share",
    "lower",
    above(0.0, "warn", "rows normalised by a rounding-sized std"),
)
SIGN_FLIPS = OTHER(
    "adv/sign_flip_frac",
    "sign flips",
    "share of rows whose advantage sign differs from shaping off's",
    "share",
    "lower",
    above(SIGN_FLIP_CELL, "warn", "over 5% of rows flip sign vs shaping off"),
)
ADV_DISTRIBUTION = {
    q: OTHER(f"adv/{q}", f"adv {q}", f"advantage distribution: {q} (after the clip)", "advantage")
    for q in ("mean", "std", "min", "max", "p01", "p05", "p50", "p95", "p99")
}
"""The trained advantages' mean, std, extremes and quantiles (after the clip), by statistic."""
ADV_BANDS = {q: name for q, name in ADV_DISTRIBUTION.items() if q not in ("mean", "std")}
"""The advantage distribution's extremes and quantiles (the distribution chart's bands)."""
ADV_RESOLVED = OTHER(
    "adv/resolved_mean", "adv (resolved)", "mean advantage of resolved rows", "advantage"
)
ADV_UNRESOLVED = OTHER(
    "adv/unresolved_mean", "adv (unresolved)", "mean advantage of unresolved rows", "advantage"
)
MASKED_SHIFT = OTHER(
    "baseline/masked_shift",
    "masked shift",
    "mean |baseline with masked rows voting − without|",
    "reward",
)
SIGNAL = OTHER(
    "signal/group_rate", "signal", "share of groups with any |advantage| > 1e-6", "share"
)
SIGNAL_RAW = OTHER("signal/group_rate_raw", "signal (off)", "the same with shaping off", "share")
TIME_ONLY_GROUPS = OTHER(
    "signal/time_only_rate",
    "time-only groups",
    "share of groups with signal only because shaping breaks their reward ties",
    "share",
    "lower",
)
UNCHARGED_ONLY = OTHER(
    "signal/uncharged_only_rate",
    "uncharged-only",
    "share of groups whose only signal is uncharged rows differing from charged siblings",
    "share",
    "lower",
    above(0.0, "warn", "signal only from uncharged rows"),
)
GAINED = OTHER(
    "signal/gained_rate",
    "signal gained",
    "share of groups that gain signal against shaping off",
    "share",
)
LOST = OTHER(
    "signal/lost_rate",
    "signal lost",
    "share of groups that lose shaping off's signal",
    "share",
    "lower",
    above(0.0, "warn", "groups that lose their signal to shaping"),
)
PATTERN_SHARES = {
    k: OTHER(
        f"groups/{k}",
        k.replace("_", " "),
        f"share of groups that are {k.replace('_', ' ')}",
        "share",
    )
    for k in ("all_fail", "mixed", "all_pass")
}
"""Per resolved pattern of a group (schema.ALL_FAIL, MIXED, ALL_PASS), the share of groups with
it."""
GROUP_SHARES = tuple(PATTERN_SHARES.values())
KEPT_ROWS = OTHER(
    "filter/kept_rows_frac", "kept rows", "share of rows the dynamic-sampling filter keeps", "share"
)
KEPT_GROUPS = OTHER(
    "filter/kept_groups_frac", "kept groups", "share of groups the filter keeps", "share"
)
PHANTOM_GROUPS = OTHER(
    "filter/phantom_groups_frac", "phantom groups", "share of groups kept with no signal", "share"
)
TOTAL_REWARD = OTHER(
    "total_reward/mean", "reward", "mean shaped reward of training rows (trainer metric)", "reward"
)
ADVANTAGES_MEAN = OTHER(
    "advantages/mean", "adv mean", "mean advantage (trainer metric)", "advantage"
)
ADVANTAGES_MAX = OTHER(
    "advantages/max", "adv max", "largest advantage (trainer metric)", "advantage"
)
ADVANTAGES_MIN = OTHER(
    "advantages/min", "adv min", "smallest advantage (trainer metric)", "advantage"
)
VALIDATION_ACCURACY = OTHER(
    "validation/accuracy", "val. accuracy", "mean raw reward of validation rows", "reward"
)
VALIDATION_REWARD = OTHER(
    "validation/total_reward/mean", "val. reward", "mean shaped reward of validation rows", "reward"
)
ROWS = OTHER("input/rows", "rollouts", "rollouts in the input", "count")
GROUPS = OTHER("input/groups", "groups", "training groups", "count")
STEPS = OTHER("input/steps", "steps", "training steps", "count")
VALIDATION_ROWS = OTHER(
    "input/validation_rows", "validation rollouts", "validation rollouts", "count"
)
VALIDATION_CHARGED = OTHER(
    "input/validation_charged", "validation charged", "validation rows charged", "count"
)
VALIDATION_CHANGED = OTHER(
    "input/validation_changed",
    "validation changed",
    "charged validation rows whose shaped reward differs from the raw one",
    "count",
)
UNCHARGED_BY_CAUSE = {
    kind: OTHER(
        f"signal/uncharged_only_{kind}_rate",
        f"uncharged-only: {words}",
        f"share of groups with signal only from uncharged rows, among them {words}",
        "share",
    )
    for kind, words in (
        ("masked", "loss-masked rows"),
        ("reset", "rows a zeroing penalty reset"),
        ("gate", "rows the correct gate skipped"),
    )
}
"""Per kind of uncharged row (schema.UNCHARGED_CAUSES), the share of groups whose only signal
comes from uncharged rows, among them that kind."""
UNCHARGED_MASKED = UNCHARGED_BY_CAUSE["masked"]
UNCHARGED_RESET = UNCHARGED_BY_CAUSE["reset"]
UNCHARGED_GATE = UNCHARGED_BY_CAUSE["gate"]
MASKED_FRAC = OTHER("input/masked_frac", "masked", "loss-masked share of training rows", "share")
RESOLVED_FRAC = OTHER("input/resolved_frac", "resolved", "resolved share of training rows", "share")
RUN_TIME_STATS = {
    q: OTHER(
        f"input/run_time_{q}", f"run time {q}", f"run time {q} over finite run times", "seconds"
    )
    for q in ("p50", "p90", "p99", "max")
}
"""The finite run times' quantiles and maximum, by statistic."""
RUN_TIMES = tuple(RUN_TIME_STATS.values())
LENGTH_SHORT_MAX = OTHER(
    "input/length_short_max_minutes",
    "short ≤",
    "longest median run time of a short problem",
    "minutes",
)
LENGTH_LONG_MIN = OTHER(
    "input/length_long_min_minutes",
    "long >",
    "shortest median run time of a long problem",
    "minutes",
)
RUN_TIME_INVALID = OTHER(
    "input/run_time_invalid", "NaN/inf run times", "NaN or infinite run times (0 minutes)", "count"
)
RUN_TIME_NULL = OTHER(
    "input/run_time_null", "missing run times", "null run times (0 minutes)", "count"
)
RUN_TIME_NEGATIVE = OTHER(
    "input/run_time_negative", "negative run times", "negative run times (0 minutes)", "count"
)
NEGATIVE_CHARGED = OTHER(
    "quirk/negative_reward_charged",
    "negative rewards charged",
    "rows with a negative reward the correct gate charges (spec §3.2 quirk)",
    "count",
)
BAD_RUN_TIMES = (RUN_TIME_NULL, RUN_TIME_INVALID, RUN_TIME_NEGATIVE)
