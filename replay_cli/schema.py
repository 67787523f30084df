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
# Internal helper columns kept in the row report because diagnostics need them.
BASELINE_NO_MASKED = "baseline_masking_toggled"  # baseline with exclude_masked flipped
TRIVIAL_PEERS = "peers_all_equal"
NORMALIZED = "normalized"
KEPT = "kept"  # survived the dynamic-sampling filter

GROUP_KEYS = (STEP, GROUP_ID)
CONFIG_GROUP_KEYS = (CONFIG_ID, STEP, GROUP_ID)

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
