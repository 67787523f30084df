"""Which metrics each surface shows, and in which order: one list per surface, built from the
catalogue's names (labels, units, hazards and descriptions stay in the catalogue).

Adding a column to a surface is one entry in its list here; a new surface is one new list."""

from __future__ import annotations

from replay_cli import catalogue as C

TERMINAL = (
    C.F_RESOLVE_VS_OFF_LONG,
    C.F_RESOLVE_VS_OFF_LOW_LONG,
    C.F_SOLVE_VS_OFF,
    C.F_RESOLVE_VS_OFF,
    C.F_RESOLVE_VS_OFF_LOW,
    C.F_FAIL_VS_OFF,
    C.INTRODUCED,
    C.EXPLOSION_TRAINED,
    C.TIME_ONLY_SHARE,
    C.ABS_MAX,
)
"""The terminal's table after a run: what the rule reads (the outcome at the horizon), then what
disqualifies. A narrow terminal keeps TERMINAL_KEPT first and drops the others from the end."""

TERMINAL_KEPT = (C.F_SOLVE_VS_OFF, C.F_RESOLVE_VS_OFF_LOW_LONG, C.F_RESOLVE_VS_OFF_LOW)
"""The columns a narrow terminal drops last, the last to go first: what the rule ranks by (solve
Δ@T), then the low ends its bar reads; without them the rows left could show an eligible config
beating the pick."""

SUMMARY_GROUPS = (
    (
        "rule",
        "the rule's outcome after T steps",
        (
            C.F_RESOLVE_VS_OFF_LONG,
            C.F_RESOLVE_VS_OFF_LOW_LONG,
            C.F_RESOLVE_VS_OFF,
            C.F_RESOLVE_VS_OFF_LOW,
            C.F_SOLVE_VS_OFF,
            C.F_FAIL_VS_OFF,
        ),
    ),
    (
        "hazards",
        "hazards",
        (
            C.INTRODUCED,
            C.EXPLOSION_TRAINED,
            C.TIME_ONLY_SHARE,
            C.UNCHARGED_ONLY,
            C.ABS_MAX,
            C.EXPLOSION_UNCLIPPED,
            C.INVERSIONS,
            C.FLOOR_TIES,
            C.FRAGILE_STD,
            C.SIGN_FLIPS,
            C.LOST,
        ),
    ),
    (
        "context",
        "the first step and context",
        (
            C.RESOLVE_VS_OFF,
            C.SOLVE_VS_OFF,
            C.CLIP_FRAC,
            C.SIGNAL,
            C.TIME_ONLY_GROUPS,
            C.SOLVE_PUSH,
            C.RESOLVE_PUSH_VS_OFF,
            C.TOTAL_REWARD,
            C.VALIDATION_REWARD,
        ),
    ),
)
"""The page's summary table after the role, as (key, title, columns) groups in the order a user
decides in: what the rule reads, what disqualifies (every column with a hazard threshold), then
context, which the page folds away until asked for."""

FORECAST = (
    C.F_RESOLVE_LONG,
    C.F_RESOLVE_VS_OFF_LONG,
    C.F_RESOLVE_VS_OFF_LOW_LONG,
    C.at_check(C.F_RESOLVE_VS_OFF_LOW_LONG, "half"),
    C.at_check(C.F_RESOLVE_VS_OFF_LOW_LONG, "twice"),
    C.F_FAIL_LONG,
    C.F_SOLVE_VS_OFF,
    C.F_GIVE_UP_VS_OFF_LONG,
)
"""The forecast's columns the page shows per config."""

DELTA = (
    C.TOTAL_REWARD,
    C.DEDUCTION_MEAN,
    C.F_RESOLVE,
    C.F_SOLVE_VS_OFF,
    C.F_FAIL_VS_OFF,
    C.SIGNAL,
    C.TIME_ONLY_GROUPS,
    C.INVERSIONS,
    C.ADV_RESOLVED,
    C.ADV_UNRESOLVED,
    C.ABS_MAX,
    C.EXPLOSION_UNCLIPPED,
    C.SIGN_FLIPS,
)
"""What `compare` sets beside the reference config, each a quantity whose difference reads in
its own unit: the resolve rate itself (a share, its change in points), not its ratio to shaping
off's (whose difference is no resolve rate's move)."""

TRACKER_CURVES = (
    C.SIGNAL,
    C.TIME_ONLY_GROUPS,
    C.INVERSIONS,
    C.EXPLOSION_UNCLIPPED,
    C.RESOLVE_PUSH,
    C.FAIL_PUSH,
    C.SOLVE_PUSH,
)
"""Per-step columns of `steps.parquet` a tracker run (TensorBoard, W&B) logs as the replay's own
curves, `replay/<name>`, in the units a person reads (the catalogue's: shares in %)."""

TRACKER_HEADLINE = (
    C.F_RESOLVE_VS_OFF,
    C.F_RESOLVE_VS_OFF_LOW,
    C.F_RESOLVE_VS_OFF_LONG,
    C.F_RESOLVE_VS_OFF_LOW_LONG,
    C.F_SOLVE_VS_OFF,
    C.F_FAIL_VS_OFF,
    C.TIME_ONLY_SHARE,
    C.INTRODUCED,
    C.EXPLOSION_TRAINED,
    C.TOTAL_REWARD,
)
"""The summary columns a tracker run logs once (TensorBoard's HParams metrics, W&B's summary):
the outcome at the horizon the rule reads, then what disqualifies; in human units."""

INPUTS = (
    ("rollouts", (C.ROWS,)),
    ("validation rollouts", (C.VALIDATION_ROWS,)),
    ("training steps", (C.STEPS,)),
    ("training groups", (C.GROUPS,)),
    ("resolved share (training)", (C.RESOLVED_FRAC,)),
    ("loss-masked share (training)", (C.MASKED_FRAC,)),
    ("groups all fail / mixed / all pass", C.GROUP_SHARES),
    ("run time p50 / p90 / p99 / max", C.RUN_TIMES),
    ("run times missing / NaN-inf / negative", C.BAD_RUN_TIMES),
)
"""The page's "What was replayed" facts: (what, the summary columns shown joined by ' / '),
read from shaping off's row."""

STEP_CHART = (
    (C.TOTAL_REWARD, "shaped reward (mean)"),
    (C.SIGNAL, "groups with signal (share)"),
    (C.ADVANTAGES_MAX, "max advantage"),
    (C.ADVANTAGES_MIN, "min advantage"),
)
"""The per-step chart's four panels: (steps column, axis label)."""
