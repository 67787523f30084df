"""Attribute the nemo-rl vs internal difference to the numbered items of spec §3.3, one at a time."""

from __future__ import annotations

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.config import INTERNAL_ITEMS, ITEM_DESCRIPTIONS, ReplayConfig
from replay_cli.engine.run import run_replay
from replay_cli.rollouts.validation import Rollouts

ATTRIBUTED = (C.TOTAL_REWARD, C.SIGNAL, C.ADV_RESOLVED, C.INVERSIONS, C.VALIDATION_REWARD)


def attribution_configs(base: ReplayConfig) -> list[tuple[str, str, ReplayConfig]]:
    """(step, description, config): nemo-rl, each item alone, then the full internal semantics."""

    def with_shaping(**changes: object) -> ReplayConfig:
        shaping = base.shaping.model_copy(update=changes)
        return ReplayConfig.model_validate({**base.model_dump(), "shaping": shaping.model_dump()})

    items = [
        (f"item {i}", ITEM_DESCRIPTIONS[i], with_shaping(semantics="nemo-rl", internal_items=(i,)))
        for i in INTERNAL_ITEMS
    ]
    internal = with_shaping(semantics="internal", internal_items=None)
    return [
        ("nemo-rl", "the PR's semantics", with_shaping(semantics="nemo-rl", internal_items=None)),
        *items,
        ("internal", "all items together", internal),
    ]


def attribute(rollouts: Rollouts, base: ReplayConfig) -> pl.DataFrame:
    """One row per step with the attributed metrics and their change from nemo-rl.

    The last row's change is the full difference; the sum of the single-item changes differs from it
    only by interactions between items, reported as the `interaction` row."""
    steps = attribution_configs(base)
    summary = run_replay(rollouts, [cfg for _, _, cfg in steps]).summary
    by_id = {row[S.CONFIG_ID]: row for row in summary.iter_rows(named=True)}
    rows = [
        {"step": name, "description": words, S.CONFIG_ID: cfg.config_id}
        | {m: by_id[cfg.config_id].get(m) for m in ATTRIBUTED}
        for name, words, cfg in steps
    ]
    frame = pl.DataFrame(rows, schema_overrides=dict.fromkeys(ATTRIBUTED, pl.Float64))
    deltas = frame.with_columns(
        (pl.col(m) - pl.col(m).first()).alias(f"delta {m}") for m in ATTRIBUTED
    )
    items = deltas.filter(pl.col("step").str.starts_with("item"))
    full = deltas.filter(pl.col("step") == "internal")
    interaction = {
        "step": "interaction",
        "description": "full change minus the sum of single items",
        S.CONFIG_ID: None,
        **dict.fromkeys(ATTRIBUTED),
        **{
            f"delta {m}": _minus(full[f"delta {m}"][0], items[f"delta {m}"].sum())
            for m in ATTRIBUTED
        },
    }
    return pl.concat([deltas, pl.DataFrame([interaction], schema=deltas.schema)])


def _minus(total: float | None, parts: float | None) -> float | None:
    return None if total is None or parts is None else total - parts
