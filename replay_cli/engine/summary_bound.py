"""The float32 rounding bound where the summary can read it (issue 40): the full per-row bound
(maths/rounding.py) on the groups whose cheap screen could move a summary metric, the screen
elsewhere.

The summary reads the bound in four places (diagnostics.row_partials): the fragile share
(bound > PLATFORM_REL × max(1, |A|)), the explosions certain and possible (|A| ∓ bound against
EXPLOSION) and the extremes of |A| ∓ bound. A trainable row whose screen (an upper bound of its
bound) settles each of these reads its screen instead; every other row's group gets the full
bound. The summary is then bit-identical to the one from the full bound everywhere
(docs/semantics.md, "The screen").
"""

from __future__ import annotations

import numpy as np

from replay_cli.config import AdvantageParams
from replay_cli.maths.grpo_arrays import GrpoArrays
from replay_cli.maths.rounding import f32_bound, f32_screen
from replay_cli.maths.segments import Runs
from replay_cli.maths.thresholds import EXPLOSION, PLATFORM_REL


def unsettled(
    screen: np.ndarray, advantage: np.ndarray, unclipped: np.ndarray, trainable: np.ndarray
) -> np.ndarray:
    """Rows (configs × rows) whose summary reads could differ with the screen in place of the
    bound: possibly fragile, near the explosion threshold, or a candidate for an extreme of
    |A| ∓ bound. Only trainable rows count, as in row_partials."""
    adv_abs = np.abs(advantage).astype(np.float64)
    free = advantage == unclipped  # a clipped row's extremes and explosions ignore the bound
    # As row_partials compares (a float32 threshold for float32 advantages); nan is unsettled.
    fragile = ~(screen <= PLATFORM_REL * np.maximum(1.0, np.abs(unclipped)))
    near = free & (adv_abs <= EXPLOSION) & (adv_abs + screen > EXPLOSION)
    near |= free & (adv_abs > EXPLOSION) & (adv_abs - screen <= EXPLOSION)
    t = np.broadcast_to(trainable, adv_abs.shape)
    # The largest |A| + bound is at least the largest |A|, and the largest |A| - bound (at 0)
    # at least the largest screened low: a row below either cannot hold that extreme.
    top = np.where(t, adv_abs, 0.0).max(axis=-1, keepdims=True, initial=0.0)
    screened_low = np.where(free, np.maximum(adv_abs - screen, 0.0), adv_abs)
    floor_low = np.where(t, screened_low, 0.0).max(axis=-1, keepdims=True, initial=0.0)
    extreme = free & ((adv_abs + screen >= top) | ((adv_abs >= floor_low) & (adv_abs > 0)))
    return t & (fragile | near | extreme)


def summary_bound(
    reward: np.ndarray,
    valid: np.ndarray,
    runs: Runs,
    p: AdvantageParams,
    out: GrpoArrays,
    trainable: np.ndarray,
    *,
    rounded_inputs: bool,
) -> np.ndarray:
    """Per row, the full f32_bound on every group with an unsettled row (for every config of
    the batch), the screen elsewhere; arguments as f32_bound's, `out` the batch's advantages."""
    screen = f32_screen(
        reward, valid, runs, p, out.unclipped, out.peers_equal, rounded_inputs=rounded_inputs
    )
    rows = unsettled(screen, out.advantage, out.unclipped, trainable)
    needed = runs.sum(rows.reshape(-1, rows.shape[-1]).any(axis=0)) > 0
    if not needed.any():
        return screen
    at = np.flatnonzero(runs.rows(needed))
    sub = Runs.of_lengths(runs.lengths[needed])

    screen = np.array(screen)  # writable where the screen was broadcast
    screen[..., at] = f32_bound(
        reward[..., at],
        valid[..., at],
        sub,
        p,
        out.unclipped[..., at],
        out.peers_equal[..., at],
        rounded_inputs=rounded_inputs,
    )
    return screen
