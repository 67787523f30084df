"""The time-efficiency reward: NeMo-RL PR #4029 and the internal variant (spec §3).

`shape_arrays` shapes one config over a chunk's numpy arrays, with the trainer's Python arithmetic
(IEEE division: polars would divide by a literal through its reciprocal); both the batched path and
the polars plans take their shaping columns from it. The expressions below serve the other readers
of the same definitions (masking)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from replay_cli import schema as S
from replay_cli.config import ShapingParams
from replay_cli.maths.chunk_arrays import ChunkArrays

Param = float | bool | pl.Expr | None


def masked(mask_flagged: Param) -> pl.Expr:
    """Loss-masked: Gym flagged the row and env.should_mask_flagged_samples is on."""
    return pl.col(S.MASK_SAMPLE) & (
        mask_flagged if isinstance(mask_flagged, pl.Expr) else pl.lit(mask_flagged)
    )


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
