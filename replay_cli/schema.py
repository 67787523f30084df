"""Column names, the canonical rollout schema and the aliases recognised on input (spec §2)."""

from __future__ import annotations

import polars as pl

# Canonical input columns.
GROUP_ID = "group_id"
ROLLOUT_INDEX = "rollout_index"
STEP = "step"
REWARD = "reward"
RESOLVED = "resolved"
RUN_TIME = "openhands_run_time"
CALLS = "calls"
MASK_SAMPLE = "mask_sample"
SPLIT = "split"
ZEROED = "zeroed_by_penalty"

REQUIRED = (REWARD, RUN_TIME)
CANONICAL = (
    GROUP_ID,
    ROLLOUT_INDEX,
    STEP,
    REWARD,
    RESOLVED,
    RUN_TIME,
    CALLS,
    MASK_SAMPLE,
    SPLIT,
    ZEROED,
)

SPLIT_TRAIN = "train"
SPLIT_VALIDATION = "validation"

ALIASES: dict[str, str] = {
    "_ng_task_index": GROUP_ID,
    "_ng_rollout_index": ROLLOUT_INDEX,
    "instance_config.mask_sample": MASK_SAMPLE,
    "instance_config_mask_sample": MASK_SAMPLE,
    "run_time_s": RUN_TIME,
}

# Bookkeeping columns added on load (dropped before the report unless noted).
SOURCE_FILE = "source_file"
SOURCE_ROW = "source_row"

# Per-config columns of the report (spec §6).
CONFIG_ID = "config_id"
REWARD_RAW = "reward_raw"
REWARD_SHAPED = "reward_shaped"
MINUTES = "minutes"
BONUS = "bonus"
DEDUCTION = "deduction"
CHARGED = "charged"
FLOORED = "floored"
MASKED = "masked"
BASELINE = "baseline"
STD = "std"
ADV_UNCLIPPED = "advantage_unclipped"
ADVANTAGE = "advantage"
ADV_RAW = "advantage_raw"
ADV_F32_BOUND = "advantage_f32_bound"  # every float32 evaluation lies within unclipped ± this
# Internal helper columns kept in the row report because diagnostics need them.
BASELINE_NO_MASKED = "baseline_masking_toggled"  # baseline with exclude_masked flipped
TRIVIAL_PEERS = "peers_all_equal"
NORMALIZED = "normalized"
KEPT = "kept"  # survived the dynamic-sampling filter

# Where an import's mask_sample came from: NeMo-Gym 0.7 adds a top-level `mask_sample` and keeps
# `instance_config.mask_sample` for one release (values: mask_sample, instance_config.mask_sample,
# absent).
MASK_SOURCE = "mask_sample_source"

# Optional inputs a rollout may carry.
INSTANCE_ID = "instance_id"  # the problem a rollout was sampled for (NeMo-Gym SWE): pools groups
TOKENS = "response_tokens"  # response token count: reinforce-pp-baseline whitens token-weighted

# Working columns of a chunk (never written to the report).
IS_VAL = "_is_validation"
TRAINABLE = "_trainable"
GID = "_gid"  # sorted integer id of (step, group_id, split) over a chunk's rows
BID = "_bid"  # batch (step, split) id, for batch-level statistics
CHUNK_IDS = (IS_VAL, GID, BID)  # added by the chunk reader

# Columns of the group table (groups.parquet), one row per (config, step, group).
G_TRAINABLE_ROWS = "trainable_rows"
G_RESOLVED_ROWS = "resolved_rows"
G_RESOLVED_PATTERN = "resolved_pattern"
G_HAS_SIGNAL_RAW = "has_signal_raw"
G_HAS_SIGNAL = "has_signal"
G_INVERTED_PAIRS = "inverted_pairs"
G_INVERTED = "inverted"
G_PAIRS = "pairs"
G_MAX_ABS_ADVANTAGE_UNCLIPPED = "max_abs_advantage_unclipped"
G_MAX_ABS_ADVANTAGE = "max_abs_advantage"
G_STD_AT_MAX_ABS = "std_at_max_abs"
G_KEPT_ROWS = "kept_rows"
G_PHANTOM = "phantom"
G_TIME_ONLY_SIGNAL = "time_only_signal"
G_UNCHARGED_ONLY_SIGNAL = "uncharged_only_signal"
G_UNCHARGED_CAUSES = "uncharged_causes"  # bits of UNCHARGED_CAUSES an uncharged-only group holds
UNCHARGED_CAUSES = {"masked": 1, "reset": 2, "gate": 4}
"""The kinds of uncharged rows a group can hold: loss-masked rows (not charged, still voting),
rows a zeroing penalty reset to 0 (internal item 2), rows the correct gate skipped."""
G_SIZE = "size"
G_INVERTED_OFF = "inverted_off"  # inverted with shaping off (raw rewards, same rows)
G_FLOOR_TIE = "floor_tie"  # a resolved and an unresolved trainable row both end on the floor
G_LENGTH = "length"  # problem-length bucket: short / medium / long (terciles of median run time)
G_PUSH = "push_"  # prefix of the behaviour pushes (engine/pushes.py); `_off`: shaping off
ALL_FAIL, MIXED, ALL_PASS = "all_fail", "mixed", "all_pass"  # values of resolved_pattern

