"""Replay configs over a rollout table: shaping, advantages and metrics as one lazy plan per config."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from replay_cli import schema as S
from replay_cli.advantages import AdvColumns, add_grpo, baseline_and_std
from replay_cli.config import ReplayConfig
from replay_cli.frames import collect, collect_all
from replay_cli.metrics import (
    IS_VAL,
    TRAINABLE,
    diagnostics,
    group_table,
    input_stats,
    step_table,
    summarise_steps,
    trainer_exprs,
)
from replay_cli.shaping import apply_shaping
from replay_cli.validation import Rollouts

SHAPED = AdvColumns(S.BASELINE, S.STD, S.ADV_UNCLIPPED, S.ADVANTAGE, S.TRIVIAL_PEERS, S.NORMALIZED)
_RAW = AdvColumns(
    "_raw_baseline", "_raw_std", "_raw_unclipped", S.ADV_RAW, "_raw_peers", "_raw_norm"
)
_REWARD_RAW_FILLED = "_reward_raw_filled"
_VALID, _VALID_TOGGLED = "_valid", "_valid_toggled"
PER_CONFIG_NULL_ON_VALIDATION = (
    S.BASELINE,
    S.STD,
    S.ADV_UNCLIPPED,
    S.ADVANTAGE,
    S.ADV_RAW,
    S.BASELINE_NO_MASKED,
)


@dataclass
class ReplayResult:
    """The four report tables of spec §6 for one or more configs."""

    rows: pl.DataFrame
    groups: pl.DataFrame
    steps: pl.DataFrame
    summary: pl.DataFrame
    configs: list[ReplayConfig]


def row_plan(lf: pl.LazyFrame, cfg: ReplayConfig) -> pl.LazyFrame:
    """Per-row shaping and advantages for one config (lazy, no collect)."""
    a = cfg.advantage
    keys = [S.STEP, S.GROUP_ID, IS_VAL]
    lf = lf.with_columns(
        pl.lit(cfg.config_id).alias(S.CONFIG_ID),
        (pl.col(S.SPLIT) == S.SPLIT_VALIDATION).alias(IS_VAL),
    )
    lf = apply_shaping(lf, cfg.shaping).with_columns(
        (~pl.col(IS_VAL) & ~pl.col(S.MASKED)).alias(TRAINABLE),
        pl.col(S.REWARD_RAW).fill_null(0.0).alias(_REWARD_RAW_FILLED),
    )
    # Columns, not literals: a literal would be summed once per group, not once per row.
    all_rows, not_masked = pl.lit(True), ~pl.col(S.MASKED)
    lf = lf.with_columns(
        (not_masked if a.exclude_masked else all_rows).alias(_VALID),
        (all_rows if a.exclude_masked else not_masked).alias(_VALID_TOGGLED),
    )
    lf = add_grpo(lf, S.REWARD_SHAPED, pl.col(_VALID), keys, a, SHAPED)
    lf = add_grpo(lf, _REWARD_RAW_FILLED, pl.col(_VALID), keys, a, _RAW)
    # The baseline with masked rows voting vs not, whichever the config does not use.
    other, _ = baseline_and_std(pl.col(S.REWARD_SHAPED), pl.col(_VALID_TOGGLED), keys, a)
    lf = lf.with_columns(other.cast(pl.Float64).alias(S.BASELINE_NO_MASKED))
    lf = lf.with_columns(
        pl.when(~pl.col(IS_VAL)).then(pl.col(c)).alias(c) for c in PER_CONFIG_NULL_ON_VALIDATION
    )
    drop = [
        c
        for c in (*vars(_RAW).values(), _REWARD_RAW_FILLED, _VALID, _VALID_TOGGLED)
        if c != S.ADV_RAW
    ]
    return lf.drop(drop)


def _summary_row(
    cfg: ReplayConfig, rows: pl.DataFrame, groups: pl.DataFrame, steps: pl.DataFrame
) -> dict:
    names = [*trainer_exprs(cfg.shaping), "advantages/mean", "advantages/max", "advantages/min"]
    names += ["validation/accuracy", "validation/total_reward/mean"]
    return {
        S.CONFIG_ID: cfg.config_id,
        "label": cfg.label,
        **cfg.flat(),
        **summarise_steps(steps, names),
        **diagnostics(rows, groups),
        **input_stats(rows),
    }


def run_replay(
    rollouts: Rollouts,
    configs: Sequence[ReplayConfig],
    progress: Callable[[int, int], None] | None = None,
    configs_per_pass: int = 4,
) -> ReplayResult:
    """Replay every config over the rollouts and build the report tables.

    The input is read once; configs run in batches through `pl.collect_all`, which evaluates a
    batch's plans together on the polars thread pool. The batch size bounds peak memory.
    """
    if not configs:
        raise ValueError("run_replay needs at least one config")
    unique = list({c.config_id: c for c in configs}.values())
    source = rollouts.frame if len(unique) == 1 else rollouts.frame.pipe(collect).lazy()
    all_rows, all_groups, all_steps, summaries = [], [], [], []
    for start in range(0, len(unique), configs_per_pass):
        batch = unique[start : start + configs_per_pass]
        # One chunk per frame: float sums depend on chunk boundaries, and a report must not
        # depend on how many configs shared a batch.
        row_frames = [f.rechunk() for f in collect_all([row_plan(source, cfg) for cfg in batch])]
        plans = []
        for cfg, rows in zip(batch, row_frames, strict=True):
            groups_lf = group_table(rows.lazy(), cfg.shaping)
            plans += [groups_lf, step_table(rows.lazy(), groups_lf, cfg.shaping, cfg.metrics_by)]
        tables = collect_all(plans)
        for i, (cfg, rows) in enumerate(zip(batch, row_frames, strict=True)):
            groups, steps = tables[2 * i], tables[2 * i + 1]
            summaries.append(_summary_row(cfg, rows, groups, steps))
            all_rows.append(rows.drop(IS_VAL, TRAINABLE))
            all_groups.append(groups)
            all_steps.append(steps)
        if progress is not None:
            progress(start + len(batch), len(unique))
    return ReplayResult(
        rows=pl.concat(all_rows, how="diagonal_relaxed"),
        groups=pl.concat(all_groups, how="diagonal_relaxed"),
        steps=pl.concat(all_steps, how="diagonal_relaxed"),
        summary=pl.from_dicts(summaries, infer_schema_length=None),
        configs=unique,
    )
