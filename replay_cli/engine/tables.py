"""The group and step tables of a row batch: per-group signal, inversion and explosion columns,
and the trainer metrics per step under NeMo-RL's names (run-level diagnostics: diagnostics.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.config import ShapingParams
from replay_cli.engine.pushes import PUSH_COLUMNS, group_pushes, length_bucket
from replay_cli.engine.row_batch import RowBatch
from replay_cli.maths.scopes import LENGTHS
from replay_cli.maths.segments import Runs
from replay_cli.maths.shaping import charge_key
from replay_cli.maths.thresholds import EXPLOSION, SIGNAL_EPS, above

TRAINER_NAMES = (*(m.name for m in C.TRAINER if m.name not in C.INTERNAL_NAMES), C.TOTAL_REWARD)
"""The PR's trainer metrics (the family's, less the internal names), in report order."""
INTERNAL_OF = {pr: internal for internal, pr in C.INTERNAL_NAMES.items()}
"""The internal implementation's name of each PR metric it names otherwise (item 5)."""


def trainer_names(p: ShapingParams) -> list[str]:
    """Names of the trainer metrics of one config, in report order."""
    if 5 in p.items:
        return [INTERNAL_OF.get(name, name) for name in TRAINER_NAMES]
    return list(TRAINER_NAMES)


def trainer_metrics(
    b: RowBatch, runs: Runs, where: np.ndarray | None = None
) -> list[dict[str, np.ndarray]]:
    """The PR's `time_efficiency/*` metrics and `total_reward/mean`, once per postprocess call, for
    every config of the batch (one dict per config, under its trainer names).

    Each run of `runs` is one call's rows, restricted to `where` (None: every row): a group (async
    trainer) or a step's training batch. Means divide by all those rows: skipped rows count 0
    deduction but their minutes and calls count."""
    c = b.chunk

    def total(x: np.ndarray) -> np.ndarray:
        return runs.sum(x if where is None else x * where)  # x * mask: faster than np.where

    count = runs.lengths if where is None else runs.sum(where)
    with np.errstate(divide="ignore", invalid="ignore"):
        shared = {
            "minutes/mean": total(c.minutes) / count,
            "minutes/max": runs.top(c.minutes, where),
            "calls/mean": total(c.calls) / count,
            "seconds_per_call": total(c.minutes) * 60.0 / np.maximum(total(c.calls), 1),
        }
        minutes_spread = (shared["minutes/max"] - runs.low(c.minutes, where)) > SIGNAL_EPS
        ded_mean = b.per_config(total(b.deduction) / count)
        ded_max = b.per_config(runs.top(b.deduction, where))
        bonus = b.per_config(np.zeros(len(count)) if b.bonus is None else total(b.bonus) / count)
        floored = b.per_config(total(b.floored) / count)
        reward = b.per_config(total(b.reward_shaped) / count)
    # The PR: at least two trainable (unmasked) rows whose deductions differ.
    unmasked = ~b.masked if where is None else where & ~b.masked
    n_unmasked = runs.sum(unmasked)
    lo, hi = runs.bounds(b.deduction, unmasked)
    with np.errstate(invalid="ignore"):  # inf - inf in runs without unmasked rows
        spread = b.per_config((n_unmasked >= 2) & ((hi - lo) > SIGNAL_EPS))
    out = []
    for k, cfg in enumerate(b.configs):
        p = cfg.shaping
        ref = p.effective_call_bonus_ref
        if p.bonus_on and ref is not None:
            with np.errstate(divide="ignore", invalid="ignore"):  # steps without training rows
                saturated = total(c.calls >= ref) / count
        else:
            saturated = np.zeros(len(count))
        values = [
            shared["minutes/mean"],
            shared["minutes/max"],
            ded_mean[k],
            ded_max[k],
            shared["calls/mean"],
            bonus[k],
            shared["seconds_per_call"],
            saturated,
            floored[k],
            minutes_spread if 5 in p.items else spread[k],  # internal: any spread of minutes
            reward[k],
        ]
        arrays = (np.asarray(v, dtype=np.float64) for v in values)
        out.append(dict(zip(trainer_names(p), arrays, strict=True)))
    return out


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
    return [n for n in (*C.INTERNAL_NAMES, *C.INTERNAL_NAMES.values()) if n not in mine]


