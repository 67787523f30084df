"""Trainer metrics (same names as NeMo-RL logs) and the replay diagnostics of spec §5."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from replay_cli import schema as S
from replay_cli.config import ShapingParams
from replay_cli.segments import Runs

SIGNAL_EPS = 1e-6


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


def trainer_names(p: ShapingParams) -> list[str]:
    """Names of the trainer metrics of one config, in report order."""
    names = te_names(5 in p.items)
    return [
        names["minutes/mean"],
        names["minutes/max"],
        names["deduction/mean"],
        names["deduction/max"],
        f"{TE}calls/mean",
        f"{TE}bonus/mean",
        f"{TE}seconds_per_call",
        f"{TE}bonus_saturated_frac",
        f"{TE}floored_frac",
        f"{TE}group_has_signal",
        "total_reward/mean",
    ]


def trainer_metrics(rows: pl.DataFrame, runs: Runs, p: ShapingParams) -> dict[str, pl.Series]:
    """The PR's `time_efficiency/*` metrics and `total_reward/mean`, once per postprocess call.

    Each run of `runs` is one call's rows: a group (async trainer) or a step's batch. Means divide
    by all rows: skipped rows count 0 deduction but their minutes and calls count.
    """
    minutes, deduction = rows[S.MINUTES].to_numpy(), rows[S.DEDUCTION].to_numpy()
    calls = rows[S.CALLS].to_numpy()
    ref = p.effective_call_bonus_ref
    if p.bonus_on and ref is not None:
        saturated = runs.count(calls >= ref) / runs.lengths
    else:
        saturated = np.zeros(len(runs))
    if 5 in p.items:  # the internal hook: any spread of minutes
        signal = (runs.extreme("max", minutes) - runs.extreme("min", minutes)) > SIGNAL_EPS
    else:  # the PR: at least two trainable rows whose deductions differ
        trainable = ~rows[S.MASKED].to_numpy()
        hi = runs.extreme("max", deduction, trainable)
        spread = hi - runs.extreme("min", deduction, trainable)
        signal = pl.Series(values=runs.count(trainable) >= 2) & (spread > SIGNAL_EPS).fill_null(
            False
        )
    values = [
        runs.mean(minutes),
        runs.extreme("max", minutes),
        runs.mean(deduction),
        runs.extreme("max", deduction),
        runs.mean(calls),
        runs.mean(rows[S.BONUS].to_numpy()),
        runs.sum(minutes) * 60.0 / np.maximum(runs.sum(calls), 1),
        saturated,
        runs.mean(rows[S.FLOORED].to_numpy()),
        signal,
        runs.mean(rows[S.REWARD_SHAPED].to_numpy()),
    ]
    return {
        name: pl.Series(name, v).cast(pl.Float64)
        for name, v in zip(trainer_names(p), values, strict=True)
    }


def step_rule(name: str) -> pl.Expr:
    """How the async trainer folds per-group values into a step value: /max max, /min min, else mean."""
    if name.endswith("/max"):
        return pl.col(name).max()
    if name.endswith("/min"):
        return pl.col(name).min()
    return pl.col(name).mean()


def _fold(runs: Runs, name: str, values: np.ndarray) -> pl.Series:
    """`step_rule` over runs of per-group values: /max max, /min min, else mean."""
    if name.endswith(("/max", "/min")):
        return runs.extreme("max" if name.endswith("/max") else "min", values)
    return pl.Series(values=runs.mean(values))


def _other_names(p: ShapingParams) -> list[str]:
    """Trainer names of the other naming (item 5), as null columns: every config's table then
    has one schema."""
    mine = trainer_names(p)
    return [n for n in (*te_names(True).values(), *te_names(False).values()) if n not in mine]


PATTERNS = pl.Series([S.ALL_FAIL, S.MIXED, S.ALL_PASS])


def group_table(rows: pl.DataFrame, p: ShapingParams) -> pl.DataFrame:
    """One row per (config, step, group) of training rows: pattern, signal, inversion, trainer
    metrics. Rows come sorted by the group id, so groups are runs, in (step, group_id) order."""
    train = rows.filter(~pl.col(S.IS_VAL))
    runs = Runs(train[S.GID])
    t, resolved = train[S.TRAINABLE].to_numpy(), train[S.RESOLVED].to_numpy()
    kept = train[S.KEPT].to_numpy()
    adv_abs = train[S.ADVANTAGE].abs().fill_null(0.0).to_numpy()
    raw_abs = train[S.ADV_RAW].abs().fill_null(0.0).to_numpy()
    shaped = train[S.REWARD_SHAPED].to_numpy()
    n_tr, n_res = runs.count(t), runs.count(t & resolved)
    pattern = np.where(n_res == 0, 0, np.where(n_res == n_tr, 2, 1))
    has_signal = runs.any(t & (adv_abs > SIGNAL_EPS))
    has_signal_raw = runs.any(t & (raw_abs > SIGNAL_EPS))
    inverted = (
        runs.extreme("min", shaped, t & resolved) < runs.extreme("max", shaped, t & ~resolved)
    ).fill_null(False)
    unclipped_abs = train[S.ADV_UNCLIPPED].abs().fill_null(0.0).to_numpy()
    _, top = runs.bounds(unclipped_abs, t)
    at_max = t & (unclipped_abs == np.repeat(top, runs.lengths))
    no_rows = top == -np.inf  # groups without trainable rows: null
    std_at_max, _ = runs.bounds(train[S.STD].fill_null(np.nan).to_numpy(), at_max)
    groups = pl.DataFrame(
        {
            **{k: runs.first(train[k]) for k in S.CONFIG_GROUP_KEYS},
            S.G_SIZE: pl.Series(runs.lengths, dtype=pl.UInt32),
            S.G_TRAINABLE_ROWS: pl.Series(n_tr, dtype=pl.UInt32),
            S.G_RESOLVED_ROWS: pl.Series(n_res, dtype=pl.UInt32),
            S.G_RESOLVED_PATTERN: PATTERNS.gather(pattern),
            S.G_HAS_SIGNAL: has_signal,
            S.G_HAS_SIGNAL_RAW: has_signal_raw,
            S.G_INVERTED: inverted,
            S.G_PAIRS: pl.Series(n_res * runs.count(t & ~resolved), dtype=pl.Int64),
            S.G_MAX_ABS_ADVANTAGE: runs.extreme("max", adv_abs, t),
            S.G_MAX_ABS_ADVANTAGE_UNCLIPPED: _nullable(top, no_rows),
            # The std that divided the group's largest |advantage| (the cause of an explosion).
            S.G_STD_AT_MAX_ABS: _nullable(std_at_max, no_rows),
            S.G_KEPT_ROWS: pl.Series(runs.count(kept), dtype=pl.UInt32),
            # Kept although the outcome is uniform: only the shaping term gave the group a spread.
            S.G_PHANTOM: runs.any(kept) & (runs.all(resolved) | ~runs.any(resolved)),
            **trainer_metrics(train, runs, p),
            S.G_TIME_ONLY_SIGNAL: has_signal & ~has_signal_raw,
            S.G_INVERTED_PAIRS: _inverted_pairs(train, runs, inverted.to_numpy()),
            S.G_UNCHARGED_ONLY_SIGNAL: has_signal
            & ~has_signal_raw
            & _spread_only_from_uncharged(train, runs, shaped),
        }
    )
    return groups.with_columns(pl.lit(None, pl.Float64).alias(n) for n in _other_names(p))


def _nullable(values: np.ndarray, missing: np.ndarray) -> pl.Series:
    """A float column with nulls where `missing` holds."""
    out = pl.Series(values=values.astype(np.float64, copy=False))
    return out.set(pl.Series(values=missing), None) if missing.any() else out


def _spread_only_from_uncharged(train: pl.DataFrame, runs: Runs, shaped: np.ndarray) -> np.ndarray:
    """Per group: every charged row ends at one shaped reward and some uncharged row (masked,
    skipped) at another, so whatever signal shaping created came from the rows it did not charge
    (e.g. masked rows keeping 0.0 beside siblings floored to 0.05)."""
    charged = train[S.CHARGED].fill_null(False).to_numpy()
    c_lo, c_hi = runs.bounds(shaped, charged)
    u_lo, u_hi = runs.bounds(shaped, ~charged)
    with np.errstate(invalid="ignore"):  # inf - inf in runs without charged or uncharged rows
        uniform = (c_lo <= c_hi) & ((c_hi - c_lo) <= SIGNAL_EPS)
        far = (np.abs(u_lo - c_lo) > SIGNAL_EPS) | (np.abs(u_hi - c_lo) > SIGNAL_EPS)
    return uniform & (u_lo <= u_hi) & far


def _inverted_pairs(train: pl.DataFrame, runs: Runs, inverted: np.ndarray) -> pl.Series:
    """Per group, the trainable (resolved, unresolved) pairs whose shaped rewards are inverted.

    Such pairs exist only in inverted groups (usually few): they are counted there alone.
    """
    out = np.zeros(len(runs), dtype=np.int64)
    if inverted.any():
        resolved = pl.col(S.RESOLVED)
        pairs = (
            train.with_columns(runs.spread(np.arange(len(runs))).alias("_group"))
            .filter(pl.col(S.TRAINABLE) & runs.spread(inverted))
            .sort(["_group", S.REWARD_SHAPED, S.RESOLVED])
            .with_columns(
                (~resolved).cast(pl.Int64).cum_sum().over("_group").alias("_unres_le"),
                (~resolved).cast(pl.Int64).sum().over("_group").alias("_unres"),
            )
            .group_by("_group")
            .agg(
                pl.when(resolved)
                .then(pl.col("_unres") - pl.col("_unres_le"))
                .otherwise(0)
                .sum()
                .alias("n")
            )
        )
        out[pairs["_group"].to_numpy()] = pairs["n"].to_numpy()
    return pl.Series(values=out)


def step_table(
    rows: pl.DataFrame, groups: pl.DataFrame, p: ShapingParams, metrics_by: str
) -> pl.DataFrame:
    """One row per (config, step): trainer metrics at the trainer's granularity plus validation.

    Rows and groups come sorted by step, so each step is a run.
    """
    keys = [S.CONFIG_ID, S.STEP]
    train = rows.filter(~pl.col(S.IS_VAL))
    runs = Runs(train[S.STEP])
    adv = train[S.ADVANTAGE]
    present = adv.is_not_null().to_numpy()
    adv_values = adv.fill_null(0.0).to_numpy()
    n_adv = runs.count(present)
    per_step = pl.DataFrame(
        {
            **{k: runs.first(train[k]) for k in keys},
            "advantages/mean": pl.Series(runs.sum(adv_values) / np.maximum(n_adv, 1)).set(
                pl.Series(n_adv == 0), None
            ),
            "advantages/max": runs.extreme("max", adv_values, present),
            "advantages/min": runs.extreme("min", adv_values, present),
            "rows": pl.Series(runs.lengths, dtype=pl.UInt32),
        }
    )
    by_step = Runs(groups[S.STEP])
    if metrics_by == "group":  # the async trainer logs per group: fold per step as W&B shows it
        folded = {n: _fold(by_step, n, groups[n].to_numpy()) for n in trainer_names(p)}
    else:
        folded = trainer_metrics(train, runs, p)
    trainer = pl.DataFrame({**{k: runs.first(train[k]) for k in keys}, **folded})
    group_rates = pl.DataFrame(
        {
            **{k: by_step.first(groups[k]) for k in keys},
            "groups": pl.Series(by_step.lengths, dtype=pl.UInt32),
            "signal/group_rate": by_step.mean(groups[S.G_HAS_SIGNAL].to_numpy()),
            "inversion/group_rate": by_step.mean(groups[S.G_INVERTED].to_numpy()),
        }
    )
    val = (
        rows.filter(pl.col(S.IS_VAL))
        .group_by(keys, maintain_order=True)
        .agg(
            pl.col(S.REWARD_RAW).fill_null(0.0).mean().alias("validation/accuracy"),
            pl.col(S.REWARD_SHAPED).mean().alias("validation/total_reward/mean"),
        )
    )
    every_step = Runs(rows[S.STEP])  # a step with validation rows only is kept too
    out = pl.DataFrame({k: every_step.first(rows[k]) for k in keys})
    for part in (trainer, per_step, group_rates, val):
        out = out.join(part, on=keys, how="left", maintain_order="left")
    return out


def summarise_steps(steps: pl.DataFrame, names: Sequence[str]) -> dict[str, float | None]:
    """Each per-step curve as a W&B reader sees it: mean over steps (/max: max, /min: min)."""
    present = [n for n in names if n in steps.columns]
    if not present:
        return {}
    return steps.select(step_rule(n) for n in present).row(0, named=True)
