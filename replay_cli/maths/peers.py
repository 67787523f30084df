"""Advantage estimators of other trainers, so one log can be replayed as verl, TRL or OpenRLHF
would train on it (reference/peers.md). Each cites the released package it reproduces (verl
0.9.1, TRL 1.16.0, OpenRLHF 0.11.2): file, function and, as a help, the line it starts on. Each reproduces its source's edge cases: groups of one,
all-equal rewards and NaN rewards. All statistics use every row of a group (no trainer here
drops masked rows from them); `batch` statistics use every training row of the step.

Output columns follow `AdvColumns`: `baseline` is the value subtracted, `std` the divisor's std
(null where the estimator does not divide), `peers_equal` whether the group's rewards are all equal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import polars as pl

from replay_cli import schema as S
from replay_cli.config import AdvantageParams
from replay_cli.errors import EstimatorError
from replay_cli.frames import collect
from replay_cli.maths.advantages import AdvColumns, working_dtype


def whitening_weights(columns: list[str]) -> str:
    """What reinforce-pp-baseline weighs each row by in the step whitening, for this input."""
    return "response_tokens" if S.TOKENS in columns else "one per rollout"


def estimator_notes(columns: list[str], estimators: set[str]) -> list[str]:
    """Warnings about how faithfully the chosen estimators can be replayed on this input."""
    if "reinforce-pp-baseline" in estimators and S.TOKENS not in columns:
        return [
            (
                "reinforce-pp-baseline: the input has no response_tokens column, so every "
                "rollout weighs one token in the step whitening; verl whitens over tokens "
                "(Bessel factor T/(T-1) over tokens), so the advantages match verl's only if "
                "every response has the same length. Add a response_tokens column to replay "
                "verl exactly."
            )
        ]
    return []


def _stats(
    lf: pl.LazyFrame, reward: str, over: str, p: AdvantageParams, t: str, nan_aware: bool = False
) -> tuple[pl.LazyFrame, pl.DataType]:
    """Group count, mean, unbiased std, min and max of the reward over `over` (temporary columns),
    and the working dtype: every estimator starts from both."""
    dt = working_dtype(p)
    r = pl.col(reward).cast(dt)
    if nan_aware:
        r = r.fill_nan(None)
    return lf.with_columns(
        r.count().over(over).alias(t + "n"),
        pl.len().over(over).alias(t + "size"),
        r.mean().over(over).alias(t + "mean"),
        r.std(ddof=1).over(over).alias(t + "std"),
        (r.min().over(over) == r.max().over(over)).alias(t + "equal"),
    ), dt


def _finish(
    lf: pl.LazyFrame,
    adv: pl.Expr,
    baseline: pl.Expr,
    std: pl.Expr,
    normalized: pl.Expr,
    t: str,
    p: AdvantageParams,
    out: AdvColumns,
) -> pl.LazyFrame:
    dt = working_dtype(p)
    lf = lf.with_columns(
        baseline.cast(dt).alias(out.baseline),
        std.cast(dt).alias(out.std),
        adv.cast(dt).alias(out.unclipped),
        normalized.alias(out.normalized),
        pl.col(t + "equal").fill_null(True).alias(out.peers_equal),
    )
    clipped = pl.col(out.unclipped)
    if p.clips:
        clipped = clipped.clip(
            lower_bound=None if p.clip_low is None else pl.lit(p.clip_low, dt),
            upper_bound=None if p.clip_high is None else pl.lit(p.clip_high, dt),
        )
    lf = lf.with_columns(clipped.alias(out.advantage))
    temps = [c for c in lf.collect_schema().names() if c.startswith(t)]
    return lf.drop(temps).with_columns(
        pl.col(c).cast(pl.Float64) for c in (out.baseline, out.std, out.unclipped, out.advantage)
    )


@dataclass(frozen=True)
class Estimator:
    """A peer estimator and what it needs: `batch` statistics over the step, `pairs` (OpenRLHF
    reshapes to equal groups of two or more rows), and `baseline`, the NeMo-RL baseline kind its
    subtraction corresponds to (for the masked-row diagnostic)."""

    compute: Callable[..., pl.LazyFrame]
    baseline: Literal["loo", "mean"]
    batch: bool = False
    pairs: bool = False


ESTIMATORS: dict[str, Estimator] = {}
"""Every peer estimator by its `--estimator` name, registered beside its function (`grpo`,
NeMo-RL's own, is advantages.py); the config's `estimator` choices are `grpo` and these (tested)."""


def register(
    name: str, baseline: Literal["loo", "mean"], *, batch: bool = False, pairs: bool = False
) -> Callable[[Callable[..., pl.LazyFrame]], Callable[..., pl.LazyFrame]]:
    """Register the decorated function as the estimator `name` (see `Estimator`)."""

    def add(compute: Callable[..., pl.LazyFrame]) -> Callable[..., pl.LazyFrame]:
        ESTIMATORS[name] = Estimator(compute, baseline, batch=batch, pairs=pairs)
        return compute

    return add


@register("verl-grpo", "mean")
def verl_grpo(
    lf: pl.LazyFrame, reward: str, gid: str, p: AdvantageParams, out: AdvColumns
) -> pl.LazyFrame:
    """verl 0.9.1 `verl/trainer/ppo/core_algos.py` `compute_grpo_outcome_advantage` (L268):
    `(r - mean) / (std_unbiased + 1e-6)`; `normalize=False` is
    `norm_adv_by_std_in_grpo=False` (Dr. GRPO). A group of one gets mean 0 and std 1, so the raw
    reward leaks through as `r / (1 + 1e-6)`. NaN rewards make the whole group NaN."""
    t = "_vg_"
    lf, dt = _stats(lf, reward, gid, p, t)
    one = pl.col(t + "size") == 1
    mean = pl.when(one).then(pl.lit(0.0, dt)).otherwise(pl.col(t + "mean"))
    std = pl.when(one).then(pl.lit(1.0, dt)).otherwise(pl.col(t + "std"))
    diff = pl.col(reward).cast(dt) - mean
    adv = diff / (std + pl.lit(1e-6, dt)) if p.normalize else diff
    return _finish(
        lf, adv, mean, std if p.normalize else pl.lit(None), pl.lit(p.normalize), t, p, out
    )


@register("verl-rloo", "loo")
def verl_rloo(
    lf: pl.LazyFrame, reward: str, gid: str, p: AdvantageParams, out: AdvColumns
) -> pl.LazyFrame:
    """verl 0.9.1 `verl/trainer/ppo/core_algos.py` `compute_rloo_outcome_advantage` (L588):
    `n/(n-1) * (r - mean)`, i.e. `r - mean of the others`. A group of one keeps `A = r`."""
    t = "_vr_"
    lf, dt = _stats(lf, reward, gid, p, t)
    n = pl.col(t + "size").cast(dt)
    r = pl.col(reward).cast(dt)
    one = pl.col(t + "size") == 1
    adv = pl.when(one).then(r).otherwise(n / (n - 1) * (r - pl.col(t + "mean")))
    baseline = pl.when(one).then(pl.lit(0.0, dt)).otherwise(r - adv)
    return _finish(lf, adv, baseline, pl.lit(None), pl.lit(False), t, p, out)


@register("trl-grpo", "mean", batch=True)
def trl_grpo(
    lf: pl.LazyFrame, reward: str, gid: str, batch: str, p: AdvantageParams, out: AdvColumns
) -> pl.LazyFrame:
    """TRL 1.16.0 `trl/trainer/grpo_trainer.py` `GRPOTrainer._generate_and_score_completions`
    (the `sum_then_normalize` branch) with `trl/trainer/utils.py` `nanstd`:
    `A = r - nanmean_G`, divided by `nanstd + 1e-4` with `scale_rewards` group (group std), batch
    (the step's std; the group mean is still subtracted) or none. NaN rewards are left out of the
    statistics and get `A = 0` (nan_to_num); a group of one has nanstd NaN, so `A = 0`."""
    t = "_tg_"
    lf, dt = _stats(lf, reward, gid, p, t, nan_aware=True)
    r = pl.col(reward).cast(dt).fill_nan(None)
    if p.scale_rewards == "batch":
        lf = lf.with_columns(r.std(ddof=1).over(batch).alias(t + "scale"))
    else:
        lf = lf.with_columns(pl.col(t + "std").alias(t + "scale"))
    diff = r - pl.col(t + "mean")
    adv = diff if p.scale_rewards == "none" else diff / (pl.col(t + "scale") + pl.lit(1e-4, dt))
    adv = adv.fill_null(0.0).fill_nan(0.0)
    std = pl.lit(None) if p.scale_rewards == "none" else pl.col(t + "scale")
    return _finish(lf, adv, pl.col(t + "mean"), std, pl.lit(p.scale_rewards != "none"), t, p, out)


def _require_pairs(lf: pl.LazyFrame, gid: str, name: str, active: pl.Expr) -> None:
    """OpenRLHF reshapes rewards to (-1, n_samples_per_prompt) and asserts n > 1 (batch rows)."""
    sizes = collect(
        lf.filter(active)
        .group_by(gid)
        .len()
        .select(pl.col("len").min().alias("lo"), pl.col("len").max().alias("hi"))
    )
    lo, hi = sizes.row(0)
    if lo is not None and lo < 2:
        raise EstimatorError(
            f"{name} needs at least 2 rollouts per prompt group (OpenRLHF asserts "
            "n_samples_per_prompt > 1); the input has a group of 1.\n\nUse another estimator or drop singleton groups."
        )
    if lo != hi:
        raise EstimatorError(
            f"{name} needs groups of one size (OpenRLHF reshapes rewards to (-1, n_samples_per_prompt)); "
            f"the input has groups of {lo} to {hi} rows."
        )


@register("openrlhf-group-norm", "mean", pairs=True)
def openrlhf_group_norm(
    lf: pl.LazyFrame, reward: str, gid: str, p: AdvantageParams, out: AdvColumns
) -> pl.LazyFrame:
    """OpenRLHF 0.11.2 `openrlhf/trainer/ppo_utils/experience_maker.py`
    `compute_advantages_and_returns`, estimator `group_norm` (L273):
    `(r - mean) / (std_unbiased + 1e-9)`; NaN propagates."""
    t = "_og_"
    lf, dt = _stats(lf, reward, gid, p, t)
    adv = (pl.col(reward).cast(dt) - pl.col(t + "mean")) / (pl.col(t + "std") + pl.lit(1e-9, dt))
    return _finish(lf, adv, pl.col(t + "mean"), pl.col(t + "std"), pl.lit(True), t, p, out)


@register("openrlhf-rloo", "loo", pairs=True)
def openrlhf_rloo(
    lf: pl.LazyFrame, reward: str, gid: str, p: AdvantageParams, out: AdvColumns
) -> pl.LazyFrame:
    """OpenRLHF 0.11.2 `openrlhf/trainer/ppo_utils/experience_maker.py`
    `compute_advantages_and_returns`, estimator `rloo` (L268): `r - (sum_G - r) / (n - 1)`."""
    t = "_or_"
    lf, dt = _stats(lf, reward, gid, p, t)
    r = pl.col(reward).cast(dt)
    n = pl.col(t + "size").cast(dt)
    baseline = (pl.col(t + "mean") * n - r) / (n - 1)
    return _finish(lf, r - baseline, baseline, pl.lit(None), pl.lit(False), t, p, out)


@register("dr-grpo", "mean", pairs=True)
def dr_grpo(
    lf: pl.LazyFrame, reward: str, gid: str, p: AdvantageParams, out: AdvColumns
) -> pl.LazyFrame:
    """OpenRLHF 0.11.2 `openrlhf/trainer/ppo_utils/experience_maker.py`
    `compute_advantages_and_returns`, estimator `dr_grpo` (L271): `r - mean_G`, no std, no
    whitening (verl's Dr. GRPO is `verl-grpo` with `--no-normalize`)."""
    t = "_dg_"
    lf, dt = _stats(lf, reward, gid, p, t)
    adv = pl.col(reward).cast(dt) - pl.col(t + "mean")
    return _finish(lf, adv, pl.col(t + "mean"), pl.lit(None), pl.lit(False), t, p, out)


@register("reinforce-pp-baseline", "mean", batch=True)
def reinforce_pp_baseline(
    lf: pl.LazyFrame, reward: str, gid: str, batch: str, p: AdvantageParams, out: AdvColumns
) -> pl.LazyFrame:
    """verl 0.9.1 `verl/trainer/ppo/core_algos.py`
    `compute_reinforce_plus_plus_baseline_outcome_advantage` (L536), then
    `verl/utils/torch_functional.py` `masked_whiten` (L329, over `masked_var`): `x = r - mean_G`
    (a group of one: mean 0), then over the step's training rows `(x - mu) * rsqrt(var_unbiased + 1e-8)`.
    verl whitens over valid tokens: with a `response_tokens` column each row weighs its token
    count, without it each row weighs 1 (per-sequence whitening)."""
    t = "_rp_"
    lf, dt = _stats(lf, reward, gid, p, t)
    has_tokens = S.TOKENS in lf.collect_schema().names()
    w = pl.col(S.TOKENS).cast(dt) if has_tokens else pl.lit(1.0, dt)
    one = pl.col(t + "size") == 1
    mean = pl.when(one).then(pl.lit(0.0, dt)).otherwise(pl.col(t + "mean"))
    lf = lf.with_columns(
        (pl.col(reward).cast(dt) - mean).alias(t + "x"), w.alias(t + "w"), mean.alias(t + "base")
    )
    x, wc = pl.col(t + "x"), pl.col(t + "w")
    lf = lf.with_columns(
        ((x * wc).sum().over(batch) / wc.sum().over(batch)).alias(t + "mu"),
        wc.sum().over(batch).alias(t + "wsum"),
    )
    mu, wsum = pl.col(t + "mu"), pl.col(t + "wsum")
    lf = lf.with_columns(
        ((wc * (x - mu) ** 2).sum().over(batch) / wsum * (wsum / (wsum - 1))).alias(t + "var")
    )
    var = pl.col(t + "var")
    adv = (x - mu) / (var + pl.lit(1e-8, dt)).sqrt()
    return _finish(lf, adv, pl.col(t + "base"), var.sqrt(), pl.lit(True), t, p, out)


def add_peer_advantages(
    lf: pl.LazyFrame,
    reward: str,
    gid: str,
    batch: str,
    p: AdvantageParams,
    out: AdvColumns,
    active: pl.Expr | None = None,
) -> pl.LazyFrame:
    """The estimator named by `p.estimator`; `active` marks the training batch's rows (default:
    every training row), which OpenRLHF's group-size checks look at."""
    active = ~pl.col(S.IS_VAL) if active is None else active
    est = ESTIMATORS[p.estimator]
    if est.pairs:
        _require_pairs(lf, gid, p.estimator, active)
    if est.batch:
        return est.compute(lf, reward, gid, batch, p, out)
    return est.compute(lf, reward, gid, p, out)