PATTERNS = pl.Series([S.ALL_FAIL, S.MIXED, S.ALL_PASS])
LENGTH_NAMES = pl.Series(LENGTHS)
STEP_PUSHES = ("resolve", "minutes_fail", "minutes_pass")
"""The pushes of the step table (per-step means over the step's groups)."""


def group_tables(b: RowBatch) -> list[pl.DataFrame]:
    """One table per config of the batch, a row per (config, step, group) of training rows:
    pattern, signal, inversion, trainer metrics. Groups are the chunk's runs, in (step,
    group_id) order; each reduction covers every config of the batch at once."""
    c = b.chunk
    runs, pick = c.runs, c.train_runs
    g = {k: b.per_config(v)[:, pick] for k, v in _group_reductions(b).items()}
    per_call = trainer_metrics(b, runs)
    n_resolved = runs.sum(c.resolved)
    uniform = ((n_resolved == runs.lengths) | (n_resolved == 0))[pick]
    sizes = pl.Series(runs.lengths[pick], dtype=pl.UInt32)
    length = LENGTH_NAMES.gather(length_bucket(c.run_median_seconds[pick], c.length_edges))
    tables = []
    for k, cfg in enumerate(b.configs):
        n_tr_k, n_res_k = g["n_tr"][k], g["n_res"][k]
        pattern = np.where(n_res_k == 0, 0, np.where(n_res_k == n_tr_k, 2, 1))
        no_rows_k = g["no_rows"][k]
        inverted_k = g["inverted"][k]
        table = pl.DataFrame(
            {
                S.CONFIG_ID: pl.repeat(cfg.config_id, len(sizes), eager=True),
                **c.group_keys,
                S.G_SIZE: sizes,
                S.G_TRAINABLE_ROWS: pl.Series(n_tr_k, dtype=pl.UInt32),
                S.G_RESOLVED_ROWS: pl.Series(n_res_k, dtype=pl.UInt32),
                S.G_RESOLVED_PATTERN: PATTERNS.gather(pattern),
                S.G_HAS_SIGNAL: g["has_signal"][k],
                S.G_HAS_SIGNAL_RAW: g["has_signal_raw"][k],
                S.G_INVERTED: inverted_k,
                S.G_PAIRS: pl.Series(n_res_k * (n_tr_k - n_res_k), dtype=pl.Int64),
                S.G_MAX_ABS_ADVANTAGE: _nullable(g["top_clipped"][k], no_rows_k),
                S.G_MAX_ABS_ADVANTAGE_UNCLIPPED: _nullable(g["top"][k], no_rows_k),
                # The std that divided the group's largest |advantage| (the cause of an explosion);
                # null where that row was not divided.
                S.G_STD_AT_MAX_ABS: _nullable(
                    g["std_at_max"][k], no_rows_k | np.isnan(g["std_at_max"][k])
                ),
                S.G_KEPT_ROWS: pl.Series(g["kept_rows"][k], dtype=pl.UInt32),
                # Kept although the outcome is uniform: only the shaping term gave the group a spread.
                S.G_PHANTOM: (g["kept_rows"][k] > 0) & uniform,
                **{name: v[pick] for name, v in per_call[k].items()},
                S.G_TIME_ONLY_SIGNAL: g["time_only"][k],
                S.G_INVERTED_PAIRS: _inverted_pairs(b, k, pick[inverted_k]),
                S.G_UNCHARGED_ONLY_SIGNAL: g["uncharged_only"][k],
                S.G_UNCHARGED_CAUSES: g["uncharged_causes"][k],
                S.G_INVERTED_OFF: g["inverted_off"][k],
                S.G_FLOOR_TIE: g["floor_tie"][k],
                S.G_LENGTH: length,
                **{name: g[name][k] for name in PUSH_COLUMNS},
            }
        )
        tables.append(
            table.with_columns(pl.lit(None, pl.Float64).alias(n) for n in _other_names(cfg.shaping))
        )
    return tables


