"""Recompute advantages from a NeMo-RL run's logged rewards and diff them against the logged
advantages, for every plausible estimator setting, to say which settings reproduce the run."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import polars as pl

from replay_cli.config import AdvantageParams
from replay_cli.errors import ConfigError, InputFileError
from replay_cli.frames import collect
from replay_cli.io.train_data import JOIN_KEYS
from replay_cli.maths.advantages import AdvColumns, add_grpo

OUT = AdvColumns("_b", "_s", "_u", "recomputed", "_eq", "_n")
TOLERANCE = 1e-5


@dataclass
class Verification:
    """Per candidate setting: rows compared, rows differing, max |difference|; per step for the best."""

    candidates: pl.DataFrame
    best: dict
    steps: pl.DataFrame
    differing: pl.DataFrame
    grouping: str


def group_rows(rows: pl.DataFrame, group_size: int | None) -> tuple[pl.DataFrame, str]:
    """Rebuild groups: a join key when present, else blocks of --group-size, else prompt tokens."""
    for key in JOIN_KEYS:
        if key in rows.columns and rows[key].null_count() == 0:
            return rows.with_columns(pl.col(key).alias("group")), f"by {key}"
    if group_size is None:
        group, how = pl.col("prompt_key"), "identical prompt tokens (as the trainer)"
    elif group_size < 1:
        raise ConfigError(f"--group-size must be at least 1, got {group_size}")
    else:
        group, how = pl.col("row") // group_size, f"blocks of {group_size} rows"
    return rows.with_columns(group.alias("group")), how


def candidate_params(
    rows: pl.DataFrame, clip: tuple[float | None, float | None] | None
) -> list[AdvantageParams]:
    """LOO or mean x normalise x guard x masked rows voting, with no clip and the clip in force.

    The clip in force is the one given, else the logged extremes when several rows sit exactly on them.
    """
    clips: list[tuple[float | None, float | None]] = [(None, None)]
    if clip is not None:
        clips = [clip]
    else:
        adv = rows["logged_advantage"]
        lo, hi = adv.min(), adv.max()
        if (adv == lo).sum() > 1 or (adv == hi).sum() > 1:
            clips.append(
                (lo if (adv == lo).sum() > 1 else None, hi if (adv == hi).sum() > 1 else None)
            )
    grid = itertools.product(("loo", "mean"), (True, False), ("trivial", "legacy"), (False, True))
    names = ("baseline", "normalize", "std_guard", "exclude_masked")
    return [
        AdvantageParams(**dict(zip(names, values, strict=True)), clip_low=low, clip_high=high)
        for values in grid
        for low, high in clips
    ]


DESCRIBED = {"baseline", "normalize", "std_guard", "exclude_masked", "clip_low", "clip_high"}
"""The settings a candidate row names (in AdvantageParams' field order)."""


def recompute(rows: pl.DataFrame, p: AdvantageParams) -> pl.DataFrame:
    """The rows with `recomputed`, the advantage NeMo-RL computes from the logged rewards."""
    lf = rows.lazy().with_columns(
        pl.struct("step", "group").rank("dense").alias("_gid"),
        (pl.col("sample_mask") if p.exclude_masked else pl.lit(True)).alias("_valid"),
    )
    return collect(
        add_grpo(lf, "reward", "_valid", "_gid", p, OUT, bound="bound").drop(
            "_gid", "_valid", "_b", "_s", "_u", "_eq", "_n"
        )
    )


def verify(
    rows: pl.DataFrame,
    *,
    group_size: int | None = None,
    clip: tuple[float | None, float | None] | None = None,
    tolerance: float = TOLERANCE,
) -> Verification:
    """Compare every candidate setting's recomputed advantages with the logged ones."""
    rows, grouping = group_rows(rows, group_size)
    compared = pl.col("uniform")
    results, frames = [], {}
    diff = (pl.col("recomputed") - pl.col("logged_advantage")).abs()
    past = diff > tolerance * pl.max_horizontal(pl.lit(1.0), pl.col("logged_advantage").abs())
    for i, p in enumerate(candidate_params(rows, clip)):
        got = recompute(rows, p).with_columns(
            diff.alias("abs_diff"),
            # A float32 log reproduces within the row's rounding bound (maths/rounding.py):
            # another platform's summation order may land anywhere inside it.
            (past & (diff > pl.col("bound"))).alias("differs"),
            (past & (diff <= pl.col("bound"))).alias("needed_bound"),
        )
        sub = got.filter(compared)
        results.append(
            {
                "candidate": i,
                **p.model_dump(include=DESCRIBED),
                "rows": sub.height,
                "differing_rows": int(sub["differs"].sum()),
                "rows_within_bound": int(sub["needed_bound"].sum()),
                "max_abs_diff": sub["abs_diff"].max(),
            }
        )
        frames[i] = got
    candidates = pl.DataFrame(results).sort("differing_rows", "max_abs_diff", "candidate")
    best = candidates.row(0, named=True)
    got = frames[best["candidate"]].filter(compared)
    steps = (
        got.group_by("step")
        .agg(
            pl.len().alias("rows"),
            pl.col("differs").sum().alias("differing_rows"),
            pl.col("needed_bound").sum().alias("rows_within_bound"),
            pl.col("abs_diff").max().alias("max_abs_diff"),
        )
        .sort("step")
    )
    differing = got.filter(pl.col("differs")).select(
        "step", "row", "group", "reward", "logged_advantage", "recomputed", "abs_diff", "bound"
    )
    return Verification(candidates, best, steps, differing, grouping)


def _steps(steps: set) -> str:
    shown = sorted(steps)
    return ", ".join(map(str, shown[:8])) + (f" … ({len(shown)} in all)" if len(shown) > 8 else "")


def compare_rewards(logged: pl.DataFrame, replayed: pl.DataFrame) -> pl.DataFrame:
    """Per step, the logged rewards against a replay's shaped rewards, both sorted (row order and
    ids differ between the logs): rows on each side and the max |difference| where counts match."""
    left = logged.select("step", pl.col("reward").alias("logged")).sort("step", "logged")
    right = replayed.filter(pl.col("split") != "validation").select(
        "step", pl.col("reward_shaped").alias("replayed")
    )
    right = right.sort("step", "replayed")
    logged_steps, replayed_steps = set(left["step"]), set(right["step"])
    if not logged_steps & replayed_steps:
        raise InputFileError(
            "The logged and the replayed rewards share no step: the dumps have steps "
            f"{_steps(logged_steps)}, the rollouts {_steps(replayed_steps)}.\n\nPass the rollouts "
            "of the same steps (or check the step column of the import)."
        )
    out = []
    for (step,), part in left.group_by("step", maintain_order=True):
        mine = right.filter(pl.col("step") == step)["replayed"]
        diff = None
        if mine.len() == part.height:
            # The trainer's rewards are float32 tensors: compare at that precision.
            f32 = pl.Float32
            diff = float(
                (mine.cast(f32).cast(pl.Float64) - part["logged"].cast(f32).cast(pl.Float64))
                .abs()
                .max()
            )
        out.append((step, part.height, mine.len(), diff))
    names = ("step", "logged_rows", "replayed_rows", "max_abs_diff")
    types = (pl.Int64, pl.Int64, pl.Int64, pl.Float64)
    return pl.DataFrame(out, schema=dict(zip(names, types, strict=True)), orient="row")


REWARD_TOLERANCE = 1e-5


def rewards_match(rewards: pl.DataFrame) -> tuple[bool, float | None]:
    """(every step's logged rewards equal the replayed ones within 1e-5, the largest difference)."""
    worst = rewards["max_abs_diff"].max()
    ok = (
        rewards["max_abs_diff"].null_count() == 0
        and worst is not None
        and worst <= REWARD_TOLERANCE
    )
    return ok, worst  # type: ignore[return-value]
