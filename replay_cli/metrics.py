"""Trainer metrics (same names as NeMo-RL logs) and the replay diagnostics of spec §5."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from replay_cli import schema as S
from replay_cli.config import ShapingParams

SIGNAL_EPS = 1e-6

IS_VAL = "_is_validation"
TRAINABLE = "_trainable"
GID = "_gid"  # sorted integer id of (step, group_id, split) over a chunk's rows

TE = "time_efficiency/"


def te_names(internal: bool) -> dict[str, str]:
    """Trainer names of the minutes/deduction metrics: the PR's, or the internal ones (item 5)."""
    if internal:
        return {
            k: f"{TE}{k.replace('/', '_')}"
            for k in ("minutes/mean", "minutes/max", "deduction/mean", "deduction/max")
        }
    return {
        k: f"{TE}{k}" for k in ("minutes/mean", "minutes/max", "deduction/mean", "deduction/max")
    }


def trainer_exprs(p: ShapingParams) -> dict[str, pl.Expr]:
    """The PR's `time_efficiency/*` metrics and `total_reward/mean` over one postprocess call's rows.

    Means divide by all rows: skipped rows count 0 deduction but their minutes and calls count.
    """
    internal = 5 in p.items
    names = te_names(internal)
    minutes, deduction, calls = pl.col(S.MINUTES), pl.col(S.DEDUCTION), pl.col(S.CALLS)
    trainable = ~pl.col(S.MASKED)
    ref = p.effective_call_bonus_ref
    saturated = (calls >= ref).mean() if p.bonus_on and ref is not None else pl.lit(0.0)
    if internal:
        signal = (minutes.max() - minutes.min()) > SIGNAL_EPS
    else:
        ded = deduction.filter(trainable)
        signal = (trainable.sum() >= 2) & ((ded.max() - ded.min()) > SIGNAL_EPS)
    return {
        names["minutes/mean"]: minutes.mean(),
        names["minutes/max"]: minutes.max(),
        names["deduction/mean"]: deduction.mean(),
        names["deduction/max"]: deduction.max(),
        f"{TE}calls/mean": calls.cast(pl.Float64).mean(),
        f"{TE}bonus/mean": pl.col(S.BONUS).mean(),
        f"{TE}seconds_per_call": minutes.sum() * 60.0 / calls.sum().clip(lower_bound=1),
        f"{TE}bonus_saturated_frac": saturated.cast(pl.Float64),
        f"{TE}floored_frac": pl.col(S.FLOORED).cast(pl.Float64).mean(),
        f"{TE}group_has_signal": signal.cast(pl.Float64),
        "total_reward/mean": pl.col(S.REWARD_SHAPED).mean(),
    }


def step_rule(name: str) -> pl.Expr:
    """How the async trainer folds per-group values into a step value: /max max, /min min, else mean."""
    if name.endswith("/max"):
        return pl.col(name).max()
    if name.endswith("/min"):
        return pl.col(name).min()
    return pl.col(name).mean()


