"""The lazy per-row plan of one config over a chunk: shaping, dynamic-sampling filter and
advantages, plus the shaping-off advantages that a sweep shares between its configs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from replay_cli import schema as S
from replay_cli.config import AdvantageParams, ReplayConfig
from replay_cli.frames import collect_all
from replay_cli.maths.advantages import AdvColumns, add_baseline_and_std, add_grpo
from replay_cli.maths.chunk_arrays import ChunkArrays
from replay_cli.maths.filters import add_kept
from replay_cli.maths.peers import ESTIMATORS, add_peer_advantages
from replay_cli.maths.segments import Groups, Runs
from replay_cli.maths.shaping import masked, shape_arrays

SHAPED = AdvColumns(S.BASELINE, S.STD, S.ADV_UNCLIPPED, S.ADVANTAGE, S.TRIVIAL_PEERS, S.NORMALIZED)
_RAW = AdvColumns(
    "_raw_baseline", "_raw_std", "_raw_unclipped", S.ADV_RAW, "_raw_peers", "_raw_norm"
)
_REWARD_RAW_FILLED = "_reward_raw_filled"
_VALID, _VALID_TOGGLED = "_valid", "_valid_toggled"
_GID_KEPT, _GID_KEPT_RAW, _KEPT_RAW = "_gid_kept", "_gid_kept_raw", "_kept_raw"
_BID_KEPT = "_bid_kept"


def add_advantages(
    lf: pl.LazyFrame,
    reward: str,
    gid: str,
    kept: str,
    a: AdvantageParams,
    out: AdvColumns,
    runs: Runs | None,
    bound: str | None = None,
) -> pl.LazyFrame:
    """NeMo-RL GRPO (with its valid mask) or a peer trainer's estimator, over groups `gid`; with
    `bound`, GRPO's float32 rounding bound too (peer estimators have none: they are not the
    trainer's formula).

    The trainers filter before the batch is formed, so step-level statistics (verl's whitening,
    TRL's batch std) are taken over the rows the filter kept: the dropped rows form a batch of their
    own, whose values are discarded."""
    if a.estimator == "grpo":
        return add_grpo(lf, reward, _VALID, _groups(a, gid, runs), a, out, bound)
    active = ~pl.col(S.IS_VAL) & pl.col(kept)
    if a.filter == "none":
        return add_peer_advantages(lf, reward, gid, S.BID, a, out, active)
    lf = lf.with_columns(pl.struct(S.BID, kept).rank("dense").alias(_BID_KEPT))
    return add_peer_advantages(lf, reward, gid, _BID_KEPT, a, out, active).drop(_BID_KEPT)


PER_CONFIG_NULL_ON_VALIDATION = (
    S.BASELINE,
    S.STD,
    S.ADV_UNCLIPPED,
    S.ADVANTAGE,
    S.BASELINE_NO_MASKED,
)


def _with_valid(lf: pl.LazyFrame, a: AdvantageParams) -> pl.LazyFrame:
    """The rows that vote in the baseline (`_VALID`) and, for the masking diagnostic, the other
    choice (`_VALID_TOGGLED`). Columns, not literals: a literal would be summed once per group."""
    all_rows, not_masked = pl.lit(True), ~pl.col(S.MASKED)
    return lf.with_columns(
        (not_masked if a.exclude_masked else all_rows).alias(_VALID),
        (all_rows if a.exclude_masked else not_masked).alias(_VALID_TOGGLED),
    )


def _filter_metric(a: AdvantageParams, reward: str) -> pl.Expr:
    """What the dynamic-sampling filter looks at: the outcome, or a reward column."""
    return pl.col(S.RESOLVED).cast(pl.Float64) if a.filter_on == "resolved" else pl.col(reward)


def _survivors(a: AdvantageParams, kept: str) -> pl.Expr:
    """Group id of the survivors: advantages are recomputed on the rows the filter kept."""
    # Without a filter every row is kept: the groups stay as they are.
    return pl.col(S.GID) if a.filter == "none" else pl.struct(S.GID, kept).rank("dense")


def _groups(a: AdvantageParams, survivors: str, runs: Runs | None) -> Groups:
    """The survivors' groups as the chunk's runs when nothing is filtered (the fast path)."""
    return runs if a.filter == "none" and runs is not None else survivors


RawKey = tuple[AdvantageParams, bool]


def raw_key(cfg: ReplayConfig) -> RawKey:
    """What the shaping-off advantages depend on: the estimator and which rows are masked."""
    return cfg.advantage, cfg.shaping.mask_flagged


def raw_plan(lf: pl.LazyFrame, key: RawKey, runs: Runs | None = None) -> pl.LazyFrame:
    """`advantage_raw`, the advantages with shaping off (one column, lazy).

    They do not depend on the shaping parameters, so a sweep computes them once per `raw_key`. The
    shaping-off run filters on its own rewards."""
    a, mask_flagged = key
    lf = _with_valid(
        lf.with_columns(
            pl.col(S.REWARD).fill_null(0.0).alias(_REWARD_RAW_FILLED),
            masked(mask_flagged).alias(S.MASKED),
        ),
        a,
    )
    metric = _filter_metric(a, _REWARD_RAW_FILLED)
    lf = add_kept(lf, metric, S.GID, _VALID, a, _KEPT_RAW)
    lf = lf.with_columns(_survivors(a, _KEPT_RAW).alias(_GID_KEPT_RAW))
    lf = add_advantages(lf, _REWARD_RAW_FILLED, _GID_KEPT_RAW, _KEPT_RAW, a, _RAW, runs)
    trained = ~pl.col(S.IS_VAL) & pl.col(_KEPT_RAW)
    return lf.select(pl.when(trained).then(pl.col(S.ADV_RAW).cast(pl.Float64)).alias(S.ADV_RAW))


def row_plan(
    lf: pl.LazyFrame, cfg: ReplayConfig, raw: pl.Series, arrays: ChunkArrays
) -> pl.LazyFrame:
    """Per-row shaping, dynamic-sampling filter and advantages for one config (lazy); `raw` is
    the chunk's `raw_plan` for this config's `raw_key`, `arrays` the chunk's numpy arrays (its
    runs and the shaping columns, from `shape_arrays`)."""
    a, p = cfg.advantage, cfg.shaping
    runs = arrays.runs
    inputs = [c for c in lf.collect_schema().names() if c not in S.CHUNK_IDS]
    shaped = shape_arrays(arrays, p)
    n = len(arrays.reward)
    lf = lf.with_columns(
        pl.lit(cfg.config_id).alias(S.CONFIG_ID),
        pl.Series(S.MINUTES, arrays.minutes),
        masked(p.mask_flagged).alias(S.MASKED),
        pl.col(S.REWARD).alias(S.REWARD_RAW),
        pl.Series(S.CHARGED, shaped.charged),
        pl.Series(S.BONUS, np.broadcast_to(shaped.bonus, n)),
        pl.Series(S.FLOORED, shaped.floored),
        pl.Series(S.DEDUCTION, shaped.deduction),
        pl.Series(S.REWARD_SHAPED, shaped.reward_shaped),
        pl.col(S.REWARD).fill_null(0.0).alias(_REWARD_RAW_FILLED),
    )
    lf = _with_valid(lf, a)
    # OpenRLHF filters on the raw score even in the shaped run.
    metric = _filter_metric(a, _REWARD_RAW_FILLED if a.filter == "openrlhf" else S.REWARD_SHAPED)
    lf = add_kept(lf, metric, S.GID, _VALID, a, S.KEPT)
    lf = lf.with_columns(
        (~pl.col(S.IS_VAL) & ~pl.col(S.MASKED) & pl.col(S.KEPT)).alias(S.TRAINABLE),
        _survivors(a, S.KEPT).alias(_GID_KEPT),
    )
    lf = add_advantages(lf, S.REWARD_SHAPED, _GID_KEPT, S.KEPT, a, SHAPED, runs, S.ADV_F32_BOUND)
    # The baseline with masked rows voting vs not, whichever the config does not use (a peer
    # estimator's: NeMo-RL's baseline of the kind its subtraction corresponds to).
    toggled = a
    if a.estimator != "grpo":
        lf = lf.with_columns(pl.lit(None, pl.Float64).alias(S.ADV_F32_BOUND))
        kind = ESTIMATORS[a.estimator].baseline
        toggled = a.model_copy(update={"estimator": "grpo", "baseline": kind})
    groups = _groups(a, _GID_KEPT, runs)
    lf = add_baseline_and_std(
        lf, S.REWARD_SHAPED, _VALID_TOGGLED, groups, toggled, S.BASELINE_NO_MASKED, "_toggled_std"
    )
    shaped_rows = ~pl.col(S.IS_VAL) & pl.col(S.KEPT)
    lf = lf.with_columns(
        *(
            pl.when(shaped_rows).then(pl.col(c).cast(pl.Float64)).alias(c)
            for c in (*PER_CONFIG_NULL_ON_VALIDATION, S.ADV_F32_BOUND)
        ),
        pl.lit(raw).alias(S.ADV_RAW),
    )
    return lf.select(*inputs, *S.REPORT_COLUMNS, S.ADV_F32_BOUND, S.IS_VAL, S.TRAINABLE, S.GID)


def planned_rows(
    arrays: ChunkArrays, batch: Sequence[ReplayConfig], cache: dict[RawKey, pl.Series]
) -> list[pl.DataFrame]:
    """The per-row frames of configs that take the polars plans (filters, peer estimators), over
    a chunk; `cache` keeps the shaping-off column per `raw_key` between batches."""
    if not batch:
        return []
    source = arrays.frame.lazy()
    missing = list(dict.fromkeys(k for k in map(raw_key, batch) if k not in cache))
    raws = collect_all([raw_plan(source, k, arrays.runs) for k in missing])
    for key, raw in zip(missing, raws, strict=True):
        cache[key] = raw.to_series()
    plans = [row_plan(source, cfg, cache[raw_key(cfg)], arrays) for cfg in batch]
    # One chunk per frame: float sums depend on chunk boundaries.
    return [f.rechunk() for f in collect_all(plans)]