def _group_reductions(b: RowBatch) -> dict[str, np.ndarray]:
    """Per run of the chunk, every config-dependent reduction the group table reads, each as
    (configs, runs) or (runs,): computed once for the whole batch, then picked per config."""
    c = b.chunk
    runs = c.runs
    t, resolved = b.trainable, c.resolved
    eps = np.float64(SIGNAL_EPS)
    adv_abs = b.advantage_abs
    unclipped_abs = np.abs(b.grpo.unclipped) if b.clipped else adv_abs
    shaped = b.reward_shaped
    has_signal = runs.sum(t & above(adv_abs, SIGNAL_EPS)) > 0
    has_signal_raw = runs.sum(t & (np.abs(b.adv_raw) > eps)) > 0
    top = runs.top(unclipped_abs, t)
    time_only = has_signal & ~has_signal_raw
    uncharged_only = time_only & _spread_only_from_uncharged(b, shaped)
    raw = c.reward  # shaping off: the input rewards (null -> 0), on the same trainable rows
    # On the floor: rows whose shaped reward is the floor, clamped, landing on it, or left there
    # uncharged (a failure apply_to=correct leaves at 0 ties a success clamped to a floor of 0:
    # a tie is a tie whichever side was charged).
    floors = np.array([np.nan if c.shaping.floor is None else c.shaping.floor for c in b.configs])
    on_floor = t & (shaped == floors[:, None])
    pushes = group_pushes(runs, b.grpo.advantage, t, resolved, c.minutes, c.calls)
    pushes_off = group_pushes(runs, b.adv_raw, t, resolved, c.minutes, c.calls)
    return {
        "n_tr": runs.sum(t),
        "n_res": runs.sum(t & resolved),
        "has_signal": has_signal,
        "has_signal_raw": has_signal_raw,
        "inverted": runs.low(shaped, t & resolved) < runs.top(shaped, t & ~resolved),
        "top": top,
        "no_rows": top == -np.inf,  # groups without trainable rows: null
        "std_at_max": _std_at_max(b, unclipped_abs, top, t),
        "top_clipped": runs.top(adv_abs, t) if b.clipped else top,
        "kept_rows": runs.sum(b.kept),
        "time_only": time_only,
        "uncharged_only": uncharged_only,
        "uncharged_causes": np.where(uncharged_only, _uncharged_causes(b), 0).astype(np.int8),
        "inverted_off": runs.low(raw, t & resolved) < runs.top(raw, t & ~resolved),
        "floor_tie": (runs.sum(on_floor & resolved) > 0) & (runs.sum(on_floor & ~resolved) > 0),
        **{f"{S.G_PUSH}{k}": v for k, v in pushes.items()},
        **{f"{S.G_PUSH}{k}_off": v for k, v in pushes_off.items()},
    }