def group_table(rows: pl.LazyFrame, p: ShapingParams) -> pl.LazyFrame:
    """One row per (config, step, group) of training rows: pattern, signal, inversion, trainer metrics."""
    keys = list(S.CONFIG_GROUP_KEYS)
    train = rows.filter(~pl.col(IS_VAL))
    t = pl.col(TRAINABLE)
    resolved = pl.col(S.RESOLVED)
    adv_abs, raw_abs = pl.col(S.ADVANTAGE).abs(), pl.col(S.ADV_RAW).abs()
    n_res = (t & resolved).sum()
    n_tr = t.sum()
    shaped = pl.col(S.REWARD_SHAPED)
    # The sorted integer id groups without hashing; the keys are carried along.
    base = train.group_by(GID, maintain_order=True).agg(
        *(pl.col(k).first() for k in keys),
        pl.len().alias("size"),
        n_tr.alias("trainable_rows"),
        n_res.alias("resolved_rows"),
        pl.when(n_res == 0)
        .then(pl.lit("all_fail"))
        .when(n_res == n_tr)
        .then(pl.lit("all_pass"))
        .otherwise(pl.lit("mixed"))
        .alias("resolved_pattern"),
        (t & (adv_abs > SIGNAL_EPS)).any().alias("has_signal"),
        (t & (raw_abs > SIGNAL_EPS)).any().alias("has_signal_raw"),
        (shaped.filter(t & resolved).min() < shaped.filter(t & ~resolved).max())
        .fill_null(False)
        .alias("inverted"),
        (n_res * (t & ~resolved).sum()).cast(pl.Int64).alias("pairs"),
        adv_abs.filter(t).max().alias("max_abs_advantage"),
        pl.col(S.KEPT).sum().alias("kept_rows"),
        # Kept although the outcome is uniform: only the shaping term gave the group a spread.
        (pl.col(S.KEPT).any() & (resolved.all() | ~resolved.any())).alias("phantom"),
        *(e.alias(k) for k, e in trainer_exprs(p).items()),
    )
    base = base.with_columns(
        (pl.col("has_signal") & ~pl.col("has_signal_raw")).alias("time_only_signal")
    )
    # Inverted pairs exist only in inverted groups (usually few): count them there alone.
    inverted_groups = base.filter(pl.col("inverted")).select(GID)
    pairs = (
        train.filter(t)
        .join(inverted_groups, on=GID, how="semi")
        .sort([GID, S.REWARD_SHAPED, S.RESOLVED])
        .with_columns(
            (~resolved).cast(pl.Int64).cum_sum().over(GID).alias("_unres_le"),
            (~resolved).cast(pl.Int64).sum().over(GID).alias("_unres"),
        )
        .group_by(GID)
        .agg(
            pl.when(resolved)
            .then(pl.col("_unres") - pl.col("_unres_le"))
            .otherwise(0)
            .sum()
            .alias("inverted_pairs"),
        )
    )
    # Both namings as columns (one of them null), so every config's table has one schema.
    other = [
        n
        for n in (*te_names(True).values(), *te_names(False).values())
        if n not in trainer_exprs(p)
    ]
    # Rows come in (step, group_id) order, so the groups already are in it.
    return (
        base.join(pairs, on=GID, how="left", maintain_order="left")
        .with_columns(pl.col("inverted_pairs").fill_null(0))
        .with_columns(pl.lit(None, pl.Float64).alias(n) for n in other)
        .drop(GID)
    )


def step_table(
    rows: pl.LazyFrame, groups: pl.LazyFrame, p: ShapingParams, metrics_by: str
) -> pl.LazyFrame:
    """One row per (config, step): trainer metrics at the trainer's granularity plus validation."""
    keys = [S.CONFIG_ID, S.STEP]
    names = list(trainer_exprs(p))
    train = rows.filter(~pl.col(IS_VAL))
    if metrics_by == "group":
        trainer = groups.group_by(keys).agg(step_rule(n) for n in names)
    else:
        trainer = train.group_by(keys).agg(e.alias(k) for k, e in trainer_exprs(p).items())
    adv = pl.col(S.ADVANTAGE)
    per_step = train.group_by(keys).agg(
        adv.mean().alias("advantages/mean"),
        adv.max().alias("advantages/max"),
        adv.min().alias("advantages/min"),
        pl.len().alias("rows"),
    )
    group_rates = groups.group_by(keys).agg(
        pl.len().alias("groups"),
        pl.col("has_signal").mean().alias("signal/group_rate"),
        pl.col("inverted").mean().alias("inversion/group_rate"),
    )
    val = (
        rows.filter(pl.col(IS_VAL))
        .group_by(keys)
        .agg(
            pl.col(S.REWARD_RAW).fill_null(0.0).mean().alias("validation/accuracy"),
            pl.col(S.REWARD_SHAPED).mean().alias("validation/total_reward/mean"),
        )
    )
    all_steps = rows.select(keys).unique()
    out = all_steps
    for part in (trainer, per_step, group_rates, val):
        out = out.join(part, on=keys, how="left", nulls_equal=True)
    return out.sort(keys)


def summarise_steps(steps: pl.DataFrame, names: Sequence[str]) -> dict[str, float | None]:
    """Each per-step curve as a W&B reader sees it: mean over steps (/max: max, /min: min)."""
    present = [n for n in names if n in steps.columns]
    if not present:
        return {}
    return steps.select(step_rule(n) for n in present).row(0, named=True)