SHAPING_OFF = "shaping_off"  # recommendation.parquet: the config leaves every reward as it is

GROUP_KEYS = (STEP, GROUP_ID)
CONFIG_GROUP_KEYS = (CONFIG_ID, STEP, GROUP_ID)

_INTEGER = (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64)
_NUMERIC: tuple[type[pl.DataType], ...] = (pl.Float32, pl.Float64, *_INTEGER)

# column -> (accepted input dtype classes, what the message says is expected). A column whose
# values may be null also takes the Null type: a column with no value at all has no other type
# in JSON lines (and in a CSV once imported).
ACCEPTED: dict[str, tuple[tuple[type[pl.DataType], ...], str]] = {
    GROUP_ID: ((*_INTEGER, pl.String, pl.Categorical), "an integer or a string"),
    ROLLOUT_INDEX: ((*_INTEGER, pl.Null), "an integer"),
    STEP: (_INTEGER, "an integer"),
    REWARD: ((*_NUMERIC, pl.Boolean, pl.Null), "a number"),
    RESOLVED: ((pl.Boolean, *_INTEGER, pl.Null), "a boolean"),
    RUN_TIME: ((*_NUMERIC, pl.Boolean, pl.String, pl.Null), "a number of seconds"),
    CALLS: ((*_INTEGER, pl.Null), "an integer"),
    MASK_SAMPLE: ((pl.Boolean, *_INTEGER, pl.Null), "a boolean"),
    SPLIT: ((pl.String, pl.Categorical, pl.Enum, pl.Null), "'train' or 'validation'"),
    ZEROED: ((pl.Boolean, *_INTEGER, pl.Null), "a boolean"),
}

# Defaults of the optional columns when absent or null (spec §2); `resolved` is derived instead.
DEFAULTS: dict[str, object] = {
    STEP: 0,
    CALLS: 0,
    MASK_SAMPLE: False,
    ZEROED: False,
    SPLIT: SPLIT_TRAIN,
}

# Types after normalisation; group_id keeps its input type (int or string).
NORMALISED_TYPES: dict[str, pl.DataType] = {
    ROLLOUT_INDEX: pl.Int64(),
    STEP: pl.Int64(),
    REWARD: pl.Float64(),
    RESOLVED: pl.Boolean(),
    RUN_TIME: pl.Float64(),
    CALLS: pl.Int64(),
    MASK_SAMPLE: pl.Boolean(),
    SPLIT: pl.String(),
    ZEROED: pl.Boolean(),
}

# Column order of the per-row report after the input columns (spec §6, then diagnostics helpers).
REPORT_COLUMNS = (
    CONFIG_ID,
    REWARD_RAW,
    REWARD_SHAPED,
    MINUTES,
    BONUS,
    DEDUCTION,
    CHARGED,
    FLOORED,
    MASKED,
    KEPT,
    BASELINE,
    STD,
    ADV_UNCLIPPED,
    ADVANTAGE,
    ADV_RAW,
    TRIVIAL_PEERS,
    NORMALIZED,
    BASELINE_NO_MASKED,
)


def written_by_replay() -> frozenset[str]:
    """Columns a replay adds to the rows itself (a report's rollouts.parquet has them): an input
    that carries them is re-replayed from its own inputs, so the loader drops them."""
    return frozenset(
        (SOURCE_ROW, SOURCE_FILE, *REPORT_COLUMNS, ADV_F32_BOUND, *CHUNK_IDS, TRAINABLE)
    )


REPORT_TABLES = (
    "rollouts",
    "groups",
    "steps",
    "summary",
    "findings",
    "recommendation",
    "resamples",
    "forecast",
    "pilots",
)
"""The Parquet tables a report directory holds (`<name>.parquet`), in the order they are written."""