def _std_at_max(b: RowBatch, x: np.ndarray, top: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per run, the least std that divided a trainable row where x reaches the run's `top` (NaN
    where no such row was divided: the guard kept `r - b`).

    About one row per group qualifies: the rows are found first, and only they are reduced."""
    runs = b.chunk.runs
    at_max = b.per_config(t & (x == runs.rows(top)))
    config, row = np.nonzero(at_max)
    out = np.full((len(b.configs), len(runs)), np.inf)
    if len(row):
        run = b.chunk.run_of_row[row]
        key = config * len(runs) + run  # sorted: nonzero walks configs, then rows
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        divided = b.per_config(b.grpo.normalized)[config, row]
        std = np.where(divided, b.per_config(b.grpo.std)[config, row].astype(np.float64), np.nan)
        out.reshape(-1)[key[first]] = np.fmin.reduceat(std, first)
    return out


def _nullable(values: np.ndarray, missing: np.ndarray) -> pl.Series:
    """A float column with nulls where `missing` holds."""
    out = pl.Series(values=values.astype(np.float64, copy=False))
    return out.set(pl.Series(values=missing), None) if missing.any() else out


def _spread_only_from_uncharged(b: RowBatch, shaped: np.ndarray) -> np.ndarray:
    """Per group: every charged row ends at one shaped reward and some uncharged row (masked,
    skipped) at another, so whatever signal shaping created came from the rows it did not charge
    (e.g. masked rows keeping 0.0 beside siblings floored to 0.05)."""
    runs = b.chunk.runs
    charged = b.per_config(b.charged)
    n_charged = runs.sum(charged)
    mixed = (n_charged > 0) & (n_charged < runs.lengths)
    if not mixed.any():  # no group has both charged and uncharged rows
        return np.zeros(n_charged.shape, bool)
    c_lo, c_hi = runs.bounds(shaped, charged)
    # Configs with one charge key share their uncharged rows and those rows' rewards.
    first: dict[ShapingParams, int] = {}
    keys = [first.setdefault(charge_key(cfg.shaping), k) for k, cfg in enumerate(b.configs)]
    lead = sorted(set(keys))
    u_lo, u_hi = runs.bounds(shaped[lead], ~charged[lead])
    at = [lead.index(k) for k in keys]
    u_lo, u_hi = u_lo[at], u_hi[at]
    with np.errstate(invalid="ignore"):  # inf - inf in runs without charged or uncharged rows
        uniform = (c_lo <= c_hi) & ((c_hi - c_lo) <= SIGNAL_EPS)
        far = (np.abs(u_lo - c_lo) > SIGNAL_EPS) | (np.abs(u_hi - c_lo) > SIGNAL_EPS)
    return mixed & uniform & far


def _uncharged_causes(b: RowBatch) -> np.ndarray:
    """Per group and config, a bit per kind of uncharged row it holds (S.UNCHARGED_CAUSES)."""
    c, runs = b.chunk, b.chunk.runs
    uncharged = ~b.per_config(b.charged)
    masked = uncharged & b.per_config(b.masked)
    items = np.array([[2 in cfg.shaping.items] for cfg in b.configs])
    reset = uncharged & ~masked & c.zeroed & items
    gate = uncharged & ~masked & ~reset
    bits = S.UNCHARGED_CAUSES
    return (
        (runs.sum(masked) > 0) * bits["masked"]
        + (runs.sum(reset) > 0) * bits["reset"]
        + (runs.sum(gate) > 0) * bits["gate"]
    )


def _inverted_pairs(b: RowBatch, k: int, inverted_runs: np.ndarray) -> np.ndarray:
    """Per training group of config k, the trainable (resolved, unresolved) pairs whose shaped
    rewards are inverted: an unresolved row above a resolved one.

    Such pairs exist only in inverted groups (usually few): they are counted there alone."""
    c = b.chunk
    out = np.zeros(len(c.train_runs), dtype=np.int64)
    if not len(inverted_runs):
        return out
    chosen = np.full(len(c.runs), -1)
    chosen[inverted_runs] = np.arange(len(inverted_runs))
    group_of_row = chosen[c.run_of_row]  # the inverted group a row belongs to, else -1
    rows = np.flatnonzero(group_of_row >= 0)
    group = group_of_row[rows]
    keep = b.per_config(b.trainable)[k][rows]
    pairs = (
        pl.DataFrame(
            {
                "_group": group[keep],
                "shaped": b.per_config(b.reward_shaped)[k][rows][keep],
                "resolved": c.resolved[rows][keep],
            }
        )
        .sort(["_group", "shaped", "resolved"])
        .with_columns(
            (~pl.col("resolved")).cast(pl.Int64).cum_sum().over("_group").alias("_unres_le"),
            (~pl.col("resolved")).cast(pl.Int64).sum().over("_group").alias("_unres"),
        )
        .group_by("_group")
        .agg(
            pl.when(pl.col("resolved"))
            .then(pl.col("_unres") - pl.col("_unres_le"))
            .otherwise(0)
            .sum()
            .alias("n")
        )
    )
    position = np.searchsorted(c.train_runs, inverted_runs)
    out[position[pairs["_group"].to_numpy()]] = pairs["n"].to_numpy()
    return out


def step_tables(b: RowBatch, groups: list[pl.DataFrame]) -> list[pl.DataFrame]:
    """One table per config, a row per (config, step): trainer metrics at the trainer's granularity,
    advantage statistics, group rates and validation means.

    Rows and groups come sorted by step, so each step is a run; a step with validation rows only is
    kept, with nulls for what needs training rows."""
    c = b.chunk
    steps = c.steps
    train = None if c.all_train else c.train
    scored = b.scored
    adv = b.grpo.advantage
    n_adv = b.per_config(steps.sum(scored))
    with np.errstate(divide="ignore", invalid="ignore"):
        adv_mean = b.per_config(steps.sum(adv * scored)) / np.maximum(n_adv, 1)
    adv_max = b.per_config(steps.top(adv, scored))
    trainable = b.per_config(b.trainable)
    n_trainable = steps.sum(trainable)
    unclipped_abs = np.abs(b.grpo.unclipped) if b.clipped else b.advantage_abs
    explosions = b.per_config(steps.sum(trainable & above(unclipped_abs, EXPLOSION)))
    adv_min = b.per_config(steps.low(adv, scored))
    n_train = steps.lengths if train is None else steps.sum(train)
    no_train = n_train == 0
    batch = (
        trainer_metrics(b, steps, train)
        if any(cfg.metrics_by == "batch" for cfg in b.configs)
        else None
    )
    n_val = steps.sum(c.is_val)
    no_val = n_val == 0
    if c.all_train:  # no validation rows: the columns are null, no pass over the rewards
        accuracy = np.zeros(len(steps))
        val_reward = np.zeros((len(b.configs), len(steps)))
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            accuracy = steps.sum(c.reward * c.is_val) / n_val
            val_reward = b.per_config(steps.sum(b.reward_shaped * c.is_val)) / n_val
    step_ids = c.frame[S.STEP].gather(steps.starts)
    tables = []
    for k, cfg in enumerate(b.configs):
        keys = {S.CONFIG_ID: pl.repeat(cfg.config_id, len(steps), eager=True), S.STEP: step_ids}
        g = groups[k]
        by_step = Runs(g[S.STEP])
        table = pl.DataFrame(keys)
        if cfg.metrics_by == "group":  # the async trainer logs per group: fold as W&B shows it
            folded = {n: _fold(by_step, n, g[n].to_numpy()) for n in trainer_names(cfg.shaping)}
            trainer = pl.DataFrame({S.STEP: by_step.first(g[S.STEP]), **folded})
            table = table.join(trainer, on=S.STEP, how="left", maintain_order="left")
        else:
            assert batch is not None
            table = table.with_columns(_nullable(v, no_train).alias(n) for n, v in batch[k].items())
        no_adv = n_adv[k] == 0
        with np.errstate(divide="ignore", invalid="ignore"):
            explosion = explosions[k] / n_trainable[k]
        table = table.with_columns(
            _nullable(explosion, n_trainable[k] == 0).alias(C.EXPLOSION_UNCLIPPED),
            _nullable(adv_mean[k], no_adv).alias(C.ADVANTAGES_MEAN),
            _nullable(adv_max[k], no_adv).alias(C.ADVANTAGES_MAX),
            _nullable(adv_min[k], no_adv).alias(C.ADVANTAGES_MIN),
            pl.Series("rows", n_train, dtype=pl.UInt32).set(pl.Series(values=no_train), None),
        )
        table = table.join(_group_rates(g, by_step), on=S.STEP, how="left", maintain_order="left")
        tables.append(
            table.with_columns(
                _nullable(accuracy, no_val).alias(C.VALIDATION_ACCURACY),
                _nullable(val_reward[k], no_val).alias(C.VALIDATION_REWARD),
            )
        )
    return tables


def _group_rates(g: pl.DataFrame, by_step: Runs) -> pl.DataFrame:
    """Per step of one config's group table `g`: its groups and the share of them with signal,
    inverted, time-only, and the mean step pushes (the step table's group columns)."""
    return pl.DataFrame(
        {
            S.STEP: by_step.first(g[S.STEP]),
            "groups": pl.Series(by_step.lengths, dtype=pl.UInt32),
            C.SIGNAL: by_step.mean(g[S.G_HAS_SIGNAL].to_numpy()),
            C.INVERSIONS: by_step.mean(g[S.G_INVERTED].to_numpy()),
            C.TIME_ONLY_GROUPS: by_step.mean(g[S.G_TIME_ONLY_SIGNAL].to_numpy()),
            **{
                C.PUSH_NAMES[name]: by_step.mean(g[f"{S.G_PUSH}{name}"].to_numpy())
                for name in STEP_PUSHES
            },
        }
    )


def summarise_steps(steps: pl.DataFrame, names: Sequence[str]) -> dict[str, float | None]:
    """Each per-step curve as a W&B reader sees it: mean over steps (/max: max, /min: min)."""
    present = [n for n in names if n in steps.columns]
    if not present:
        return {}
    return steps.select(step_rule(n) for n in present).row(0, named=True)
