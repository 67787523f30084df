"""The time-efficiency reward as polars expressions: NeMo-RL PR #4029 and the internal variant (spec §3).

The expressions serve the polars plans (filters, peer estimators) and accept a Python value or a
`pl.Expr` per parameter; `shape_arrays` is the same arithmetic over a chunk's numpy arrays, for
the batched path of a sweep. tests/test_shaping.py holds the two to each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from replay_cli import schema as S
from replay_cli.config import ShapingParams

if TYPE_CHECKING:
    from replay_cli.row_batch import ChunkArrays

Param = float | bool | pl.Expr | None


def _lit(value: Param, dtype: pl.DataType | None = None) -> pl.Expr:
    return value if isinstance(value, pl.Expr) else pl.lit(value, dtype=dtype)


def minutes(run_time: pl.Expr | None = None) -> pl.Expr:
    """`max(run_time, 0) / 60`; null, NaN and ±inf count as 0 minutes (upstream: null only)."""
    run_time = pl.col(S.RUN_TIME) if run_time is None else run_time
    return pl.when(run_time.is_finite()).then(run_time.clip(lower_bound=0.0) / 60.0).otherwise(0.0)


def masked(mask_flagged: Param) -> pl.Expr:
    """Loss-masked: Gym flagged the row and env.should_mask_flagged_samples is on."""
    return pl.col(S.MASK_SAMPLE) & _lit(mask_flagged)


def correct_gate(resolved_only: Param) -> pl.Expr:
    """`apply_to=correct` gate: resolved and a truthy reward (item 3: resolved alone).

    Truthiness is Python's, so a negative reward passes: the upstream quirk is kept on purpose.
    """
    truthy = pl.col(S.REWARD).is_not_null() & (pl.col(S.REWARD) != 0)
    return pl.col(S.RESOLVED) & (_lit(resolved_only) | truthy)


def call_bonus(lambda_call_bonus: Param, call_bonus_ref: Param) -> pl.Expr:
    """`lambda_call_bonus * min(calls / call_bonus_ref, 1)`; 0 when the bonus is off."""
    lam, ref = _lit(lambda_call_bonus, pl.Float64()), _lit(call_bonus_ref, pl.Float64())
    ratio = (pl.col(S.CALLS).cast(pl.Float64) / ref).clip(upper_bound=1.0)
    return pl.when(lam > 0).then(lam * ratio).otherwise(0.0)


def skipped(p: ShapingParams) -> pl.Expr:
    """Rows the hook leaves untouched: masked, failing the correct gate, or validation (spec §3.2,
    unless internal item 4 or the sync trainer path's `validation_shaped`)."""
    items = p.items
    is_val = pl.col(S.SPLIT) == S.SPLIT_VALIDATION
    skip = pl.lit(not p.enabled)
    skip = skip | (masked(p.mask_flagged) & pl.lit(1 not in items))
    skip = skip | (pl.lit(p.apply_to == "correct") & ~correct_gate(3 in items))
    # Validation is charged by internal item 4, and on the sync path (validation_shaped).
    return skip | (is_val & pl.lit(4 not in items and not p.validation_shaped))


def apply_shaping(lf: pl.LazyFrame, p: ShapingParams) -> pl.LazyFrame:
    """Add the shaping columns of spec §6: minutes, masked, reward_raw, charged, bonus, floored,
    deduction, reward_shaped (intermediate values are materialised once, then dropped)."""
    base = pl.col(S.REWARD).fill_null(0.0)
    floor = pl.lit(p.floor, dtype=pl.Float64)
    lf = lf.with_columns(minutes().alias(S.MINUTES), masked(p.mask_flagged).alias(S.MASKED))
    lf = lf.with_columns(
        skipped(p).alias("_skip"),
        call_bonus(p.lambda_call_bonus, p.effective_call_bonus_ref).alias("_bonus"),
    )
    skip, bonus = pl.col("_skip"), pl.col("_bonus")
    unclamped = base + bonus - pl.lit(p.lambda_time) * pl.col(S.MINUTES)
    lf = lf.with_columns(
        # Item 2: the internal hook ran before the zeroing penalties, which then reset the row to 0.0.
        (~skip & pl.col(S.ZEROED) & pl.lit(2 in p.items)).alias("_reset"),
        unclamped.alias("_unclamped"),
        (floor.is_not_null() & (unclamped < floor)).alias("_below"),
    )
    reset, below = pl.col("_reset"), pl.col("_below")
    new = pl.when(below).then(floor).otherwise(pl.col("_unclamped"))
    lf = lf.with_columns((~skip & ~reset).alias(S.CHARGED), new.alias("_new"))
    charged, new = pl.col(S.CHARGED), pl.col("_new")
    return lf.with_columns(
        pl.col(S.REWARD).alias(S.REWARD_RAW),
        pl.when(charged).then(bonus).otherwise(0.0).alias(S.BONUS),
        (charged & below).alias(S.FLOORED),
        pl.when(charged).then(base - new).otherwise(0.0).alias(S.DEDUCTION),
        pl.when(charged).then(new).when(reset).then(0.0).otherwise(base).alias(S.REWARD_SHAPED),
    ).drop("_skip", "_bonus", "_reset", "_unclamped", "_below", "_new")


def charge_key(p: ShapingParams) -> ShapingParams:
    """The parameters that decide which rows are charged and what uncharged rows end at: two
    configs with one key differ only in the charged rows' rewards."""
    return p.model_copy(
        update={"lambda_time": 0.0, "floor": None, "lambda_call_bonus": 0.0, "call_bonus_ref": None}
    )


@dataclass
class ShapedArrays:
    """The shaping columns of one config over a chunk (numpy, rows in chunk order)."""

    reward_shaped: np.ndarray
    deduction: np.ndarray
    bonus: np.ndarray | float
    charged: np.ndarray
    floored: np.ndarray


def shape_arrays(c: ChunkArrays, p: ShapingParams) -> ShapedArrays:
    """`apply_shaping` over numpy arrays, with the same operations in the same order."""
    items = p.items
    base = c.reward
    skip = np.full(len(base), not p.enabled)
    masked = c.mask_sample & p.mask_flagged
    if 1 not in items:
        skip |= masked
    if p.apply_to == "correct":
        skip |= ~(c.resolved & (True if 3 in items else c.truthy))
    if 4 not in items and not p.validation_shaped:
        skip |= c.is_val
    ref = p.effective_call_bonus_ref
    bonus: np.ndarray | float = 0.0
    if p.bonus_on and ref is not None:
        bonus = p.lambda_call_bonus * np.minimum(c.calls / ref, 1.0)
    cost = p.lambda_time * c.minutes
    unclamped = base - cost if isinstance(bonus, float) else base + bonus - cost
    below = np.zeros(len(base), bool) if p.floor is None else unclamped < p.floor
    # max(x, floor) is the clamp where(x < floor, floor, x): no NaN can reach it.
    new = unclamped if p.floor is None else np.maximum(unclamped, p.floor)
    charged = ~skip
    reset = None
    if 2 in items:  # zeroed rows end at 0.0 (the internal hook ran before the penalties)
        reset = charged & c.zeroed
        charged &= ~reset
    shaped = np.where(charged, new, base if reset is None else np.where(reset, 0.0, base))
    return ShapedArrays(
        reward_shaped=shaped,
        deduction=np.where(charged, base - new, 0.0),
        bonus=np.where(charged, bonus, 0.0) if p.bonus_on else 0.0,
        charged=charged,
        floored=charged & below,
    )
