"""What a replayed config is called and what it logs as a run in an experiment tracker
(TensorBoard and W&B alike): a run name valid everywhere, the trainer's metric tags per step, the
replay's own curves, and the headline numbers per config in the catalogue's human units."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import polars as pl

from replay_cli import catalogue as C
from replay_cli import schema as S
from replay_cli.advice.words import param_text
from replay_cli.report import layouts as L

NOT_TRAINER = {S.CONFIG_ID, S.STEP, "rows", "groups", *L.TRACKER_CURVES}


def run_name(label: str) -> str:
    """A label as a run and directory name every file system, shell and tracker takes: λ spelt
    out, '/' as 'over', brackets, commas, spaces and other specials as '_' (a shell glob would
    eat `clip[-3,3]`), no leading dot or dash."""
    name = label.replace("λ", "lambda").replace("/", "÷")
    name = re.sub(r"[^A-Za-z0-9._=+\-÷]+", "_", name).replace("÷", "over")
    return name.strip("._-") or "config"


def trainer_tag(metric: str) -> str:
    """The tag NeMo-RL's logger gives a step metric: `train/<name>`, validation metrics as they are."""
    return metric if metric.startswith("validation/") else f"train/{metric}"


def step_scalars(steps: pl.DataFrame, config_id: str) -> Iterator[tuple[int, dict[str, float]]]:
    """(step, tag -> value) of one config, in step order: its trainer metrics under the trainer's
    tags, and the replay's curves under `replay/` in human units; nulls left out."""
    mine = steps.filter(pl.col(S.CONFIG_ID) == config_id).sort(S.STEP)
    numeric = [c for c, t in mine.schema.items() if c not in NOT_TRAINER and t.is_numeric()]
    for row in mine.iter_rows(named=True):
        values = {trainer_tag(c): row[c] for c in numeric if row[c] is not None}
        for column in L.TRACKER_CURVES:
            value = C.metric(column).human(row.get(column))
            if value is not None:
                values[f"replay/{C.human_name(column)}"] = value
        yield int(row[S.STEP]), values


OVER_STEPS = {C.TOTAL_REWARD: "total_reward/mean_over_steps"}
"""Headline numbers that are a per-step trainer metric averaged over the replayed steps: named so,
apart from the trainer's own tag (`train/total_reward/mean`, one value per step, whose last step a
tracker's summary shows beside it)."""


def headline_name(column: str) -> str:
    """A headline number's name in a tracker: its human-unit name (`C.human_name`: a % is `_pct`,
    never `_frac`), or the name that says it is a mean over the steps (OVER_STEPS)."""
    return OVER_STEPS.get(column) or C.human_name(column)


def headline(row: dict[str, Any]) -> dict[str, float]:
    """A config's headline numbers (`layouts.TRACKER_HEADLINE` present and not null), in human
    units, under names that say so (`headline_name`)."""
    human = {column: C.metric(column).human(row.get(column)) for column in L.TRACKER_HEADLINE}
    return {headline_name(c): value for c, value in human.items() if value is not None}


def param_values(summary: pl.DataFrame, params: list[str]) -> list[dict[str, Any]]:
    """Per config, the value of each parameter, one type per parameter: numbers and booleans
    where every config has one, else the text the labels use (`none`, `1/60`)."""
    columns = {}
    for p in params:
        values = summary[p].to_list()
        typed = all(isinstance(v, bool | int | float) for v in values) or all(
            isinstance(v, str) for v in values
        )
        # λ as people write it (1/60), as on every other surface; the float is in the overrides.
        written = p == "lambda_time" or not typed
        columns[p] = [param_text(p, v) for v in values] if written else values
    return [{p: columns[p][i] for p in params} for i in range(summary.height)]


def run_names(summary: pl.DataFrame) -> list[str]:
    """`run_name` of every config's label; where two labels give one name, each such name
    ends in its config id."""
    names = [run_name(label) for label in summary["label"]]
    ids = summary[S.CONFIG_ID].to_list()
    return [f"{n}-{cid}" if names.count(n) > 1 else n for n, cid in zip(names, ids, strict=True)]
