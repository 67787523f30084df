"""How a sweep's configs are laid out on charts: which parameters split the panels (small
multiples), which get one colour each, and which line every config belongs to.

Up to MAX_OVERLAID shaped configs share one panel, one line per setting of everything but lambda.
Beyond that the categorical parameters that vary (apply_to, semantics, estimator, ...) facet the
chart, up to MAX_PANELS panels, and the remaining parameters colour the lines, so that no panel
carries more than a handful of lines and every legend fits."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from itertools import product

import polars as pl

from replay_cli.advice.findings import PARAMS
from replay_cli.advice.words import param_text
from replay_cli.parameters import registry

MAX_OVERLAID = 8
MAX_PANELS = 12
NOT_SERIES = ("enabled", "lambda_time")
TITLE_WIDTH = 34
"""A panel title line is cut to this many characters (one line per facet parameter)."""


@dataclass(frozen=True)
class Layout:
    """Panels (a title and their configs), and a series name per config_id for the colours."""

    facets: tuple[str, ...]
    panels: tuple[tuple[str, pl.DataFrame], ...]
    series: dict[str, str]

    @property
    def names(self) -> list[str]:
        """Series names in first-seen order (the legend's order and colour order)."""
        return list(dict.fromkeys(self.series.values()))


def varying(summary: pl.DataFrame, exclude: tuple[str, ...] = NOT_SERIES) -> list[str]:
    """Parameters that take more than one value over these configs."""
    return [
        c for c in PARAMS if c in summary.columns and c not in exclude and summary[c].n_unique() > 1
    ]


def is_categorical(summary: pl.DataFrame, column: str) -> bool:
    return summary.schema[column] in (pl.String, pl.Boolean)


def _pick_facets(summary: pl.DataFrame, params: list[str]) -> tuple[str, ...]:
    """Categorical parameters first, fewest values first, while the panels stay few."""
    ranked = sorted(
        params, key=lambda c: (not is_categorical(summary, c), summary[c].n_unique(), c)
    )
    chosen: list[str] = []
    panels = 1
    for c in ranked:
        n = summary[c].n_unique()
        if len(chosen) == 2 or panels * n > MAX_PANELS:
            break
        if not is_categorical(summary, c) and chosen:
            break  # a numeric parameter facets only when no categorical one does
        chosen.append(c)
        panels *= n
    return tuple(chosen)


def describe(row: dict, params: tuple[str, ...] | list[str]) -> str:
    """A config's values of `params` as short as the config labels write them ('apply_to=correct
    floor=0.05 bonus=0.1/56 clip[-3,3]'): unset parameters (none, 0, off) are left out, a clip and
    a call bonus are one fragment each; 'defaults' when nothing is left."""
    defaults = {name: p.default for name, p in registry().items()}
    parts = []
    shown = set(params)
    if shown & {"clip_low", "clip_high"}:
        lo, hi = row.get("clip_low"), row.get("clip_high")
        parts.append(
            "no clip"
            if lo is None and hi is None
            else f"clip[{'-inf' if lo is None else f'{lo:g}'},{'inf' if hi is None else f'{hi:g}'}]"
        )
    if shown & {"lambda_call_bonus", "call_bonus_ref"} and row.get("lambda_call_bonus"):
        parts.append(
            f"bonus={row['lambda_call_bonus']:g}/{param_text('call_bonus_ref', row['call_bonus_ref'])}"
        )
    for p in params:
        if p in ("clip_low", "clip_high", "lambda_call_bonus", "call_bonus_ref"):
            continue
        unset = row[p] in (None, "", False, 0) and row[p] == defaults.get(p, row[p])
        if not unset and not (p == "internal_items" and not row[p]):
            parts.append(f"{p}={param_text(p, row[p])}")
    return " ".join(parts) or "defaults"


def layout(summary: pl.DataFrame) -> Layout:
    """The layout of the shaped configs of a summary (shaping-off configs are drawn as baselines)."""
    shaped = summary.filter(pl.col("enabled")) if "enabled" in summary.columns else summary
    params = varying(shaped)
    facets = _pick_facets(shaped, params) if shaped.height > MAX_OVERLAID and params else ()
    colours = tuple(p for p in params if p not in facets)
    series = {row["config_id"]: describe(row, colours) for row in shaped.iter_rows(named=True)}
    panels: list[tuple[str, pl.DataFrame]] = []
    values = [
        shaped[c].unique(maintain_order=True).sort(nulls_last=False).to_list() for c in facets
    ]
    for combo in product(*values):
        cond = pl.lit(True)
        for c, v in zip(facets, combo, strict=True):
            cond &= pl.col(c).eq_missing(v)
        part = shaped.filter(cond)
        if part.height:
            title = "\n".join(
                textwrap.shorten(f"{c}={param_text(c, v)}", TITLE_WIDTH, placeholder="…")
                for c, v in zip(facets, combo, strict=True)
            )
            panels.append((title, part))
    if not facets:
        panels = [("", shaped)]
    return Layout(facets, tuple(panels), series)
